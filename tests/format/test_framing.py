"""Record framing: round trips, compression, and what every kind of damage does."""

from __future__ import annotations

import gzip
import logging
import random
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfrecordkit import CorruptRecordError, OptionError, RecordReader, RecordWriter, read_records
from tfrecordkit.format import masked_crc32c

RECORDS = [b"", b"a", b"hello world", bytes(range(256)) * 3, b"\x00" * 1000]


def write(path: Path, records: list[bytes], compression: str | None = None) -> Path:
    with RecordWriter(path, compression) as writer:
        writer.write_all(records)
    return path


def frame_offsets(records: list[bytes]) -> list[int]:
    offsets, at = [], 0
    for record in records:
        offsets.append(at)
        at += len(record) + 16
    return offsets


def test_masked_crc_matches_known_value():
    # TensorFlow's crc32c test vector: crc32c(b"123456789") == 0xE3069283, masked as TF masks.
    crc = 0xE3069283
    assert masked_crc32c(b"123456789") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_frame_layout_is_length_crc_data_crc(tmp_path):
    path = write(tmp_path / "one.tfrecord", [b"abc"])
    raw = path.read_bytes()
    assert len(raw) == 3 + 16
    assert struct.unpack("<Q", raw[:8])[0] == 3
    assert struct.unpack("<I", raw[8:12])[0] == masked_crc32c(raw[:8])
    assert raw[12:15] == b"abc"
    assert struct.unpack("<I", raw[15:])[0] == masked_crc32c(b"abc")


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_round_trip(tmp_path, compression):
    path = write(tmp_path / "r.tfrecord", RECORDS, compression)
    reader = RecordReader(path)
    assert reader.compression == compression
    assert list(reader) == RECORDS
    assert list(reader) == RECORDS  # re-iterable
    assert reader.stats.records == len(RECORDS)


def test_compressed_streams_are_standard(tmp_path):
    gz = write(tmp_path / "r.gz", RECORDS, "gzip")
    zz = write(tmp_path / "r.zz", RECORDS, "zlib")
    plain = write(tmp_path / "r.tfrecord", RECORDS).read_bytes()
    assert gzip.decompress(gz.read_bytes()) == plain
    assert zlib.decompress(zz.read_bytes()) == plain


def test_compressed_output_is_deterministic(tmp_path):
    a = write(tmp_path / "a.gz", RECORDS, "gzip").read_bytes()
    b = write(tmp_path / "b.gz", RECORDS, "gzip").read_bytes()
    assert a == b


def test_concatenated_gzip_members_are_read(tmp_path):
    first = write(tmp_path / "a.gz", RECORDS[:2], "gzip").read_bytes()
    second = write(tmp_path / "b.gz", RECORDS[2:], "gzip").read_bytes()
    joined = tmp_path / "joined.gz"
    joined.write_bytes(first + second)
    assert list(RecordReader(joined)) == RECORDS


def test_explicit_compression_overrides_detection(tmp_path):
    path = write(tmp_path / "r", RECORDS, "zlib")
    assert list(RecordReader(path, compression="ZLIB")) == RECORDS
    with pytest.raises(CorruptRecordError):
        list(RecordReader(path, compression=None))


def test_empty_file_has_no_records(tmp_path):
    path = tmp_path / "empty.tfrecord"
    path.write_bytes(b"")
    assert list(RecordReader(path)) == []


def test_record_larger_than_buffer(tmp_path):
    big = bytes(range(256)) * 5000
    path = write(tmp_path / "big.tfrecord", [b"x", big, b"y"])
    assert list(RecordReader(path, buffer_size=64, use_mmap=False)) == [b"x", big, b"y"]


def test_records_larger_than_the_mapped_window(tmp_path, use_mmap):
    records = [b"a" * 100, bytes(range(256)) * 70_000, b"b" * 100, b"c" * (17 << 20)]
    path = write(tmp_path / "huge.tfrecord", records)
    assert list(RecordReader(path, use_mmap=use_mmap)) == records


def test_read_records_chains_files(tmp_path):
    a = write(tmp_path / "a.tfrecord", RECORDS[:2])
    b = write(tmp_path / "b.tfrecord.gz", RECORDS[2:], "gzip")
    assert list(read_records([a, b])) == RECORDS
    assert list(read_records(str(a))) == RECORDS[:2]


def test_bad_arguments_are_rejected_with_the_value(tmp_path):
    with pytest.raises(ValueError, match="'lz4'"):
        RecordWriter(tmp_path / "x", "lz4")
    with pytest.raises(ValueError, match="'ignore'"):
        RecordReader(tmp_path / "x", on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="restart points are for compressed"):
        RecordWriter(tmp_path / "x", None, restarts_path=tmp_path / "x.restarts")
    with pytest.raises(ValueError, match="restart_every"):
        RecordWriter(tmp_path / "x", "gzip", restart_every=0)


