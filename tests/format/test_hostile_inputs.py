"""Hostile files and the operating system: bombs, pipes, devices, misleading first bytes."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecordkit import CorruptRecordError, IndexUnavailableError, RecordReader, build_index
from tfrecordkit.format import RecordWriter, frame_record, masked_crc32c

RECORDS = [b"one" * 10, b"two" * 10, b"three" * 10, b"four" * 10, b"five" * 10, b"six" * 10,
           b"seven" * 10]


def _bomb(path, claimed: int, zeros: int) -> None:
    """A gzip file whose stream is a valid header claiming ``claimed`` bytes, then zeros."""
    length = struct.pack("<Q", claimed)
    header = length + struct.pack("<I", masked_crc32c(length))
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as out:
        out.write(deflater.compress(header))
        chunk = bytes(1 << 20)
        for _ in range(zeros >> 20):
            out.write(deflater.compress(chunk))
        out.write(deflater.flush())


def test_a_decompression_bomb_is_refused_with_flat_memory(tmp_path):
    path = tmp_path / "bomb.gz"
    _bomb(path, claimed=1 << 40, zeros=300 << 20)
    assert path.stat().st_size < 1 << 20
    script = textwrap.dedent(f"""
        import resource
        from tfrecordkit import CorruptRecordError, RecordReader
        for policy in ("raise", "skip"):
            try:
                list(RecordReader({str(path)!r}, on_error=policy))
            except CorruptRecordError as err:
                assert err.check == "record too large", err
        with open("/proc/self/status") as f:
            print([l for l in f if l.startswith("VmHWM")][0].split()[1])
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    peak_kib = int(result.stdout.split()[-1])
    assert peak_kib < 300 * 1024, f"peak RSS {peak_kib} KiB"


def test_the_record_limit_can_be_raised(tmp_path):
    path = tmp_path / "big.gz"
    with RecordWriter(path, "gzip") as writer:
        writer.write(b"x" * 5000)
    with pytest.raises(CorruptRecordError, match="max_record_bytes=1000"):
        list(RecordReader(path, max_record_bytes=1000))
    assert list(RecordReader(path, max_record_bytes=5000)) == [b"x" * 5000]


def test_a_damaged_first_header_that_looks_like_zlib_is_read_as_uncompressed(tmp_path):
    data = bytearray(b"".join(frame_record(r) for r in RECORDS))
    data[0:2] = b"\x78\x9c"  # a zlib header's two bytes, over the first record's length
    path = tmp_path / "looks-zlib.tfrecord"
    path.write_bytes(bytes(data))
    reader = RecordReader(path, on_error="skip")
    assert reader.compression is None
    assert list(reader) == RECORDS[1:]
    with pytest.raises(CorruptRecordError, match="length crc"):
        list(RecordReader(path))


@pytest.mark.integration
@pytest.mark.parametrize("compression", [None, "gzip"])
def test_verify_reads_a_pipe_as_a_stream(tmp_path, compression):
    path = tmp_path / "r.tfrecord"
    with RecordWriter(path, compression) as writer:
        writer.write_all(RECORDS)
    cat = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
    result = subprocess.run([sys.executable, "-m", "tfrecordkit", "verify", "/dev/stdin"],
                            stdin=cat.stdout, capture_output=True, text=True, timeout=120,
                            check=False)
    cat.stdout.close()
    cat.wait(timeout=60)
    assert result.returncode == 0, result.stderr
    assert "OK, 7 records" in result.stdout


@pytest.mark.integration
def test_a_fifo_is_read_and_never_indexed(tmp_path):
    path = tmp_path / "r.tfrecord"
    with RecordWriter(path) as writer:
        writer.write_all(RECORDS)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat {path} > {fifo}"])
    try:
        assert list(RecordReader(fifo)) == RECORDS
    finally:
        writer.wait(timeout=60)
    with pytest.raises(IndexUnavailableError, match="not a regular file"):
        build_index(fifo)
    assert not (tmp_path / "fifo.index").exists()


def test_devices_are_refused_not_read_as_empty(tmp_path):
    with pytest.raises(ValueError, match="not a regular file or a pipe"):
        list(RecordReader("/dev/zero"))
    with pytest.raises(IndexUnavailableError):
        build_index("/dev/zero")
    with pytest.raises(IndexUnavailableError):
        RecordReader("/dev/null").read(0)


