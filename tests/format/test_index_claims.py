"""An index beside a record file is a claim about that file: checked, never trusted.

An empty index, one a line short, the index of another file of the same size, or numbers
beyond int64 are refused naming the index and the command that rebuilds it, in every reader
that random-accesses loose files (the NumPy loader, grain's source, ``RecordReader.read``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tfrecordkit as tk
from tfrecordkit.errors import DatasetError, TFRecordKitError
from tfrecordkit.format import RecordReader, RecordWriter, build_index, encode_example
from tfrecordkit.readers.grain_source import load_grain_source
from tfrecordkit.readers.numpy_data import load_numpy_dataset


def _write(path: Path, sizes: list[int]) -> None:
    with RecordWriter(str(path)) as writer:
        for i, size in enumerate(sizes):
            writer.write(encode_example({"x": [i], "pad": [b"p" * size]}))


@pytest.fixture
def two_files(tmp_path: Path) -> Path:
    for part in range(2):
        _write(tmp_path / f"part-{part}.tfrecord", [10] * 100)
        build_index(str(tmp_path / f"part-{part}.tfrecord"))
    return tmp_path


def _readers(folder: Path):
    pattern = str(folder / "*.tfrecord")
    yield lambda: sum(len(b["x"]) for b in load_numpy_dataset(pattern, batch_size=10,
                                                              sampling=tk.InOrder()))
    yield lambda: len(load_grain_source(pattern))
    yield lambda: RecordReader(str(folder / "part-1.tfrecord")).read(0)


def test_good_indexes_read_every_record(two_files):
    assert len(load_grain_source(str(two_files / "*.tfrecord"))) == 200
    total = sum(int(b["__valid"].sum()) if "__valid" in b else len(b["x"])
                for b in load_numpy_dataset(str(two_files / "*.tfrecord"), batch_size=10,
                                            sampling=tk.InOrder()))
    assert total == 200


@pytest.mark.parametrize("damage", ["empty", "line_short", "foreign", "overflow", "garbage"])
def test_a_wrong_index_is_refused_naming_it(two_files, damage):
    index = two_files / "part-1.tfrecord.index"
    lines = index.read_text().splitlines(keepends=True)
    if damage == "empty":
        index.write_text("")
    elif damage == "line_short":
        index.write_text("".join(lines[:-1]))
    elif damage == "foreign":
        # Another file of exactly the same size: records of other sizes.
        other = two_files / "other.bin"
        _write(other, [4, 16] * 50)
        assert other.stat().st_size == (two_files / "part-1.tfrecord").stat().st_size
        build_index(str(other))
        index.write_bytes((two_files / "other.bin.index").read_bytes())
    elif damage == "overflow":
        index.write_text("0 99999999999999999999999\n")
    else:
        index.write_text("zero sixteen\n")
    damaged = index.read_bytes()
    for read in _readers(two_files):
        with pytest.raises(DatasetError) as caught:
            read()
        message = str(caught.value)
        assert "part-1.tfrecord.index" in message and "\n" not in message
        assert isinstance(caught.value, TFRecordKitError)
        if damage not in ("overflow", "garbage"):
            assert "tfrecordkit index" in message
    # Nothing was rewritten: the folder may be read-only or remote.
    assert index.read_bytes() == damaged