def test_write_after_close_fails(tmp_path):
    writer = RecordWriter(tmp_path / "x")
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write(b"late")


# -- damage ------------------------------------------------------------------------------


@pytest.fixture(params=[True, False], ids=["mmap", "buffered"])
def use_mmap(request) -> bool:
    """Both read paths: mapped windows and the buffered stream."""
    return request.param


def read_all_or_error(path: Path, use_mmap: bool = True) -> list[bytes] | CorruptRecordError:
    try:
        return list(RecordReader(path, use_mmap=use_mmap))
    except CorruptRecordError as err:
        return err


def test_every_byte_flip_is_detected_at_the_right_offset(tmp_path, use_mmap):
    records = [b"first", b"", b"third record", b"4"]
    clean = write(tmp_path / "clean.tfrecord", records).read_bytes()
    offsets = frame_offsets(records)
    damaged = tmp_path / "damaged.tfrecord"
    for position in range(len(clean)):
        data = bytearray(clean)
        data[position] ^= 0x01
        damaged.write_bytes(bytes(data))
        result = read_all_or_error(damaged, use_mmap)
        assert isinstance(result, CorruptRecordError), f"flip at {position} went unnoticed"
        record = max(i for i, off in enumerate(offsets) if off <= position)
        assert result.offset == offsets[record], position
        assert result.index == record
        assert result.path == str(damaged)
        in_header = position - offsets[record] < 12
        assert result.check == ("length crc" if in_header else "data crc"), position


@pytest.mark.parametrize("flip", [0x01, 0x80, 0xFF])
def test_byte_flips_of_every_kind_never_yield_wrong_data(tmp_path, flip):
    records = [b"abc" * 10, b"xyz"]
    clean = write(tmp_path / "clean.tfrecord", records).read_bytes()
    damaged = tmp_path / "damaged.tfrecord"
    for position in range(len(clean)):
        data = bytearray(clean)
        data[position] ^= flip
        damaged.write_bytes(bytes(data))
        assert isinstance(read_all_or_error(damaged), CorruptRecordError)


def test_every_truncation_is_read_correctly_or_reported(tmp_path, use_mmap):
    records = [b"alpha", b"", b"gamma gamma"]
    clean = write(tmp_path / "clean.tfrecord", records).read_bytes()
    offsets = [*frame_offsets(records), len(clean)]
    cut = tmp_path / "cut.tfrecord"
    for length in range(len(clean) + 1):
        cut.write_bytes(clean[:length])
        result = read_all_or_error(cut, use_mmap)
        complete = sum(1 for i in range(len(records)) if offsets[i + 1] <= length)
        if length in offsets:
            assert result == records[:complete], length
        else:
            assert isinstance(result, CorruptRecordError), length
            assert result.offset == offsets[complete]
            assert result.index == complete
            in_header = length - offsets[complete] < 12
            assert result.check == ("truncated header" if in_header else "truncated data")


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_truncated_compressed_stream_is_reported(tmp_path, compression):
    clean = write(tmp_path / "c", [b"x" * 5000, b"y" * 5000], compression).read_bytes()
    cut = tmp_path / "cut"
    for length in range(2, len(clean) - 1, 7):
        cut.write_bytes(clean[:length])
        reader = RecordReader(cut)
        result = read_all_or_error(cut)
        if isinstance(result, CorruptRecordError):
            assert result.check in ("bad compressed stream", "truncated data", "truncated header")
            continue
        records = list(reader)
        # Cut where the inflated data ends on a record boundary (before any data, or in the
        # stream's trailer): only whole, CRC-checked records, and the missing end is flagged.
        assert records in ([], [b"x" * 5000], [b"x" * 5000, b"y" * 5000]), length
        assert reader.stats.unterminated, length


def test_garbage_in_compressed_stream_is_reported(tmp_path):
    data = bytearray(write(tmp_path / "c.gz", [b"x" * 5000], "gzip").read_bytes())
    data[20:30] = b"\xff" * 10
    bad = tmp_path / "bad.gz"
    bad.write_bytes(bytes(data))
    result = read_all_or_error(bad)
    assert isinstance(result, CorruptRecordError)


def test_skip_drops_a_bad_data_crc_record_and_keeps_the_rest(tmp_path, caplog):
    records = [b"one", b"two", b"three"]
    data = bytearray(write(tmp_path / "c.tfrecord", records).read_bytes())
    data[frame_offsets(records)[1] + 12] ^= 0xFF  # first data byte of record 1
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(data))
    reader = RecordReader(bad, on_error="skip")
    with caplog.at_level(logging.WARNING):
        assert list(reader) == [b"one", b"three"]
    assert reader.stats.skipped_records == 1
    assert [p.check for p in reader.stats.problems] == ["data crc"]
    assert "skipped 1 corrupt record" in caplog.text  # reported at the end, never silent


