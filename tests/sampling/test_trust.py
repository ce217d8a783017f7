"""The class index cross-checks the manifest, the .index files and the records it labels."""

from __future__ import annotations

import json

import pytest

import tfrecordkit as tk
from tfrecordkit import DatasetError, SchemaError, ShardOptions
from tfrecordkit.convert import write_dataset
from tfrecordkit.format import RecordReader, RecordWriter, encode_example, head_crc32c
from tfrecordkit.sampling import ClassIndex
from tfrecordkit.schema import ClassLabel, Scalar, Schema


def _dataset(tmp_path, layout):
    schema = Schema({"v": Scalar("int64"), "label": ClassLabel(["a", "b", "c", "d"])})
    rows = [{"v": i, "label": i % 4} for i in range(40)]
    out = tmp_path / layout
    write_dataset(rows, out, schema,
                  shards=ShardOptions(layout=layout, num_shards=2), progress=False)
    return out


def test_an_index_with_the_wrong_number_of_rows_is_refused(tmp_path):
    # Mixed layout: labels come from scanning the shard, locations from the index. An index
    # that disagrees in count (rebuilt for another file) must not pair labels with records.
    path = _dataset(tmp_path, "mixed")
    manifest = json.loads((path / "dataset.json").read_text())
    shard = path / manifest["splits"]["train"]["shards"][0]["file"]
    index_file = shard.with_name(shard.name + ".index")
    rows = index_file.read_text().splitlines()
    # Merge the first two rows into one frame: same bytes covered, one row fewer.
    first, second = (tuple(map(int, r.split())) for r in rows[:2])
    index_file.write_text("\n".join([f"{first[0]} {first[1] + second[1]}", *rows[2:]]) + "\n")
    with pytest.raises(DatasetError, match=r"records on disk|index does not match"):
        ClassIndex.from_dataset(path, "train")


def test_a_class_id_outside_the_class_list_is_refused(tmp_path):
    path = _dataset(tmp_path, "per_class")
    manifest = json.loads((path / "dataset.json").read_text())
    manifest["splits"]["train"]["shards"][0]["class_id"] = -1
    (path / "dataset.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetError, match="class_id"):
        ClassIndex.from_dataset(path, "train")


def _replace_records(path, edit):
    """Rewrite the first train shard (and its index) with ``edit(records)``; keep the
    manifest's byte count and head checksum in step, so only the records are wrong."""
    manifest = json.loads((path / "dataset.json").read_text())
    entry = manifest["splits"]["train"]["shards"][0]
    shard = path / entry["file"]
    records = list(RecordReader(shard))
    with RecordWriter(shard, index_path=str(shard) + ".index") as writer:
        writer.write_all(edit(records))
    entry["bytes"] = shard.stat().st_size
    entry["head_crc32c"] = head_crc32c(shard)
    (path / "dataset.json").write_text(json.dumps(manifest))


def _two_class_dataset(tmp_path):
    schema = Schema({"v": Scalar("int64"), "label": ClassLabel(["a", "b"])})
    path = tmp_path / "ds"
    write_dataset([{"v": i, "label": i % 2} for i in range(10)], path, schema, progress=False)
    return path


def test_a_record_label_outside_the_class_list_is_refused(tmp_path):
    path = _two_class_dataset(tmp_path)
    _replace_records(path, lambda r: [*r[:-1], encode_example({"v": 1, "label": 7})])
    with pytest.raises(DatasetError, match=r"label 7, outside 0\.\.1"):
        ClassIndex.from_dataset(path, "train")


def test_a_record_without_a_single_int_label_is_refused(tmp_path):
    path = _two_class_dataset(tmp_path)
    _replace_records(path, lambda r: [encode_example({"v": 1, "label": [0, 1]}), *r[1:]])
    with pytest.raises(SchemaError, match=r"record 0 of .*'label'.*2 value"):
        ClassIndex.from_dataset(path, "train")


def test_pk_batches_decode_errors_name_the_file_and_offset(tmp_path):
    path = _dataset(tmp_path, "per_class")
    _replace_records(path, lambda r: [encode_example({"v": "text", "label": 0}), *r[1:]])
    with pytest.raises(SchemaError, match=r"record at byte 0 of .*'v'.*string list"):
        for _ in tk.load_numpy_dataset(path, sampling=tk.PK(4, 10)).batches(4):
            pass
