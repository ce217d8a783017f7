"""Restart points in compressed record files: the stream stays one valid gzip/zlib stream, and
any record is read by inflating from the restart point before it, never more."""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecordkit import CorruptRecordError, DatasetError, RecordReader, RecordWriter
from tfrecordkit.format import (
    FRAME_OVERHEAD,
    LOCAL,
    Inflater,
    Restarts,
    check_frame,
    frame_record,
    load_restarts,
    parse_restarts,
    scan_offsets,
)

records_st = st.lists(st.binary(max_size=300) | st.builds(lambda n, b: b * n,
                                                         st.integers(1, 400), st.binary(
                                                             min_size=1, max_size=3)),
                      max_size=60)


def _write(path, records, compression, every, *, batched=False):
    with RecordWriter(path, compression, index_path=f"{path}.index",
                      restarts_path=f"{path}.restarts", restart_every=every) as writer:
        if batched:
            frames = [frame_record(r) for r in records]
            writer.write_frames(b"".join(frames), [len(f) for f in frames])
        else:
            writer.write_all(records)


def _reader(path):
    fd = os.open(path, os.O_RDONLY)
    return fd, lambda at, size: os.pread(fd, size, at)


@settings(max_examples=60, deadline=None)
@given(records=records_st, compression=st.sampled_from(["gzip", "zlib"]),
       every=st.integers(1, 9), batched=st.booleans(), data=st.data())
def test_any_record_reads_from_its_restart_point(tmp_path_factory, records, compression, every,
                                                 batched, data):
    path = str(tmp_path_factory.mktemp("r") / "f")
    _write(path, records, compression, every, batched=batched)
    raw = Path(path).read_bytes()
    # Still one valid stream: the standard library inflates it whole, our reader too.
    whole = gzip.decompress(raw) if compression == "gzip" else zlib.decompress(raw)
    assert whole == b"".join(frame_record(r) for r in records)
    assert list(RecordReader(path)) == records
    points = load_restarts(path, LOCAL)
    assert points is not None and len(points) == 1 + max(0, (len(records) - 1) // every)
    table = scan_offsets(path)
    listed = np.array(Path(f"{path}.index").read_bytes().split(), dtype=np.int64)
    assert np.array_equal(table, listed.reshape(-1, 2))  # decompressed offsets
    if not records:
        return
    fd, read_at = _reader(path)
    try:
        inflater = Inflater(Restarts(compression, (points,)), [path])
        wanted = data.draw(st.lists(st.integers(0, len(records) - 1), min_size=1, max_size=8))
        for i in wanted:
            before = inflater.inflated
            start, length = (int(v) for v in table[i])
            (frame,) = inflater.read(0, [(start, start + length)], read_at)
            assert check_frame(frame, path=path, offset=start) == records[i]
            # At most the records between the restart points around it.
            first, last = i - i % every, min(i - i % every + every, len(records)) - 1
            assert inflater.inflated - before <= int(table[last].sum() - table[first, 0])
    finally:
        os.close(fd)


def test_reading_the_last_record_inflates_at_most_restart_every_records(tmp_path):
    path = str(tmp_path / "f.gz")
    records = [os.urandom(50) * 20 for _ in range(5000)]  # 1 KiB each, compressible
    _write(path, records, "gzip", 64)
    table = scan_offsets(path)
    fd, read_at = _reader(path)
    try:
        inflater = Inflater(Restarts("gzip", (load_restarts(path, LOCAL),)), [path])
        start, length = (int(v) for v in table[-1])
        (frame,) = inflater.read(0, [(start, start + length)], read_at)
    finally:
        os.close(fd)
    assert check_frame(frame, path=path, offset=start) == records[-1]
    assert inflater.inflated <= 64 * (1000 + FRAME_OVERHEAD)  # the last interval at most
    assert inflater.inflated * 50 < int(table[-1].sum())  # not the whole file


def test_files_without_restart_points_read_anywhere_from_kept_states(tmp_path):
    """A gzip file someone else wrote: the first far read inflates from the start, later
    ones from a state kept on the way (a few MiB back at most)."""
    path = str(tmp_path / "plain.gz")
    records = [os.urandom(300) * 4 for _ in range(20_000)]  # ~24 MiB decompressed
    with RecordWriter(path, "gzip") as writer:
        writer.write_all(records)
    table = scan_offsets(path)
    fd, read_at = _reader(path)
    try:
        inflater = Inflater(Restarts("gzip", (np.zeros((1, 2), np.int64),)), [path],
                            keep_bytes=1 << 20)
        for i in (19_999, 3, 15_000, 19_998):
            before = inflater.inflated
            start, length = (int(v) for v in table[i])
            (frame,) = inflater.read(0, [(start, start + length)], read_at)
            assert check_frame(frame, path=path, offset=start) == records[i]
            if i == 15_000:
                assert inflater.inflated - before <= (4 << 20) + length
    finally:
        os.close(fd)


def test_damage_is_reported_never_read(tmp_path):
    path = str(tmp_path / "f.zz")
    records = [bytes([i % 251]) * 500 + os.urandom(20) for i in range(400)]
    _write(path, records, "zlib", 16)
    table = scan_offsets(path)
    points = load_restarts(path, LOCAL)
    data = bytearray(Path(path).read_bytes())
    at = int(points[5, 0]) + 40  # inside the deflate data after the sixth restart point
    data[at] ^= 0xFF
    Path(path).write_bytes(bytes(data))
    fd, read_at = _reader(path)
    inflater = Inflater(Restarts("zlib", (points,)), [path])

    def record(i):
        start, length = (int(v) for v in table[i])
        (frame,) = inflater.read(0, [(start, start + length)], read_at)
        return check_frame(frame, path=path, offset=start)

    try:
        with pytest.raises(CorruptRecordError, match=r"f\.zz") as err:
            record(5 * 16 + 3)
        assert err.value.offset >= int(points[5, 1])
        assert record(2) == records[2]  # before the damage: still read
    finally:
        os.close(fd)


@pytest.mark.parametrize(("text", "problem"), [
    (b"12 x\n", "not a restart-point file"),
    (b"12\n", "odd number"),
    (b"12 100\n10 200\n", "increase"),
    (b"0 0\n", "increase"),
    (b"999999 100\n", "past the end"),
])
def test_bad_restart_files_are_refused(text, problem):
    with pytest.raises(DatasetError, match=problem):
        parse_restarts(text, "f.gz.restarts", compressed_size=1000)
