"""open_split: every record of a split by position; checked, bounded, thread-safe, picklable."""

from __future__ import annotations

import json
import os
import pickle
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit import CorruptRecordError, DatasetError, ShardOptions
from tfrecordkit.convert import write_dataset
from tfrecordkit.format import RecordReader
from tfrecordkit.schema import ClassLabel, Scalar, Schema

SCHEMA = Schema({"v": Scalar("int64"), "label": ClassLabel([str(i) for i in range(5)])})


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("split") / "ds"
    write_dataset([{"v": i, "label": i % 5} for i in range(300)], out, SCHEMA,
                  shards=ShardOptions(num_shards=7, layout="per_class"), progress=False)
    return out


def _sequential(path):
    manifest = tk.load_manifest(path)
    return [r for s in manifest.split("train").shards for r in RecordReader(path / s.file)]


def test_positions_follow_the_shards_in_manifest_order(dataset):
    split = tk.open_split(dataset)
    expected = _sequential(dataset)
    assert len(split) == len(expected) == 300
    assert [split[i] for i in range(300)] == expected
    assert split[-1] == expected[-1]
    ids = np.random.default_rng(0).permutation(300)[:120]
    assert split.get_many(ids) == [expected[i] for i in ids]
    assert list(split) == expected
    values = sorted(split.schema.decode(r)["v"] for r in split)
    assert values == list(range(300))


def test_bounds_and_types_are_checked(dataset):
    split = tk.open_split(dataset)
    with pytest.raises(IndexError, match="out of range"):
        split[300]
    with pytest.raises(IndexError, match="out of range"):
        split.get_many([0, 301])
    with pytest.raises(TypeError):
        split["0"]  # type: ignore[index]
    # get_many checks its ids as split[i] does: no float truncated, no string parsed, no
    # unsigned id wrapped around to a negative one.
    for bad in ([1.7], ["3"], [True], np.array([0.5]), [0, None]):
        with pytest.raises(TypeError, match="record positions are ints"):
            split.get_many(bad)
    for huge in ([2**64 - 1], np.array([2**64 - 1], np.uint64), [0, 2**70]):
        with pytest.raises(IndexError, match="out of range"):
            split.get_many(huge)
    assert split.get_many(iter([1, -1])) == [split[1], split[-1]]
    assert split.get_many(np.array([2], np.uint8)) == [split[2]] and split.get_many([]) == []


def test_at_most_max_open_files_are_open(dataset):
    split = tk.open_split(dataset, max_open_files=2)
    split.get_many(np.arange(300)[::-1])
    assert split._fetcher.peak_open_files <= 2


def test_threads_read_the_same_records_as_one_thread(dataset):
    split = tk.open_split(dataset, max_open_files=3)
    expected = _sequential(dataset)
    rng = np.random.default_rng(1)
    batches = [rng.integers(0, 300, 40) for _ in range(200)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(split.get_many, batches))
    for ids, got in zip(batches, results, strict=True):
        assert got == [expected[i] for i in ids]


def test_a_forked_child_reads_though_a_parent_thread_held_the_lock(dataset):
    """A DataLoader worker forked from a process whose reader was busy (a thread holding its
    lock, a read-ahead pool) reads on: the parent's threads do not exist in the child, so
    neither may its locks or pool."""
    import threading
    import time
    import warnings

    split = tk.open_split(dataset)
    expected = [split[i] for i in range(50)]
    fetcher = split._fetcher
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with fetcher._lock:
            held.set()
            release.wait()

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    with warnings.catch_warnings():  # Python 3.12+ warns of fork() with threads: the point
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: reads, then exits with whether it read the right records
        ok = split.get_many(range(50)) == expected and split[7] == expected[7]
        os._exit(0 if ok else 1)
    release.set()
    thread.join()
    deadline = time.monotonic() + 120  # a generous bound: a child that deadlocked never ends
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child deadlocked on the parent's lock")
    assert os.waitstatus_to_exitcode(status) == 0


def test_it_pickles_and_reopens_its_files(dataset):
    split = tk.open_split(dataset)
    first = split[5]
    again = pickle.loads(pickle.dumps(split))
    assert again[5] == first and len(again) == len(split)
    assert repr(again) == repr(split)