def test_skip_resynchronises_after_a_bad_length(tmp_path, use_mmap):
    records = [b"one" * 5, b"two" * 5, b"three" * 5, b"four" * 5]
    data = bytearray(write(tmp_path / "c.tfrecord", records).read_bytes())
    data[frame_offsets(records)[1] + 2] ^= 0x10  # the length of record 1
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(data))
    reader = RecordReader(bad, on_error="skip", use_mmap=use_mmap)
    assert list(reader) == [records[0], records[2], records[3]]
    assert reader.stats.problems[0].check == "length crc"
    assert reader.stats.skipped_bytes == len(records[1]) + 16


def test_warn_logs_each_problem(tmp_path, caplog):
    data = bytearray(write(tmp_path / "c.tfrecord", [b"a", b"b"]).read_bytes())
    data[12] ^= 1
    data[17 + 12] ^= 1
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        assert list(RecordReader(bad, on_error="warn")) == []
    assert caplog.text.count("data crc failed") >= 2


def test_skip_with_truncated_tail_counts_it(tmp_path):
    clean = write(tmp_path / "c.tfrecord", [b"a" * 10, b"b" * 10]).read_bytes()
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(clean[:-3])
    reader = RecordReader(cut, on_error="skip")
    assert list(reader) == [b"a" * 10]
    assert reader.stats.problems[0].check == "truncated data"
    assert reader.stats.skipped_records == 1


def test_without_verify_damaged_data_is_read_but_truncation_still_caught(tmp_path):
    clean = write(tmp_path / "c.tfrecord", [b"abc"]).read_bytes()
    flipped = bytearray(clean)
    flipped[12] ^= 1
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(flipped))
    assert list(RecordReader(bad, verify=False)) == [b"`bc"]
    bad.write_bytes(clean[:-1])
    with pytest.raises(CorruptRecordError, match="truncated data"):
        list(RecordReader(bad, verify=False))


def test_corrupt_length_without_verify_does_not_allocate_it(tmp_path):
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(struct.pack("<QI", 2**62, 0) + b"tiny")
    with pytest.raises(CorruptRecordError, match="truncated data"):
        list(RecordReader(bad, verify=False))


def test_error_is_a_value_error_and_pickles(tmp_path):
    import pickle

    err = CorruptRecordError("f.tfrecord", 40, 2, "data crc", "5 data bytes")
    assert isinstance(err, ValueError)
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) == (
        "f.tfrecord: record 2 at byte offset 40: data crc failed (5 data bytes)"
    )


@given(st.lists(st.binary(max_size=300), max_size=20), st.sampled_from([None, "gzip", "zlib"]),
       st.integers(min_value=12, max_value=200), st.booleans())
def test_framing_round_trips_any_records(tmp_path_factory, records, compression, buffer_size,
                                         use_mmap):
    path = tmp_path_factory.mktemp("h") / "r.tfrecord"
    write(path, records, compression)
    reader = RecordReader(path, buffer_size=buffer_size, use_mmap=use_mmap)
    assert list(reader) == records


# -- skip mode never invents records ------------------------------------------------------------


def _nested_file(tmp_path, compression=None):
    """Records where the middle one's payload is itself a TFRecord file of 5 frames."""
    inner = write(tmp_path / "inner.tfrecord", [f"inner{i}".encode() * 3 for i in range(5)])
    records = [b"before" * 4, inner.read_bytes(), b"after" * 4, b"last" * 4]
    return write(tmp_path / "outer.tfrecord", records), records


def test_skip_never_yields_frames_found_inside_another_records_payload(tmp_path, use_mmap):
    path, records = _nested_file(tmp_path)
    data = bytearray(path.read_bytes())
    data[frame_offsets(records)[1] + 3] ^= 0x40  # damage the nested record's length
    path.write_bytes(bytes(data))
    reader = RecordReader(path, on_error="skip", use_mmap=use_mmap)
    got = list(reader)
    assert not any(r.startswith(b"inner") for r in got), got
    assert got == [records[0], records[2], records[3]]
    assert reader.stats.skipped_records == 1
    assert reader.stats.skipped_bytes == len(records[1]) + 16


