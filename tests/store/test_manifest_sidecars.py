"""Whatever the writer writes, the readers read: a large vocabulary or class list goes to a
checksummed sidecar beside ``dataset.json`` (format version 4), so the manifest stays small;
a sidecar altered, missing or not a list is refused naming it."""

from __future__ import annotations

import json

import pytest

import tfrecordkit as tk
from tfrecordkit import DatasetError
from tfrecordkit.store._sidecar import SIDECAR_ITEMS

CLASSES = [f"class {k:06d} <é>" for k in range(SIDECAR_ITEMS * 3)]


@pytest.fixture
def many_classes(tmp_path):
    schema = tk.Schema({"x": tk.Scalar("int64"), "label": tk.ClassLabel(CLASSES),
                        "tags": tk.Sequence(tk.ClassLabel(CLASSES))})
    rows = [{"x": i, "label": i * 997 % len(CLASSES), "tags": [i, len(CLASSES) - 1]}
            for i in range(20)]
    tk.write_dataset(rows, tmp_path / "ds", schema)
    return tmp_path / "ds", rows


def test_a_long_class_list_goes_to_a_sidecar_and_reads_back(many_classes):
    path, rows = many_classes
    manifest_bytes = (path / "dataset.json").read_bytes()
    assert len(manifest_bytes) < 50_000  # the names are not in it
    data = json.loads(manifest_bytes)
    assert data["format_version"] == 4
    ref = data["schema"]["features"]["label"]["names"]
    assert ref["count"] == len(CLASSES) and (path / ref["sidecar"]).exists()
    manifest = tk.load_manifest(path)
    assert manifest.class_names == tuple(CLASSES)
    assert manifest.schema["tags"].feature.names == tuple(CLASSES)
    labels = sorted(int(v) for b in tk.load_numpy_dataset(path, batch_size=20) for v in b["label"])
    assert labels == sorted(r["label"] for r in rows)


def test_the_class_names_of_boxes_go_to_a_sidecar_too(tmp_path):
    names = [f"object {k}" for k in range(SIDECAR_ITEMS + 5)]
    schema = tk.Schema({"image/object": tk.Boxes(names)})
    rows = [{"image/object": {"boxes": [[0.1, 0.2, 0.3, 0.4]], "labels": [len(names) - 1 - i]}}
            for i in range(5)]
    tk.write_dataset(rows, tmp_path / "ds", schema)
    data = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    assert "sidecar" in data["schema"]["features"]["image/object"]["names"]
    assert tk.load_manifest(tmp_path / "ds").schema["image/object"].names == tuple(names)
    labels = sorted(int(v) for b in tk.load_numpy_dataset(tmp_path / "ds", batch_size=5)
                    for v in b["image/object"]["labels"]["values"].reshape(-1))
    assert labels == sorted(len(names) - 1 - i for i in range(5))


def test_a_large_vocabulary_goes_to_a_sidecar(tmp_path):
    words = [f"w{k}" for k in range(SIDECAR_ITEMS + 5)]
    schema = tk.Schema({"text": tk.Text(vocabulary=tk.Vocabulary(tuple(words)))})
    tk.write_dataset([{"text": f"w{k} w{k + 1}"} for k in range(0, 40, 2)], tmp_path / "ds",
                     schema)
    data = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    assert "sidecar" in data["schema"]["features"]["text"]["vocabulary"]["tokens"]
    vocabulary = tk.load_manifest(tmp_path / "ds").schema["text"].vocabulary
    assert vocabulary.tokens == tuple(words)


def test_small_lists_stay_inline_and_the_version_stays(tmp_path):
    schema = tk.Schema({"x": tk.Scalar("int64"), "label": tk.ClassLabel(["a", "b"])})
    tk.write_dataset([{"x": 1, "label": 0}], tmp_path / "ds", schema)
    data = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    assert data["format_version"] == 2 and data["schema"]["features"]["label"]["names"] == [
        "a", "b"]


@pytest.mark.parametrize("damage", ["altered", "missing", "not_a_list", "bad_name"])
def test_a_damaged_sidecar_is_refused_naming_it(many_classes, damage):
    path, _ = many_classes
    data = json.loads((path / "dataset.json").read_text())
    ref = data["schema"]["features"]["label"]["names"]
    sidecar = path / ref["sidecar"]
    if damage == "altered":
        sidecar.write_bytes(sidecar.read_bytes().replace(b"000001", b"000002", 1))
    elif damage == "missing":
        sidecar.unlink()
    elif damage == "not_a_list":
        sidecar.write_text('{"a": 1}')
        ref["sha256"] = __import__("hashlib").sha256(b'{"a": 1}').hexdigest()
    else:
        ref["sidecar"] = "../../etc/passwd"
    (path / "dataset.json").write_text(json.dumps(data))
    with pytest.raises(DatasetError, match="'label': names sidecar") as caught:
        tk.load_manifest(path)
    assert "\n" not in str(caught.value)


def test_a_manifest_too_large_for_readers_is_never_written(tmp_path, monkeypatch):
    from tfrecordkit.store import _manifest

    monkeypatch.setattr(_manifest, "MAX_MANIFEST_BYTES", 2_000)
    schema = tk.Schema({"x": tk.Scalar("int64"), "label": tk.ClassLabel(["a", "b"])})
    with pytest.raises(DatasetError, match="more than readers accept"):
        tk.write_dataset([{"x": i, "label": i % 2} for i in range(40)], tmp_path / "ds",
                         schema, shards=tk.ShardOptions(layout="per_class", num_shards=8))
    assert not (tmp_path / "ds" / "dataset.json").exists()
