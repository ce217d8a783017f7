"""The offset index and random access through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfrecordkit import (
    CorruptRecordError,
    DatasetError,
    IndexUnavailableError,
    RecordReader,
    RecordWriter,
    build_index,
)
from tfrecordkit.format import index_path_for, load_index

RECORDS = [b"zero", b"", b"two" * 100, b"three"]


@pytest.fixture
def record_file(tmp_path):
    path = tmp_path / "r.tfrecord"
    with RecordWriter(path) as writer:
        writer.write_all(RECORDS)
    return path


def test_index_lines_are_offset_and_frame_length(record_file):
    assert build_index(record_file) == len(RECORDS)
    lines = Path(index_path_for(record_file)).read_text().splitlines()
    expected, at = [], 0
    for record in RECORDS:
        expected.append(f"{at} {len(record) + 16}")
        at += len(record) + 16
    assert lines == expected


def test_writer_index_equals_built_index(tmp_path, record_file):
    path = tmp_path / "w.tfrecord"
    with RecordWriter(path, index_path=tmp_path / "w.tfrecord.index") as writer:
        writer.write_all(RECORDS)
    build_index(record_file)
    assert (tmp_path / "w.tfrecord.index").read_text() == Path(
        index_path_for(record_file)).read_text()


def test_random_access(record_file):
    build_index(record_file)
    with RecordReader(record_file) as reader:
        assert reader.num_records() == len(RECORDS)
        assert [reader.read(i) for i in (3, 0, 2, 1, -1)] == [
            RECORDS[3], RECORDS[0], RECORDS[2], RECORDS[1], RECORDS[3]]
        with pytest.raises(IndexError):
            reader.read(4)


def test_random_access_without_index_scans(record_file):
    with RecordReader(record_file) as reader:
        assert reader.read(2) == RECORDS[2]


def test_sequential_read_from_an_offset(record_file):
    build_index(record_file)
    offsets = load_index(index_path_for(record_file))
    reader = RecordReader(record_file)
    got = [r for _, r in reader.iter_with_offsets(int(offsets[2, 0]))]
    assert got == RECORDS[2:]


def test_random_access_checks_crc(record_file):
    build_index(record_file)
    data = bytearray(record_file.read_bytes())
    data[20 + 16 + 12] ^= 1  # inside record 2's data (frames of 20 and 16 bytes before it)
    record_file.write_bytes(bytes(data))
    with RecordReader(record_file) as reader, pytest.raises(CorruptRecordError, match="data crc"):
        reader.read(2)


def test_stale_index_is_rejected(record_file):
    build_index(record_file)
    with open(record_file, "ab") as f:
        f.write(b"more")
    with pytest.raises(DatasetError, match="does not match"):
        RecordReader(record_file).read(0)


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_compressed_files_cannot_be_indexed(tmp_path, compression):
    path = tmp_path / "r.gz"
    with RecordWriter(path, compression) as writer:
        writer.write_all(RECORDS)
    with pytest.raises(IndexUnavailableError, match="cannot be seeked"):
        build_index(path)
    with pytest.raises(IndexUnavailableError, match="cannot be seeked"):
        RecordReader(path).read(0)


def test_corrupt_file_gets_no_index(record_file):
    data = bytearray(record_file.read_bytes())
    data[13] ^= 1
    record_file.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError):
        build_index(record_file)
    assert not (record_file.parent / (record_file.name + ".index")).exists()