def test_corruption_and_disagreements_are_loud(tmp_path):
    out = tmp_path / "ds"
    write_dataset([{"v": i, "label": i % 5} for i in range(50)], out, SCHEMA,
                  shards=ShardOptions(num_shards=1),
                  progress=False)
    manifest = json.loads((out / "dataset.json").read_text())
    shard = out / manifest["splits"]["train"]["shards"][0]["file"]
    data = bytearray(shard.read_bytes())
    data[30] ^= 0xFF  # inside the first record's data
    shard.write_bytes(bytes(data))
    split = tk.open_split(out)
    with pytest.raises(CorruptRecordError, match="data crc"):
        split[0]
    assert split[1]  # the others are fine
    shard.write_bytes(bytes(data[:-10]))
    with pytest.raises(DatasetError, match="bytes"):
        tk.open_split(out)


def test_a_shard_cut_short_after_opening_names_the_frame(tmp_path):
    """Another process truncates a shard while it is read: the frame that no longer fits is
    reported as truncated, with its offset (nearby records are read in one span)."""
    out = tmp_path / "ds"
    write_dataset([{"v": i, "label": i % 5} for i in range(50)], out, SCHEMA,
                  shards=ShardOptions(num_shards=1, shuffle=False), progress=False)
    split = tk.open_split(out)
    shard = out / tk.load_manifest(out).split("train").shards[0].file
    data = shard.read_bytes()
    split.get_many([0])  # being read: the file is open (one opened after is refused whole)
    shard.write_bytes(data[:-10])  # the last record loses its tail
    assert split.get_many([0, 1, 2])  # whole records still read
    with pytest.raises(CorruptRecordError, match="truncated") as err:
        split.get_many([46, 47, 48, 49])
    assert str(shard) in str(err.value)
    assert err.value.offset == int(split.offset[49])  # the record cut short


def test_a_shard_cut_short_names_the_frame_when_spans_are_read_into_one_buffer(tmp_path):
    """Records of two files are read straight into one buffer (``get_slices``): a file
    truncated after opening is still reported naming it and the frame cut short."""
    out = tmp_path / "ds"
    write_dataset([{"v": i, "label": i % 5} for i in range(50)], out, SCHEMA,
                  shards=ShardOptions(num_shards=2, shuffle=False), progress=False)
    split = tk.open_split(out)
    shards = tk.load_manifest(out).split("train").shards
    last = int(np.flatnonzero(split.shard == 1)[np.argmax(split.offset[split.shard == 1])])
    first = int(np.flatnonzero(split.shard == 0)[0])
    expected = split.get_many([first, last])
    assert split.get_slices(np.array([first, last])).records() == expected
    shard = out / shards[1].file
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(CorruptRecordError, match="truncated") as err:
        split.get_slices(np.array([first, last]))
    assert str(shard) in str(err.value)
    assert err.value.offset == int(split.offset[last])


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_compressed_datasets_have_random_access(tmp_path, compression):
    rows = [{"v": i, "label": i % 5} for i in range(3000)]
    out = tmp_path / compression
    write_dataset(rows, out, SCHEMA, shards=ShardOptions(compression=compression,
                                                         num_shards=3), progress=False)
    manifest = json.loads((out / "dataset.json").read_text())
    assert manifest["format_version"] == 6
    shard = manifest["splits"]["train"]["shards"][0]
    assert (out / shard["index"]).exists() and (out / shard["restarts"]).exists()
    split = tk.open_split(out)
    expected = _sequential(out)
    ids = np.random.default_rng(1).permutation(3000)
    assert split.get_many(ids) == [expected[i] for i in ids]
    assert [split[i] for i in (2999, 0, 1500)] == [expected[i] for i in (2999, 0, 1500)]
    assert pickle.loads(pickle.dumps(split)).get_many([7, 2998]) == [expected[7],
                                                                      expected[2998]]


def test_compressed_datasets_without_sidecars_read_by_one_inflate_pass(tmp_path):
    """What format 5 wrote for compressed datasets: no index, no restart points."""
    rows = [{"v": i, "label": i % 5} for i in range(500)]
    write_dataset(rows, tmp_path / "old", SCHEMA,
                  shards=ShardOptions(compression="gzip", index=False), progress=False)
    manifest = json.loads((tmp_path / "old" / "dataset.json").read_text())
    assert "restarts" not in manifest["splits"]["train"]["shards"][0]
    split = tk.open_split(tmp_path / "old")
    expected = _sequential(tmp_path / "old")
    assert split.get_many([499, 3, 250]) == [expected[499], expected[3], expected[250]]