def test_a_file_truncated_while_read_is_reported_on_the_buffered_path(tmp_path):
    # The CLI reads this way; a memory-mapped read of a shrinking file would die of SIGBUS.
    path = tmp_path / "r.tfrecord"
    with RecordWriter(path) as writer:
        writer.write_all([b"x" * 100_000 for _ in range(40)])
    reader = iter(RecordReader(path, use_mmap=False, buffer_size=1 << 16))
    assert next(reader) == b"x" * 100_000
    os.truncate(path, 1_000_000)
    with pytest.raises(CorruptRecordError, match="shrank while being read"):
        list(reader)


def test_the_default_reader_survives_another_process_truncating_a_small_file(tmp_path):
    """A file under one mapped window, truncated by another process mid-read: the default
    reader (any reader of ours) reports it; a mapped read would die of SIGBUS, so the check
    runs in a child process and its exit status says which happened."""
    script = textwrap.dedent("""
        import subprocess, sys
        from tfrecordkit import CorruptRecordError, RecordReader, RecordWriter
        path = sys.argv[1]
        with RecordWriter(path) as writer:
            writer.write_all([b"x" * 100_000 for _ in range(40)])  # 4 MB: one window
        reader = iter(RecordReader(path))
        next(reader)
        subprocess.run([sys.executable, "-c",
                        f"import os; os.truncate({path!r}, 1_000_000)"], check=True)
        try:
            list(reader)
        except CorruptRecordError as err:
            print("reported:", err)
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "r.tfrecord")],
                          check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr[-500:])
    assert "reported:" in done.stdout and "shrank while being read" in done.stdout


def test_a_file_truncated_between_mapped_windows_is_reported_not_a_crash(tmp_path):
    script = textwrap.dedent("""
        import os, sys
        from tfrecordkit import CorruptRecordError, RecordReader, RecordWriter
        path = sys.argv[1]
        with RecordWriter(path) as writer:
            writer.write_all([b"x" * 1_000_000 for _ in range(40)])  # 40 MB: 3 windows
        reader = iter(RecordReader(path))
        for _ in range(17):  # past the first 16 MiB window
            next(reader)
        os.truncate(path, 35_000_000)  # beyond the window in use (16-33 MB)
        try:
            list(reader)
        except CorruptRecordError as err:
            print("reported:", err)
    """)
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.tfrecord")],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, (result.returncode, result.stderr[-1000:])
    assert "shrank while being read" in result.stdout


def _read_through_fifo(folder, data: bytes, on_error: str):
    """Read ``data`` with RecordReader through a FIFO fed by a thread."""
    import threading

    fifo = folder / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as out:
            out.write(data)

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    try:
        return list(RecordReader(fifo, on_error=on_error))
    except CorruptRecordError as err:
        return err
    finally:
        thread.join(timeout=60)
        assert not thread.is_alive(), "reader stopped before the end of the stream"


_CLEAN = b"".join(frame_record(r) for r in RECORDS)
_GZIPPED = zlib.compress(_CLEAN)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([_CLEAN, _GZIPPED]), st.lists(
    st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    st.integers(0, 600), st.sampled_from(["raise", "skip"]))
def test_mutated_streams_through_a_fifo_read_as_the_same_bytes_in_a_file(
        tmp_path_factory, base, flips, cut, on_error):
    folder = tmp_path_factory.mktemp("fifo")
    data = bytearray(base)
    for position, value in flips:
        data[position % len(data)] = value
    data = bytes(data[: max(0, len(data) - cut)])
    (folder / "file").write_bytes(data)
    through_fifo = _read_through_fifo(folder, data, on_error)
    try:
        from_file = list(RecordReader(folder / "file", on_error=on_error))
    except CorruptRecordError as err:
        from_file = err
    if isinstance(from_file, CorruptRecordError):
        assert isinstance(through_fifo, CorruptRecordError)
        assert (through_fifo.check, through_fifo.offset) == (from_file.check, from_file.offset)
    else:
        assert through_fifo == from_file
