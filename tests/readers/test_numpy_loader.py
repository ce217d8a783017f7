"""load_numpy_dataset, tested on invariants: order is a pure function, ranks partition each
step, resume is exact, values equal the source."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import digits_folder
from tests.readers.conftest import RECORDS
from tfrecordkit import ShardOptions
from tfrecordkit.convert import convert, write_dataset
from tfrecordkit.readers.numpy_data import load_numpy_dataset
from tfrecordkit.sampling._order import EpochOrder
from tfrecordkit.schema import Scalar, Schema
from tfrecordkit.sources import ImageFolder

N = RECORDS



def _ids(loader, steps=None):
    out = []
    for k, batch in enumerate(loader):
        out.append(batch["__id"].tolist())
        if steps is not None and k + 1 == steps:
            break
    return out


@pytest.mark.parametrize(("sampling", "shuffle"), [
    (tk.Shuffled(exact=True, drop_last=True), "global"),
    (tk.Shuffled(drop_last=True), "block"), (tk.InOrder(drop_last=True), False)])
def test_one_epoch_covers_the_first_len_times_b_positions_once(dataset, sampling, shuffle):
    loader = load_numpy_dataset(dataset, batch_size=16,
                                sampling=sampling, seed=4)
    assert len(loader) == N // 16
    ids = [i for batch in _ids(loader) for i in batch]
    assert len(ids) == len(set(ids)) == len(loader) * 16
    order = EpochOrder(N, 4, 0, shuffle).ids(np.arange(len(loader) * 16))
    assert ids == order.tolist()


def test_same_configuration_same_ids_and_epochs_differ(dataset):
    first = _ids(load_numpy_dataset(dataset, batch_size=8, seed=1))
    assert first == _ids(load_numpy_dataset(dataset, batch_size=8, seed=1))
    loader = load_numpy_dataset(dataset, batch_size=8, seed=1)
    epoch0, epoch1 = _ids(loader), _ids(loader)
    assert epoch0 == first and epoch0 != epoch1
    loader.set_epoch(1)
    assert _ids(loader) == epoch1
    assert _ids(load_numpy_dataset(dataset, batch_size=8, seed=2)) != first


@pytest.mark.parametrize("world", [1, 2, 4])
def test_ranks_split_every_step_into_equal_disjoint_parts(dataset, world):
    single = _ids(load_numpy_dataset(dataset, batch_size=16, sampling=tk.Shuffled(drop_last=True),
                                     seed=3))
    ranks = [_ids(load_numpy_dataset(dataset, batch_size=16,
                                     sampling=tk.Shuffled(drop_last=True), seed=3,
                                     partition=tk.Partition(r, world))) for r in range(world)]
    assert all(len(r) == len(single) for r in ranks)
    for step, together in enumerate(zip(*ranks, strict=True)):
        assert all(len(part) == 16 // world for part in together)
        assert [i for part in together for i in part] == single[step]


def test_every_record_by_default_and_the_last_batch_smaller_on_one_rank(dataset):
    loader = load_numpy_dataset(dataset, batch_size=16, seed=2)
    sizes = [len(batch["__id"]) for batch in loader]
    assert len(loader) == len(sizes) == -(-N // 16) and sizes[-1] == N % 16
    assert sorted(i for batch in loader for i in batch["__id"].tolist()) == list(range(N))
    dropping = load_numpy_dataset(dataset, batch_size=16, sampling=tk.Shuffled(drop_last=True),
                                  seed=2)
    assert len(dropping) == N // 16


def test_drop_last_false_pads_by_wrapping_and_marks_valid(dataset):
    ranks = [load_numpy_dataset(dataset, batch_size=16, sampling=tk.Shuffled(),
                                partition=tk.Partition(r, 2)) for r in range(2)]
    assert len(ranks[0]) == -(-N // 16)
    seen = []
    for r in ranks:
        for batch in r:
            assert len(batch["__id"]) == 8
            seen += batch["__id"][batch["__valid"]].tolist()
    assert sorted(seen) == list(range(N))  # every record once, nothing double-counted


@pytest.mark.parametrize("stop_at", [0, 5, 11, 12])  # start, mid, last step, epoch boundary
def test_resume_in_a_fresh_loader_equals_the_uninterrupted_run(dataset, stop_at):
    loader = load_numpy_dataset(dataset, batch_size=16, seed=9)
    reference = _ids(loader) + _ids(loader)  # two epochs, uninterrupted
    run = load_numpy_dataset(dataset, batch_size=16, seed=9)
    got = []
    batches = iter(run)
    for _ in range(stop_at):  # consume exactly stop_at batches, then save
        got.append(next(batches)["__id"].tolist())
    state = json.loads(json.dumps(run.state_dict()))
    fresh = load_numpy_dataset(dataset, batch_size=16, seed=9)  # as a new process would
    fresh.load_state_dict(state)
    got += _ids(fresh)  # the rest of this epoch (nothing if it was complete) ...
    got += _ids(fresh)  # ... and the next
    if stop_at == len(run):
        got += _ids(fresh)
    assert got == reference + (_ids(loader) if stop_at == len(run) else [])


def test_state_saved_at_four_ranks_restores_at_two(dataset):
    fours = [load_numpy_dataset(dataset, batch_size=16, sampling=tk.Shuffled(drop_last=True),
                                seed=5, partition=tk.Partition(r, 4)) for r in range(4)]
    for loader in fours:
        _ids(loader, steps=3)
    states = [loader.state_dict() for loader in fours]
    assert all(s == states[0] for s in states)  # the same on every rank
    twos = [load_numpy_dataset(dataset, batch_size=16, sampling=tk.Shuffled(drop_last=True), seed=5,
                               partition=tk.Partition(r, 2)) for r in range(2)]
    for loader in twos:
        loader.load_state_dict(states[0])
    parts = [_ids(t) for t in twos]
    reference = _ids(load_numpy_dataset(dataset, batch_size=16,
                                        sampling=tk.Shuffled(drop_last=True), seed=5))[3:]
    assert [a + b for a, b in zip(*parts, strict=True)] == reference


def test_a_state_from_elsewhere_is_refused(dataset, tmp_path):
    state = load_numpy_dataset(dataset, batch_size=16).state_dict()
    with pytest.raises(ValueError, match="batch_size"):
        load_numpy_dataset(dataset, batch_size=32).load_state_dict(state)
    with pytest.raises(ValueError, match="fingerprint"):
        load_numpy_dataset(dataset, batch_size=16).load_state_dict(
            {**state, "fingerprint": "0" * 16})
    with pytest.raises(ValueError, match="divide evenly"):
        load_numpy_dataset(dataset, batch_size=10, partition=tk.Partition(0, 4))


def test_values_equal_the_source(dataset):
    loader = load_numpy_dataset(dataset, batch_size=32, sampling=tk.Shuffled(exact=True))
    split = tk.open_split(dataset)
    for batch in loader:
        for k, i in enumerate(batch["__id"].tolist()):
            record = split.schema.decode(split[i])
            assert batch["v"][k] == record["v"] and batch["label"][k] == record["label"]
            length = batch["seq"]["lengths"][k][0]
            assert batch["seq"]["values"][k][:length].tolist() == list(record["seq"])
            assert not batch["seq"]["values"][k][length:].any()


def test_pixels_equal_the_source_images(tmp_path):
    pixels = digits_folder(tmp_path / "src", limit_per_class=10)
    convert(ImageFolder(tmp_path / "src"), tmp_path / "ds", workers=1, progress=False)
    loader = load_numpy_dataset(tmp_path / "ds", batch_size=20, sampling=tk.Shuffled(exact=True))
    by_bytes = {px.tobytes() for px in pixels.values()}
    seen = 0
    for batch in loader:
        assert batch["image"].shape == (20, 8, 8, 1) and batch["image"].dtype == np.uint8
        for image in batch["image"]:
            assert image[:, :, 0].tobytes() in by_bytes
            seen += 1
    assert seen == 100


@pytest.mark.integration
def test_tensorflow_is_never_imported(dataset):
    code = (f"import sys, tfrecordkit as tk\n"
            f"for b in tk.load_numpy_dataset({str(dataset)!r}, batch_size=8): pass\n"
            "r = tk.open_split(" + repr(str(dataset)) + "); r[0]\n"
            f"s = tk.load_grain_source({str(dataset)!r}); s[3]; s._getitems([1, 2])\n"
            f"for b in tk.load_numpy_dataset({str(dataset)!r}, sampling=tk.PK(2, 2))"
            ".batches(3): pass\n"
            "loaded = [m for m in ('tensorflow', 'torch', 'grain', 'jax') if m in sys.modules]\n"
            "assert not loaded, loaded\n"
            "print('ok')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-1000:]


def test_a_bad_record_in_a_prefetched_step_names_itself_and_stopping_early_is_clean(tmp_path):
    from tests.datasets import encode_image, photos
    from tfrecordkit import SchemaError
    from tfrecordkit.schema import Image

    pixels = next(iter(photos().values()))
    good = encode_image(pixels, "JPEG")
    height, width = pixels.shape[:2]  # the bytes' own: the schema's size is taken from them
    schema = Schema({"image": Image("jpeg"), "n": Scalar("int64")})
    rows = [{"image": {"bytes": good if i != 77 else good[:300], "height": height,
                       "width": width, "channels": 3}, "n": i} for i in range(100)]
    write_dataset(rows, tmp_path / "ds", schema,
                  shards=ShardOptions(num_shards=2, shuffle=False), progress=False)
    loader = load_numpy_dataset(tmp_path / "ds", batch_size=10, sampling=tk.InOrder())
    first = next(iter(loader))  # abandoning the iteration with steps in flight is fine
    assert first["n"].tolist() == list(range(10))
    with pytest.raises(SchemaError, match=r"^record 77 \[train\] \(byte \d+ of .*"
                                          r"train-00001-of-00002.tfrecord\): feature 'image'"):
        list(load_numpy_dataset(tmp_path / "ds", batch_size=10, sampling=tk.InOrder()))


def _identity(values, rng):
    return values


@pytest.mark.parametrize("padding", ["pad", "ragged"])
def test_columnar_and_per_record_batches_are_identical(tmp_path, padding):
    from tests.datasets import MIXED_SCHEMA as SCHEMA
    from tests.datasets import mixed_row as _row

    rng = np.random.default_rng(5)
    write_dataset((_row(i, rng) for i in range(40)), tmp_path / "ds", SCHEMA,
                  shards=ShardOptions(num_shards=2),
                  progress=False)
    options = tk.DecodeOptions(padding=padding)
    columnar = list(load_numpy_dataset(tmp_path / "ds", batch_size=16,
                                       sampling=tk.Shuffled(exact=True), options=options))
    by_row = list(load_numpy_dataset(tmp_path / "ds", batch_size=16,
                                     sampling=tk.Shuffled(exact=True),
                                     options=dataclasses.replace(options, augment=_identity)))

    def same(a, b):
        if isinstance(a, dict):
            assert a.keys() == b.keys()
            for k in a:
                same(a[k], b[k])
        elif isinstance(a, np.ndarray):
            assert isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
        elif isinstance(a, list):
            assert len(a) == len(b)
            for x, y in zip(a, b, strict=True):
                same(x, y)
        else:
            assert type(a) is type(b) and a == b

    assert len(columnar) == len(by_row) == 3  # 16 + 16 + 8: every record
    for a, b in zip(columnar, by_row, strict=True):
        same(a, b)


def test_light_local_records_read_on_one_thread_the_rest_on_all(tmp_path):
    """Records whose Python holds the GIL take one reading thread; images, compressed files
    and per-record augmentation take every thread asked for, and every case gives the same
    batches as one thread does."""
    schema = Schema({"x": Scalar("int64")})
    rows = [{"x": i} for i in range(300)]
    write_dataset(rows, tmp_path / "plain", schema)
    write_dataset(rows, tmp_path / "gzip", schema, shards=ShardOptions(compression="gzip"))
    digits_folder(tmp_path / "digits", limit_per_class=4)
    convert(ImageFolder(tmp_path / "digits"), tmp_path / "images", workers=1)

    def loader(name, **kwargs):
        return load_numpy_dataset(tmp_path / name, batch_size=32,
                                  read=tk.ReadOptions(num_threads=3), **kwargs)

    assert loader("plain").pool_threads == 1
    assert loader("gzip").pool_threads == 3
    assert loader("images").pool_threads == 3
    augment = tk.DecodeOptions(augment=lambda values, rng: values)
    assert loader("plain", options=augment).pool_threads == 3
    for name in ("plain", "gzip", "images"):
        one = [b["__id"].tolist() for b in load_numpy_dataset(tmp_path / name, batch_size=32,
                                                              read=tk.ReadOptions(num_threads=1))]
        assert [b["__id"].tolist() for b in loader(name)] == one
