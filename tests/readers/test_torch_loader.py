"""load_torch_dataset through real torch DataLoaders (worker processes, torchdata's
StatefulDataLoader, a 2-process gloo group): the same steps in the same order as the NumPy
loader, exact resume with any number of workers, equal and disjoint shares per rank."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

import tfrecordkit as tk  # noqa: E402
from tests.datasets import LOADER_RECORDS as RECORDS  # noqa: E402
from tfrecordkit import ShardOptions, StateError  # noqa: E402
from tfrecordkit.convert import write_dataset  # noqa: E402
from tfrecordkit.readers.numpy_data import load_numpy_dataset  # noqa: E402
from tfrecordkit.readers.torch_data import load_torch_dataset  # noqa: E402
from tfrecordkit.schema import ClassLabel, Scalar, Schema  # noqa: E402

N = RECORDS
B = 16
#: Worker processes start as spawned ones do (the dataset reaches each pickled, nothing inherited)
#: but from a server that imported torch and tfrecordkit once: spawned workers import both
#: again each (this file: 274 s of test time with spawn, ~55 s so; pytest --durations=0).
WORKERS = multiprocessing.get_context("forkserver")
WORKERS.set_forkserver_preload(["torch", "tfrecordkit", "tfrecordkit.readers.torch_data"])



def _ids(batches, steps=None):
    out = []
    for k, batch in enumerate(batches):
        out.append(batch["__id"].tolist())
        if steps is not None and k + 1 == steps:
            break
    return out


def _loader(ds, workers, cls=DataLoader, context=WORKERS):
    kwargs = {"multiprocessing_context": context} if workers else {}
    return cls(ds, batch_size=None, num_workers=workers, **kwargs)


@pytest.mark.parametrize("workers", [0, 1, pytest.param(3, marks=pytest.mark.slow)])
def test_dataloader_yields_the_numpy_loaders_steps_in_order(dataset, workers):
    expected = _ids(load_numpy_dataset(dataset, batch_size=B, seed=5))
    ds = load_torch_dataset(dataset, batch_size=B, seed=5)
    assert len(_loader(ds, workers)) == len(ds) == -(-N // B)  # every record
    assert _ids(_loader(ds, workers)) == expected


def test_batches_are_tensors_with_the_numpy_loaders_values(dataset):
    numpy_batches = list(load_numpy_dataset(dataset, batch_size=B,
                                            sampling=tk.Shuffled(exact=True)))
    torch_batches = list(_loader(load_torch_dataset(dataset, batch_size=B,
                                                    sampling=tk.Shuffled(exact=True)), 0))
    assert len(numpy_batches) == len(torch_batches)
    for a, b in zip(numpy_batches, torch_batches, strict=True):
        assert b["v"].dtype == torch.int64 and b["x"].dtype == torch.float32
        assert np.array_equal(a["v"], b["v"].numpy()) and np.array_equal(a["x"], b["x"].numpy())
        assert np.array_equal(a["label"], b["label"].numpy())
        assert np.array_equal(a["seq"]["values"], b["seq"]["values"].numpy())
        assert np.array_equal(a["seq"]["lengths"], b["seq"]["lengths"].numpy())
        assert a["text"] == b["text"] and isinstance(b["text"][0], str)


@pytest.mark.slow  # starts DataLoader worker processes
def test_epochs_differ_and_set_epoch_repeats_one(dataset):
    ds = load_torch_dataset(dataset, batch_size=B, seed=1)
    epoch0, epoch1 = _ids(_loader(ds, 0)), _ids(_loader(ds, 0))  # in-process: advances itself
    assert epoch0 != epoch1
    ds.set_epoch(1)
    assert _ids(_loader(ds, 2)) == epoch1  # worker processes: the epoch comes from set_epoch


@pytest.mark.slow
@pytest.mark.parametrize(("before", "after"), [(0, 3), (1, 0), (3, 1), (3, 2)])
@pytest.mark.parametrize("stop_at", [0, 5, 12])  # start, middle, last step
def test_resume_with_another_number_of_workers_is_exact(dataset, before, after, stop_at):
    from torchdata.stateful_dataloader import StatefulDataLoader

    full = _ids(load_numpy_dataset(dataset, batch_size=B, seed=2))
    first = load_torch_dataset(dataset, batch_size=B, seed=2)
    loader = _loader(first, before, StatefulDataLoader)
    seen = _ids(loader, stop_at) if stop_at else []
    state = json.loads(json.dumps(loader.state_dict()))  # survives a JSON round trip
    resumed = load_torch_dataset(dataset, batch_size=B, seed=2)
    resumed.load_state_dict(state)
    rest = _ids(_loader(resumed, after))
    assert seen + rest == full


@pytest.mark.parametrize("workers", [0, pytest.param(2, marks=pytest.mark.slow)])
def test_stateful_dataloader_resumes_itself_with_the_same_workers(dataset, workers):
    from torchdata.stateful_dataloader import StatefulDataLoader

    full = _ids(load_numpy_dataset(dataset, batch_size=B, seed=7))
    loader = _loader(load_torch_dataset(dataset, batch_size=B, seed=7), workers,
                     StatefulDataLoader)
    seen = _ids(loader, 4)
    state = loader.state_dict()
    again = _loader(load_torch_dataset(dataset, batch_size=B, seed=7), workers,
                    StatefulDataLoader)
    again.load_state_dict(state)
    assert seen + _ids(again) == full


def test_in_process_state_is_the_numpy_loaders(dataset):
    ds = load_torch_dataset(dataset, batch_size=B, seed=3)
    it = iter(_loader(ds, 0))
    for _ in range(4):
        next(it)
    numpy_loader = load_numpy_dataset(dataset, batch_size=B, seed=3)
    assert ds.state_dict() == {**numpy_loader.state_dict(), "step": 4}


def test_a_state_from_another_configuration_is_refused(dataset):
    state = load_torch_dataset(dataset, batch_size=B, seed=3).state_dict()
    with pytest.raises(ValueError, match="batch_size"):
        load_torch_dataset(dataset, batch_size=8, seed=3).load_state_dict(state)
    with pytest.raises(ValueError, match="seed"):
        load_torch_dataset(dataset, batch_size=B, seed=4).load_state_dict(state)


@pytest.mark.slow  # worker processes for every rank
@pytest.mark.parametrize("world", [2, 4])
def test_explicit_ranks_split_steps_and_workers_keep_order(dataset, world):
    single = _ids(load_numpy_dataset(dataset, batch_size=B, sampling=tk.Shuffled(drop_last=True),
                                     seed=6))
    ranks = [_ids(_loader(load_torch_dataset(dataset, batch_size=B,
                                             sampling=tk.Shuffled(drop_last=True), seed=6,
                                             partition=tk.Partition(r, world)), 2))
             for r in range(world)]
    assert all(len(r) == len(single) for r in ranks)
    for step, together in enumerate(zip(*ranks, strict=True)):
        assert [i for part in together for i in part] == single[step]


DDP_SCRIPT = textwrap.dedent("""
    import json, sys
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    from tfrecordkit.readers.torch_data import load_torch_dataset

    def main():
        dist.init_process_group("gloo", init_method=sys.argv[1], rank=int(sys.argv[2]),
                                world_size=2)
        ds = load_torch_dataset(sys.argv[3], batch_size=16, seed=9)
        batches = list(DataLoader(ds, batch_size=None, num_workers=1,
                                  multiprocessing_context="spawn"))
        ids = [b["__id"].tolist() for b in batches]
        valid = [b["__valid"].tolist() for b in batches]
        counts = [None, None]
        dist.all_gather_object(counts, len(batches))  # hangs if a rank had fewer batches
        print(json.dumps({"rank": dist.get_rank(), "ids": ids, "valid": valid,
                          "counts": counts}))
        dist.destroy_process_group()

    if __name__ == "__main__":  # DataLoader workers re-import this file
        main()
