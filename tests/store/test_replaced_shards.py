"""A shard rewritten in place with other records of the same size (its mtime restored) is
refused by every reader when it opens the dataset, not read as if nothing happened: the
manifest records the CRC32C of each shard's first 4 KiB, and readers check it locally."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tfrecordkit as tk
from tfrecordkit import DatasetError
from tfrecordkit.format import RecordWriter, encode_example
from tfrecordkit.readers.grain_source import load_grain_source


def _write_class_files(folder: Path, offset: int, classes: tuple[int, ...] = (0, 1)) -> None:
    folder.mkdir(exist_ok=True)
    for k in classes:
        with RecordWriter(str(folder / f"class_{k}.tfrecord")) as writer:
            for i in range(6):
                writer.write(encode_example({"x": [offset + 10 * k + i]}))


def _replace_in_place(shard: Path, rewrite) -> None:
    before = shard.stat()
    rewrite()
    assert shard.stat().st_size == before.st_size
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))


def _readers(path: Path):
    yield "numpy", lambda: list(tk.load_numpy_dataset(path, batch_size=4))
    yield "grain", lambda: load_grain_source(path)[0]
    yield "open_split", lambda: tk.open_split(path)[0]
    yield "pk", lambda: next(iter(tk.load_numpy_dataset(path, sampling=tk.PK(2, 2))))


def test_a_rewritten_adopted_shard_is_refused_by_every_reader(tmp_path):
    _write_class_files(tmp_path / "d", offset=0)
    tk.adopt(tmp_path / "d", class_pattern=r"class_(\d+)")
    for _, read in _readers(tmp_path / "d"):
        read()  # all good before
    # Same record sizes (one-byte varints), other values: what `verify` alone used to catch.
    _replace_in_place(tmp_path / "d" / "class_1.tfrecord",
                      lambda: _write_class_files(tmp_path / "d", offset=50, classes=(1,)))
    for name, read in _readers(tmp_path / "d"):
        with pytest.raises(DatasetError, match=r"class_1\.tfrecord: its first bytes differ"):
            read()
        assert name


def test_a_rewritten_converted_shard_is_refused(tmp_path):
    schema = tk.Schema({"x": tk.Scalar("int64"), "label": tk.ClassLabel(["a", "b"])})
    tk.write_dataset([{"x": i, "label": i % 2} for i in range(12)], tmp_path / "ds", schema,
                     shards=tk.ShardOptions(layout="per_class", seed=1))
    manifest = tk.load_manifest(tmp_path / "ds")
    shard = tmp_path / "ds" / manifest.splits["train"].shards[0].file
    data = bytearray(shard.read_bytes())

    def rewrite() -> None:
        # Another record set of the same size: swap the first two frames' payloads.
        records = list(tk.RecordReader(str(shard)))
        with RecordWriter(str(shard)) as writer:
            for record in [records[1], records[0], *records[2:]]:
                writer.write(record)

    _replace_in_place(shard, rewrite)
    assert shard.read_bytes() != bytes(data)
    with pytest.raises(DatasetError, match="first bytes differ"):
        list(tk.load_numpy_dataset(tmp_path / "ds", batch_size=4))


def test_datasets_without_the_head_checksum_still_read(tmp_path):
    from tests.conftest import GOLDEN

    assert len(tk.open_split(GOLDEN / "release_0_1" / "mixed")) == 12


@pytest.mark.integration
def test_tf_data_refuses_a_rewritten_shard_too(tmp_path):
    pytest.importorskip("tensorflow")
    from tfrecordkit.readers.tf_data import load_tf_dataset

    _write_class_files(tmp_path / "d", offset=0)
    tk.adopt(tmp_path / "d", class_pattern=r"class_(\d+)")
    assert len(list(load_tf_dataset(tmp_path / "d", batch_size=4))) == 3
    _replace_in_place(tmp_path / "d" / "class_0.tfrecord",
                      lambda: _write_class_files(tmp_path / "d", offset=70, classes=(0,)))
    with pytest.raises(DatasetError, match=r"class_0\.tfrecord: its first bytes differ"):
        load_tf_dataset(tmp_path / "d", batch_size=4)
