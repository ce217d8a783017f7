"""DataLoader workers hand batches over through a few reused shared-memory buffers: the same
values as in one process, whichever way a batch travels (a free buffer, a larger one made
for it, or torch's own sharing when none is free), and no shared memory left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tfrecordkit as tk

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

from tfrecordkit.readers import torch_data  # noqa: E402

SHM = Path("/dev/shm")
pytestmark = pytest.mark.skipif(not SHM.is_dir(), reason="needs /dev/shm (Linux)")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Records whose batches grow: later ones need larger buffers than the first."""
    root = tmp_path_factory.mktemp("shm")
    schema = tk.Schema({"blob": tk.Scalar("string"), "x": tk.Tensor((None,), "float32"),
                        "n": tk.Scalar("int64")})
    rows = [{"blob": bytes([i % 251]) * (50 * i), "x": np.arange(i % 40, dtype=np.float32),
             "n": i} for i in range(600)]
    tk.write_dataset(rows, root / "ds", schema,
                     shards=tk.ShardOptions(shuffle=False, num_shards=3), progress=False)
    return root / "ds"


def _names(pids: set[int]) -> set[str]:
    """Shared memory the loader workers ``pids`` made (named after this project and their
    process). Other programs' names, and other tests' workers' beside this one under xdist,
    come and go on a busy machine and are not ours to count."""
    return {p.name for p in SHM.iterdir()
            if any(p.name.startswith(f"{torch_data.SHARED_PREFIX}{pid}-") for pid in pids)}


def _same(a, b) -> None:
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, dict):
            _same(x, y)
        elif isinstance(x, list):
            assert [bytes(v) for v in x] == [bytes(v) for v in y], key
        else:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=key)


@pytest.mark.parametrize("prefetch", [2, 16])  # 16: more in flight than buffers
def test_batches_through_shared_buffers_equal_one_process_and_leave_nothing(
        dataset, prefetch):
    ds = tk.load_torch_dataset(dataset, batch_size=32, sampling=tk.InOrder())
    want = {int(b["__id"][0]): b for b in ds}
    loader = DataLoader(ds, batch_size=None, num_workers=2, prefetch_factor=prefetch)
    batches = iter(loader)
    workers = {w.pid for w in batches._workers}
    got = [next(batches)]
    assert _names(workers)  # the batches come through the workers' buffers
    got += list(batches)
    assert len(got) == len(want)
    for batch in got:
        _same(batch, want[int(batch["__id"][0])])
    del loader, batches, got
    assert _names(workers) == set()  # and the buffers are gone with the workers


EPOCHS = """
import sys
from torch.utils.data import DataLoader
import tfrecordkit as tk
ds = tk.load_torch_dataset(sys.argv[1], batch_size=32, sampling=tk.InOrder())
for epoch in range(3):
    ds.set_epoch(epoch)
    batches = iter(DataLoader(ds, batch_size=None, num_workers=2))
    print("workers", *(w.pid for w in batches._workers), file=sys.stderr)
    print(sum(len(b["n"]) for b in batches))
"""


@pytest.mark.slow  # ~5 s: DataLoader workers start
def test_several_epochs_with_workers_leave_the_resource_tracker_quiet(dataset):
    """From the second epoch on, the workers share the resource tracker the main process
    started: every buffer is registered and unregistered once (the tracker printed a
    KeyError traceback per buffer when the main process unregistered them too), and none
    is reported leaked or left behind."""
    run = subprocess.run([sys.executable, "-c", EPOCHS, str(dataset)], capture_output=True,
                         text=True, timeout=300, check=True)
    assert run.stdout.split() == ["600"] * 3
    assert "Traceback" not in run.stderr and "leaked" not in run.stderr, run.stderr
    workers = {int(pid) for line in run.stderr.splitlines() if line.startswith("workers ")
               for pid in line.split()[1:]}
    assert len(workers) == 6  # two a epoch
    assert _names(workers) == set()


def test_a_worker_reuses_its_buffers(monkeypatch):
    """In one process standing in for a worker: a batch goes into a free buffer, a larger
    batch gets a larger one, and with every buffer in use a batch goes torch's way."""
    monkeypatch.setattr(torch_data, "_RINGS", {})
    monkeypatch.setattr(torch_data, "_ATTACHED", {})
    small = torch_data._Packed({"a": torch.arange(10), "b": [b"xy", b"z"]})
    kind, args = small.__reduce__()
    assert kind is torch_data._unpack_shared
    name = args[1]
    back = kind(*args)  # as the main process unpickles it: viewing the buffer
    assert back["a"].tolist() == list(range(10)) and back["b"] == [b"xy", b"z"]
    other = torch_data._Packed({"a": torch.arange(5)}).__reduce__()
    assert other[1][1] != name  # still viewed by ``back``: another buffer
    other[0](*other[1])
    del back  # nothing views it any more: free again
    again = torch_data._Packed({"a": torch.arange(5)}).__reduce__()
    assert again[1][1] == name
    again[0](*again[1])
    big = torch_data._Packed({"a": torch.zeros(1 << 20, dtype=torch.float64)})
    kind, args = big.__reduce__()
    assert kind is torch_data._unpack_shared and args[1] != name  # a larger buffer
    assert kind(*args)["a"].shape == (1 << 20,)
    huge = torch_data._Packed({"a": torch.zeros((torch_data._RING_LARGEST >> 2) + 1,
                                                dtype=torch.float32)})
    assert huge.__reduce__()[0] is torch_data._unpack  # above the ring's largest: its own
    held = [torch_data._Packed({"a": torch.ones(3)}).__reduce__()
            for _ in range(torch_data._SLOTS)]  # none given back: every buffer in use
    kind, args = torch_data._Packed({"a": torch.ones(3)}).__reduce__()
    assert kind is torch_data._unpack and kind(*args)["a"].tolist() == [1.0, 1.0, 1.0]
    for kind, args in held:
        kind(*args)
    torch_data._ring().close()
    for _, slot in torch_data._ATTACHED.values():
        slot.close()
    assert not any(p.name.startswith(("psm_", "wnsm_")) and p.name in {name}
                   for p in SHM.iterdir())
    assert os.getpid() in torch_data._RINGS