""")


@pytest.mark.integration
@pytest.mark.slow
def test_two_process_gloo_group_gets_equal_disjoint_shares(dataset, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = tmp_path / "ddp.py"
    script.write_text(DDP_SCRIPT)
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo"}
    procs = [subprocess.Popen([sys.executable, str(script), f"tcp://127.0.0.1:{port}", str(r),
                               str(dataset)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for r in range(2)]
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err[-2000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            p.kill()
            p.communicate()
    results.sort(key=lambda r: r["rank"])
    steps = -(-N // 16)
    assert results[0]["counts"] == results[1]["counts"] == [steps, steps]
    real = [i for r in results for ids, valid in zip(r["ids"], r["valid"], strict=True)
            for i, v in zip(ids, valid, strict=True) if v]
    assert sorted(real) == list(range(N))  # every record once, none twice
    single = _ids(load_numpy_dataset(dataset, batch_size=16, sampling=tk.Shuffled(),
                                     seed=9))
    for step in range(steps):  # one rank's last batch is smaller; ranks wrap and mark it
        assert [i for r in results for i, v in zip(r["ids"][step], r["valid"][step],
                                                   strict=True) if v] == single[step]


@pytest.mark.integration
def test_neither_tensorflow_nor_grain_is_imported(dataset):
    code = (f"import sys, tfrecordkit as tk\n"
            f"from torch.utils.data import DataLoader\n"
            f"for b in DataLoader(tk.load_torch_dataset({str(dataset)!r}, batch_size=8), "
            f"batch_size=None): pass\n"
            "assert 'tensorflow' not in sys.modules and 'grain' not in sys.modules\n"
            "print('ok')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-1000:]


@pytest.fixture(scope="module")
def class_dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("torch_pk") / "ds"
    schema = Schema({"x": Scalar("int64"), "label": ClassLabel([str(i) for i in range(12)])})
    counts = [3, 5, 8, 2, 9, 6, 4, 7, 5, 6, 3, 10]
    rows = [{"x": 12 * j + c, "label": c} for c, n in enumerate(counts) for j in range(n)]
    write_dataset(rows, out, schema, shards=ShardOptions(layout="per_class"), progress=False)
    return out


@pytest.mark.parametrize("workers", [0, pytest.param(2, marks=pytest.mark.slow)])
def test_pk_batches_in_torch_equal_the_numpy_ones_and_resume(class_dataset, workers):

    expected = [b["x"].tolist() for b in tk.load_numpy_dataset(class_dataset, sampling=tk.PK(3, 2),
                                                               seed=4)]
    ds = tk.load_torch_dataset(class_dataset, sampling=tk.PK(3, 2), seed=4)
    got = [b["x"].tolist() for b in _loader(ds, workers)]
    assert got == expected
    for b in _loader(ds, 0) if workers == 0 else []:
        assert (b["x"] % 12 == b["label"]).all() and b["__class_position"].tolist() == [
            0, 0, 1, 1, 2, 2]
    # Resume mid-epoch from a StatefulDataLoader state with another worker count.
    from torchdata.stateful_dataloader import StatefulDataLoader

    first = _loader(tk.load_torch_dataset(class_dataset, sampling=tk.PK(3, 2), seed=4), workers,
                    StatefulDataLoader)
    seen = [b["x"].tolist() for _, b in zip(range(2), first, strict=False)]
    resumed = tk.load_torch_dataset(class_dataset, sampling=tk.PK(3, 2), seed=4)
    resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))
    rest = [b["x"].tolist() for b in _loader(resumed, 2 - workers)]
    assert seen + rest == expected


def noisy(values, rng):
    """An augmentation for the tests: a random offset per record (module level: picklable)."""
    return {**values, "x": values["x"] + np.float32(rng.integers(0, 1000))}


@pytest.mark.slow  # starts DataLoader worker processes
def test_augmentation_is_keyed_by_record_so_workers_and_resume_repeat_it(dataset):
    plain = {i: x for b in load_numpy_dataset(dataset, batch_size=B, seed=2)
             for i, x in zip(b["__id"].tolist(), b["x"].tolist(), strict=True)}
    numpy_run = list(load_numpy_dataset(dataset, batch_size=B, seed=2,
                                        options=tk.DecodeOptions(augment=noisy)))
    offsets = {i: x - plain[i] for b in numpy_run
               for i, x in zip(b["__id"].tolist(), b["x"].tolist(), strict=True)}
    assert len(set(offsets.values())) > 50  # really random per record
    ds = load_torch_dataset(dataset, batch_size=B, seed=2, options=tk.DecodeOptions(augment=noisy))
    torch_run = [b["x"].tolist() for b in _loader(ds, 2)]
    assert torch_run == [b["x"].tolist() for b in numpy_run]
    resumed = load_numpy_dataset(dataset, batch_size=B, seed=2,
                                 options=tk.DecodeOptions(augment=noisy))
    resumed.load_state_dict({**resumed.state_dict(), "step": 5})
    assert [b["x"].tolist() for b in resumed] == [b["x"].tolist() for b in numpy_run[5:]]
    next_epoch = load_numpy_dataset(dataset, batch_size=B, seed=2,
                                    options=tk.DecodeOptions(augment=noisy))
    next_epoch.set_epoch(1)
    first_ids = numpy_run[0]["__id"].tolist()
    again = {i: x for b in next_epoch for i, x in zip(b["__id"].tolist(), b["x"].tolist(),
                                                       strict=True)}
    assert [again.get(i) for i in first_ids] != numpy_run[0]["x"].tolist()  # epochs differ


@pytest.mark.slow  # starts DataLoader worker processes
def test_triplets_in_torch_equal_the_numpy_ones(class_dataset):

    expected = [b["anchor"]["__id"].tolist() for b in tk.load_numpy_dataset(class_dataset,
                                                                            batch_size=8,
                                                                            sampling=tk.Triplets(),
                                                                            seed=3)]
    ds = tk.load_torch_dataset(class_dataset, batch_size=8, sampling=tk.Triplets(), seed=3)
    got = list(_loader(ds, 2))
    assert [b["anchor"]["__id"].tolist() for b in got] == expected
    for b in got:
        assert torch.equal(b["anchor"]["label"], b["positive"]["label"])
        assert not (b["anchor"]["label"] == b["negative"]["label"]).any()


@pytest.mark.slow
def test_batches_from_workers_hold_the_same_values_packed(tmp_path):
    """A worker's batch crosses to the main process as one shared buffer (tensors and lists
    of bytes alike); it arrives as the same dict of tensors and bytes as in-process."""
    schema = Schema({"v": Scalar("int64"), "f": Scalar("float32"), "s": Scalar("string"),
                     "label": ClassLabel(["a", "b"])})
    rows = [{"v": i, "f": i / 4, "s": bytes(range(i % 7)) * 3, "label": i % 2}
            for i in range(90)]
    write_dataset(rows, tmp_path / "ds", schema, shards=ShardOptions(num_shards=3))
    for decode in (True, False):
        in_process = list(_loader(load_torch_dataset(tmp_path / "ds", batch_size=8, seed=4,
                                                     options=tk.DecodeOptions(decode=decode)), 0))
        workers = list(_loader(load_torch_dataset(tmp_path / "ds", batch_size=8, seed=4,
                                                  options=tk.DecodeOptions(decode=decode)), 2))
        assert len(workers) == len(in_process)
        by_first = {int(b["__id"][0]): b for b in in_process}
        for batch in workers:
            want = by_first[int(batch["__id"][0])]
            assert batch.keys() == want.keys() and type(batch) is dict
            for key, value in want.items():
                if isinstance(value, torch.Tensor):
                    assert batch[key].dtype == value.dtype and torch.equal(batch[key], value)
                else:
                    assert batch[key] == value


@pytest.mark.slow  # starts DataLoader worker processes
def test_batches_view_the_workers_buffers_kept_ones_stay_and_dropped_ones_free_at_once(
        tmp_path):
    """A worker's batch arrives viewing the worker's shared buffer (no copy). A tensor kept
    (or a view of it) keeps its values while the workers go on; a batch dropped hands its
    buffer back at once, not when the garbage collector next runs (it is off here)."""
    import gc

    from tfrecordkit.readers import torch_data

    schema = Schema({"v": Scalar("int64"), "label": ClassLabel(["a", "b"])})
    write_dataset([{"v": i, "label": i % 2} for i in range(480)], tmp_path / "ds", schema,
                  shards=ShardOptions(num_shards=4))
    gc.collect()
    gc.disable()
    try:
        kept, seen = [], []
        for k, batch in enumerate(_loader(load_torch_dataset(tmp_path / "ds", batch_size=8,
                                                             seed=3), 2)):
            seen.extend(batch["v"].tolist())
            if k % 12 == 0:  # a view of a kept batch, and a copy to check it against
                kept.append((batch["v"][2:], batch["v"][2:].clone()))
        del batch
        assert sorted(seen) == list(range(480))
        assert all(torch.equal(view, copy) for view, copy in kept)
        busy = [m for _, m in torch_data._ATTACHED.values() if not m.closed and m.buf[0]]
        assert len(busy) <= len(kept) == 5
        del kept
        busy = [m for _, m in torch_data._ATTACHED.values() if not m.closed and m.buf[0]]
        assert busy == []
    finally:
        gc.enable()


def _numpy_epoch(dataset, epoch):
    loader = load_numpy_dataset(dataset, batch_size=B, seed=1)
    loader.set_epoch(epoch)
    return _ids(loader)


@pytest.mark.slow  # starts DataLoader worker processes
def test_persistent_workers_follow_set_epoch(dataset):
    """Persistent workers keep the dataset copy they started with: set_epoch reaches them
    anyway (it was ignored: epoch 7 asked, epoch 1 run, other order and other crops)."""
    ds = load_torch_dataset(dataset, batch_size=B, seed=1)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True,
                        multiprocessing_context=WORKERS)
    assert _ids(loader) == _numpy_epoch(dataset, 0)
    for epoch in (7, 3):
        ds.set_epoch(epoch)
        assert _ids(loader) == _numpy_epoch(dataset, epoch)
    # Left alone, they go on to the next epoch themselves.
    assert _ids(loader) == _numpy_epoch(dataset, 4)


@pytest.mark.slow  # starts DataLoader worker processes
def test_workers_starting_the_same_epoch_again_warn_once(dataset, capfd):
    """Plain workers are new copies of the main process's dataset every epoch: without
    set_epoch each epoch repeats the first (and ds.state_dict() stays at step 0). Said once,
    naming the two ways out."""
    # Spawned workers write to this test's captured stderr (a forkserver's, to the server's) and
    # start with Python's warning filters (forked ones would inherit pytest's, turned to errors).
    spawned = multiprocessing.get_context("spawn")
    ds = load_torch_dataset(dataset, batch_size=B, seed=1)
    first = _ids(_loader(ds, 2, context=spawned))
    assert "RepeatedEpochWarning" not in capfd.readouterr().err
    assert _ids(_loader(ds, 2, context=spawned)) == first
    err = capfd.readouterr().err
    assert "RepeatedEpochWarning" in err and "set_epoch" in err and "StatefulDataLoader" in err
    _ids(_loader(ds, 2, context=spawned))
    assert "RepeatedEpochWarning" not in capfd.readouterr().err  # once
    ds.set_epoch(1)
    assert _ids(_loader(ds, 2, context=spawned)) == _numpy_epoch(dataset, 1)
    assert "RepeatedEpochWarning" not in capfd.readouterr().err


def test_the_main_process_state_of_a_dataset_iterated_by_plain_workers_is_refused(dataset):
    """Its workers prefetch: the copy in the main process stays at step 0 and would resume
    the epoch from its start. Refused, naming what gives the real position."""
    ds = load_torch_dataset(dataset, batch_size=B, seed=5)
    assert ds.state_dict()["step"] == 0  # nothing iterated yet: exact
    seen = 0
    for seen, _ in enumerate(_loader(ds, 2), start=1):
        if seen == 3:
            break
    with pytest.raises(StateError, match="StatefulDataLoader") as err:
        ds.state_dict()
    assert "state_at(step)" in str(err.value) and "\n" not in str(err.value)
    state = ds.state_at(3)
    again = load_torch_dataset(dataset, batch_size=B, seed=5)
    again.load_state_dict(state)
    assert _ids(_loader(again, 0)) == _ids(load_numpy_dataset(dataset, batch_size=B,
                                                              seed=5))[3:]
