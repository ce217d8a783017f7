"""TFDS metadata is untrusted input: any change to features.json or dataset_info.json gives a
manifest that reads, or one clear DatasetError; never a crash, a hang or a file outside the
folder. (The real tensorflow-datasets package is the oracle in test_tfds.py.)"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecordkit as tk
from tfrecordkit import TFRecordKitError

TENSOR = "tensorflow_datasets.core.features.tensor_feature.Tensor"
FEATURES = {"featuresDict": {"features": {
    "n": {"pythonClassName": TENSOR, "tensor": {"dtype": "int64", "encoding": "none",
                                                 "shape": {}}},
    "vec": {"pythonClassName": TENSOR, "tensor": {"dtype": "float32", "encoding": "none",
                                                   "shape": {"dimensions": ["2"]}}},
    "label": {"pythonClassName": "x.ClassLabel", "classLabel": {"numClasses": "3"}},
    "meta": {"featuresDict": {"features": {"text": {"text": {}}}}},
}}}
INFO = {"name": "toy", "fileFormat": "tfrecord", "splits": [
    {"name": "train", "shardLengths": ["4"],
     "filepathTemplate": "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"}]}


def _folder(root, features=FEATURES, info=INFO):
    root.mkdir(parents=True, exist_ok=True)
    (root / "features.json").write_text(json.dumps(features))
    (root / "dataset_info.json").write_text(json.dumps(info))
    with tk.RecordWriter(root / "toy-train.tfrecord-00000-of-00001") as writer:
        for i in range(4):
            writer.write(tk.encode_example({"n": [i], "vec": [i / 2, -i / 2],
                                            "label": [i % 3], "meta/text": [f"t{i}".encode()]}))
    return root


def test_a_hand_written_folder_reads(tmp_path):
    root = _folder(tmp_path / "toy" / "1.0.0")
    manifest = tk.load_manifest(root)
    assert manifest.schema["vec"] == tk.Tensor((2,), "float32", encoding="list")
    batch = next(iter(tk.load_numpy_dataset(root, batch_size=4, sampling=tk.InOrder())))
    assert batch["n"].tolist() == [0, 1, 2, 3] and batch["vec"].shape == (4, 2)
    assert batch["meta/text"] == ["t0", "t1", "t2", "t3"]
    # verify: records and CRCs checked; TFDS records no file checksum, so none is compared.
    from tfrecordkit.store import verify_paths

    result = verify_paths([str(root)])
    assert not result.manifest_problems, result.manifest_problems
    assert [f["records"] for f in result.files] == [4]
    # adopt: dataset.json (checksums, class counts, indexes) in another folder, same values.
    adopted = tk.adopt(root, tmp_path / "adopted")
    assert adopted.splits["train"].class_counts == {"0": 2, "1": 1, "2": 1}
    assert adopted.splits["train"].shards[0].crc32c and (
        tmp_path / "adopted" / "toy-train.tfrecord-00000-of-00001.index").exists()
    again = next(iter(tk.load_numpy_dataset(tmp_path / "adopted", batch_size=4,
                                            sampling=tk.InOrder())))
    assert again["n"].tolist() == batch["n"].tolist()
    assert not (root / "dataset.json").exists()
    with pytest.raises(tk.DatasetError, match="already holds"):
        tk.adopt(root, tmp_path / "adopted")


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*prefix, i))


JSON = st.recursive(st.none() | st.booleans() | st.integers(-5, 10**12) | st.text(max_size=8)
                    | st.sampled_from(["-1", "../x", "..", "{SPLIT}/x", "1e9", "float64"]),
                    lambda children: st.lists(children, max_size=3)
                    | st.dictionaries(st.text(max_size=6), children, max_size=3),
                    max_leaves=6)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(["features", "info"]), data=st.data(), value=JSON,
       delete=st.booleans())
def test_any_change_to_the_metadata_is_read_or_refused(tmp_path_factory, which, data, value,
                                                       delete):
    features, info = copy.deepcopy(FEATURES), copy.deepcopy(INFO)
    doc = features if which == "features" else info
    paths = [p for p in _paths(doc) if p]
    path = data.draw(st.sampled_from(paths))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    root = _folder(tmp_path_factory.mktemp("t") / "toy" / "1.0.0", features, info)
    try:
        manifest = tk.load_manifest(root)
    except tk.DatasetError:
        return
    for split in manifest.splits.values():
        for shard in split.shards:
            assert "/" not in shard.file and shard.file not in (".", "..")
    try:
        for name in manifest.splits:
            for batch in tk.load_numpy_dataset(root, name, batch_size=3, sampling=tk.InOrder()):
                assert np.asarray(batch["__id"]).size
    except TFRecordKitError:
        pass  # a schema the records don't fit: refused with its own error


def test_shard_names_that_leave_the_folder_are_refused(tmp_path):
    info = copy.deepcopy(INFO)
    info["name"] = ".."
    info["splits"][0]["filepathTemplate"] = "{DATASET}"
    with pytest.raises(tk.DatasetError, match="not a file of this folder"):
        tk.load_manifest(_folder(tmp_path / "a", info=info))


@pytest.mark.parametrize("second", ["train", "test"])
def test_a_shard_listed_twice_is_refused(tmp_path, second):
    """Two entries naming one file would serve every record twice."""
    info = copy.deepcopy(INFO)
    info["splits"][0]["filepathTemplate"] = "toy-train.tfrecord-00000-of-00001"
    info["splits"][0]["shardLengths"] = ["2", "2"] if second == "train" else ["4"]
    if second == "test":
        info["splits"].append({"name": "test", "shardLengths": ["4"],
                               "filepathTemplate": "toy-train.tfrecord-00000-of-00001"})
    with pytest.raises(tk.DatasetError, match="twice"):
        tk.load_manifest(_folder(tmp_path / "a", info=info))


@pytest.mark.parametrize("text", [
    "a\n\nb\nc\n",            # a blank line
    "a\nb\u2028x\nc",         # U+2028 is no line end for TFDS
    "a\nb\x1cx\nc\n",         # nor \x1c
    "a\r\nb\x85x\r\nc\r\n",   # nor \x85; \r\n is
    "  a \n\tb\u2028x \n c\n\n",  # surrounding spaces stripped
])
def test_label_files_are_read_as_tfds_reads_them(tmp_path, text):
    pytest.importorskip("tensorflow_datasets")
    from tensorflow_datasets.core.features import class_label_feature

    root = _folder(tmp_path / "toy" / "1.0.0")
    (root / "label.labels.txt").write_text(text, encoding="utf-8", newline="")
    from etils import epath

    theirs = class_label_feature._load_names_from_file(epath.Path(root / "label.labels.txt"))
    assert list(tk.load_manifest(root).schema["label"].names) == theirs


def test_a_class_count_without_names_is_bounded(tmp_path):
    features = copy.deepcopy(FEATURES)
    features["featuresDict"]["features"]["label"]["classLabel"]["numClasses"] = str(10**12)
    with pytest.raises(tk.DatasetError, match="at most 1,000,000"):
        tk.load_manifest(_folder(tmp_path / "a", features=features))