def test_skip_on_a_stream_checks_the_frame_that_follows(tmp_path):
    # Compressed files are streams, checked through a bounded look-ahead (16 MiB).
    path, records = _nested_file(tmp_path)
    data = bytearray(path.read_bytes())
    data[frame_offsets(records)[1] + 3] ^= 0x40
    gz = tmp_path / "outer.gz"
    gz.write_bytes(gzip.compress(bytes(data), mtime=0))
    got = list(RecordReader(gz, on_error="skip"))
    assert got == [records[0], records[2], records[3]]


def test_resync_through_megabytes_of_garbage_finds_the_next_record(tmp_path, use_mmap):
    rng = random.Random(7)
    records = [b"head" * 10, b"tail" * 10]
    head = write(tmp_path / "h.tfrecord", records[:1]).read_bytes()
    tail = write(tmp_path / "t.tfrecord", records[1:]).read_bytes()
    garbage = rng.randbytes(20 << 20)
    path = tmp_path / "g.tfrecord"
    path.write_bytes(head + garbage + tail)
    reader = RecordReader(path, on_error="skip", use_mmap=use_mmap)
    assert list(reader) == records
    assert reader.stats.skipped_bytes == len(garbage)


# -- conformance points from TensorFlow's and others' record I/O tests ---------------------------


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_flush_makes_written_records_readable_while_the_writer_is_open(tmp_path, compression):
    path = tmp_path / "live"
    writer = RecordWriter(path, compression)
    writer.write(b"first")
    writer.write(b"second")
    writer.flush()
    reader = RecordReader(path, compression=compression or None)
    assert list(reader) == [b"first", b"second"]
    assert reader.stats.problems == []
    writer.write(b"third")
    writer.close()
    reader = RecordReader(path, compression=compression or None)
    assert list(reader) == [b"first", b"second", b"third"]
    assert not reader.stats.unterminated


def test_a_compressed_file_cut_mid_record_is_still_an_error(tmp_path):
    path = tmp_path / "live.gz"
    writer = RecordWriter(path, "gzip")
    writer.write(b"x" * 5000)
    writer.flush()
    data = path.read_bytes()
    writer.close()
    (tmp_path / "cut.gz").write_bytes(data[:-9])  # inside the flushed data, not at the flush
    with pytest.raises(CorruptRecordError):
        list(RecordReader(tmp_path / "cut.gz"))


@pytest.mark.parametrize("buffer_size", [0, 1, 2, 11, 13, 100, 1 << 20])
@pytest.mark.parametrize("compression", [None, "gzip"])
def test_any_buffer_size_works(tmp_path, buffer_size, compression):
    path = tmp_path / f"b{buffer_size}"
    with RecordWriter(path, compression, buffer_size=buffer_size) as writer:
        writer.write_all(RECORDS)
    assert list(RecordReader(path, buffer_size=buffer_size, use_mmap=False)) == RECORDS
    with pytest.raises(ValueError, match="buffer_size"):
        RecordWriter(path, buffer_size=-1)
    with pytest.raises(ValueError, match="buffer_size"):
        RecordReader(path, buffer_size=-1)


def test_a_closed_reader_refuses_reads(tmp_path):
    path = write(tmp_path / "r.tfrecord", RECORDS)
    reader = RecordReader(path)
    assert reader.read(1) == RECORDS[1]
    reader.close()
    with pytest.raises(ValueError, match="closed"):
        reader.read(0)
    with pytest.raises(ValueError, match="closed"):
        iter(reader)


@pytest.mark.parametrize("bad", [5, b"gzip", "GZ", "snappy", object()])
def test_a_bad_compression_argument_is_a_value_error(tmp_path, bad):
    with pytest.raises(ValueError, match="compression"):
        RecordWriter(tmp_path / "x", bad)
    with pytest.raises(ValueError, match="compression"):
        RecordReader(tmp_path / "x", bad)


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_compressed_files_read_from_a_stored_offset(tmp_path, compression):
    """An offset into the decompressed stream (as iter_with_offsets gives it) is a place to
    start reading a GZIP or ZLIB file again, as an uncompressed file's byte offset is."""
    path = tmp_path / f"r.{compression}"
    records = [bytes([i]) * (i * 37 % 300) for i in range(120)]
    with RecordWriter(path, compression) as writer:
        writer.write_all(records)
    pairs = list(RecordReader(path).iter_with_offsets())
    assert [r for _, r in pairs] == records
    for k in (1, 57, 119):
        assert [r for _, r in RecordReader(path).iter_with_offsets(pairs[k][0])] == records[k:]
    with pytest.raises(OptionError, match="past the end"):
        list(RecordReader(path).iter_with_offsets(10**9))


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_flush_after_close_is_refused_as_tensorflow_does(tmp_path, compression):
    writer = RecordWriter(tmp_path / "r", compression)
    writer.write(b"x")
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.flush()