def test_a_missing_restart_sidecar_is_one_clear_error(tmp_path):
    write_dataset([{"v": 1, "label": 0}], tmp_path / "gz", SCHEMA,
                  shards=ShardOptions(compression="gzip"), progress=False)
    (sidecar,) = (tmp_path / "gz").glob("*.restarts")
    sidecar.unlink()
    with pytest.raises(DatasetError, match=r"\.restarts: missing"):
        tk.open_split(tmp_path / "gz")


def test_a_compressed_shard_cut_short_is_named_never_read(tmp_path):
    """A gzip shard cut short after the split was opened: records before the cut still
    read through their restart points; those after it are a CorruptRecordError naming the
    shard, never short values."""
    rows = [{"v": i, "label": i % 5} for i in range(4000)]
    write_dataset(rows, tmp_path / "gz", SCHEMA, progress=False,
                  shards=ShardOptions(compression="gzip", num_shards=1, shuffle=False))
    (shard,) = (tmp_path / "gz").glob("*.tfrecord.gz")
    expected = list(tk.read_records(shard))
    split = tk.open_split(tmp_path / "gz")  # opened whole (opening checks the size)
    data = shard.read_bytes()
    # The file open, nothing read yet: one opened only after the cut is refused whole.
    split._fetcher._acquire(0)
    split._fetcher._release(0)
    shard.write_bytes(data[: len(data) // 2])
    assert split.get_many([0, 1, 2]) == expected[:3]
    with pytest.raises(CorruptRecordError, match=r"\.tfrecord\.gz.*truncated"):
        split.get_many([3999])


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_a_dropped_split_closes_its_files_at_once(dataset):
    """No reference cycle keeps a dropped split (and its open files) for the garbage
    collector: they close when the last reference goes."""
    import gc

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    gc.disable()
    try:
        before = open_fds()
        split = tk.open_split(dataset)
        split.get_many(np.arange(len(split)))
        assert open_fds() > before
        del split
        assert open_fds() == before
    finally:
        gc.enable()


@pytest.mark.parametrize(("soft", "budget"), [(256, 64), (1024, 128), (20000, 1024),
                                              (-1, 1024)])
def test_the_default_open_file_budget_follows_the_limit(monkeypatch, dataset, soft, budget):
    import resource

    from tfrecordkit.store import _fetch

    limit = resource.RLIM_INFINITY if soft == -1 else soft
    monkeypatch.setattr(resource, "getrlimit", lambda _: (limit, limit))
    assert _fetch.open_file_budget() == budget
    assert tk.open_split(dataset)._fetcher.max_open_files == budget


def test_slices_hold_the_same_records_in_the_order_asked(dataset, tmp_path):
    split = tk.open_split(dataset)
    rng = np.random.default_rng(4)
    for _ in range(20):
        ids = rng.integers(0, len(split), size=int(rng.integers(0, 90)))  # repeats too
        slices = split.get_slices(ids)
        assert isinstance(slices, tk.format.RecordSlices)
        assert slices.records() == split.get_many(ids)
    # A damaged frame: one error naming the file and the frame's offset, as get_many.
    import shutil

    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    manifest = tk.load_manifest(copy)
    first = copy / manifest.split("train").shards[0].file
    data = bytearray(first.read_bytes())
    data[20] ^= 0xFF
    first.write_bytes(bytes(data))
    damaged = tk.open_split(copy)
    with pytest.raises(CorruptRecordError, match=rf"{first.name}.*offset 0"):
        damaged.get_slices(np.arange(3))


def test_a_shard_replaced_after_opening_is_refused_naming_it_unless_held_open(tmp_path):
    """A dataset written again at its path (same shard sizes, inode numbers reused, other
    records at each offset) under an opened split: a shard the split holds open reads as it
    was; one opened after the rewrite is refused naming it, never read at the old offsets,
    in this process and in one the split is pickled to; a split opened after reads the new
    records."""
    schema = tk.Schema({"x": tk.Tensor((4,), "int64")})
    out = tmp_path / "ds"

    def convert(seed: int) -> list[bytes]:
        rows = ({"x": np.full(4, i)} for i in range(120))
        write_dataset(rows, out, schema, overwrite=True, progress=False,
                      shards=ShardOptions(num_shards=2, seed=seed))
        return _sequential(out)

    old = convert(1)
    split = tk.open_split(out)
    held = int(np.flatnonzero(split.shard == 0)[0])
    assert split[held] == old[held]
    travelled = pickle.dumps(split)
    new = convert(2)
    assert new != old and split[held] == old[held]
    other = int(np.flatnonzero(split.shard == 1)[0])
    for reader in (split, pickle.loads(travelled)):
        with pytest.raises(DatasetError, match=re.escape(
                f"{split.files[1]}: replaced or rewritten since the dataset was opened")):
            reader.get_many([other])
    assert tk.open_split(out).get_many(range(120)) == new


def test_single_fetches_equal_batched_ones_and_every_damage_is_named(tmp_path):
    """``split[i]`` reads one frame in one call: the same bytes as ``get_many``; a flipped
    byte anywhere in a frame, a shard cut short and a stale index are each named with the
    file, the offset and the record's index in its file."""
    out = tmp_path / "ds"
    write_dataset([{"v": i, "label": i % 5} for i in range(60)], out, SCHEMA,
                  shards=ShardOptions(num_shards=2, shuffle=False), progress=False)
    split = tk.open_split(out)
    assert [split[i] for i in range(len(split))] == split.get_many(range(len(split)))
    assert [split[i] for i in range(-3, 0)] == split.get_many([57, 58, 59])
    shard = out / tk.load_manifest(out).split("train").shards[1].file
    clean = shard.read_bytes()
    first = int(np.flatnonzero(split.shard == 1)[0])
    for where, check in ((3, "length crc"), (13, "data crc"), (-2, "data crc")):
        damaged = bytearray(clean)
        frame_end = int(split.offset[first + 5] + split.length[first + 5])
        at = int(split.offset[first + 5]) + where if where >= 0 else frame_end + where
        damaged[at] ^= 0x01
        shard.write_bytes(bytes(damaged))
        fresh = tk.open_split(out)
        with pytest.raises(CorruptRecordError, match=check) as err:
            fresh[first + 5]
        assert err.value.path == str(shard) and err.value.index == 5
        assert err.value.offset == int(split.offset[first + 5])
        assert fresh[first + 4] == split[first + 4]
    shard.write_bytes(clean)
    reopened = tk.open_split(out)
    assert reopened[first] == split[first]  # being read: the file is open
    shard.write_bytes(clean[:-10])  # cut short after the split was opened
    with pytest.raises(CorruptRecordError, match="truncated"):
        reopened[len(split) - 1]


def test_close_while_threads_read_never_serves_another_record(dataset, tmp_path):
    """Readers on threads while another thread closes the files again and again and opens
    other files (which take the freed descriptor numbers): every record read is the one
    asked for (a descriptor closed mid-read once served another shard's record)."""
    import threading

    want = _sequential(dataset)
    split = tk.open_split(dataset, max_open_files=3)
    fetcher = split._fetcher
    decoys = [tmp_path / f"decoy{i}" for i in range(8)]
    for i, decoy in enumerate(decoys):
        decoy.write_bytes(bytes([i]) * 4096)
    stop = threading.Event()
    wrong: list[int] = []

    def read(seed: int) -> None:
        rng = np.random.default_rng(seed)
        while not stop.is_set():
            ids = rng.integers(0, len(want), 16)
            got = fetcher.fetch(ids) if seed % 2 else [fetcher.fetch_one(int(i)) for i in ids]
            wrong.extend(int(i) for i, r in zip(ids, got, strict=True) if r != want[i])

    def close_and_steal() -> None:
        for _ in range(400):
            fetcher.close()
            fds = [os.open(d, os.O_RDONLY) for d in decoys]  # reuse the freed numbers
            for fd in fds:
                os.close(fd)

    readers = [threading.Thread(target=read, args=(s,)) for s in range(4)]
    for t in readers:
        t.start()
    close_and_steal()
    stop.set()
    for t in readers:
        t.join()
    assert wrong == []


def test_a_read_after_close_raises(dataset):
    split = tk.open_split(dataset)
    first = split[0]
    split.close()
    for read in (lambda: split[0], lambda: split.get_many([0]), lambda: split.get_slices([0])):
        with pytest.raises(DatasetError, match="read after close"):
            read()
    assert tk.open_split(dataset)[0] == first
