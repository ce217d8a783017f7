"""TFDS-prepared datasets read as they are, without TensorFlow: a dataset the real
tensorflow-datasets package prepares in the test (a GeneratorBasedBuilder over local data),
read by every reader, equal to tfds.as_numpy value for value."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import tfrecordkit as tk

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
tfds = pytest.importorskip("tensorflow_datasets")

TRAIN, TEST = 23, 5


def _rows(n: int, seed: int):
    rng = np.random.default_rng(seed)
    for i in range(n):
        yield i, {
            "image": rng.integers(0, 255, (4 + i % 5, 6, 3), dtype=np.uint8),
            "label": ["cat", "dog", "bird"][i % 3],
            "text": f"row {i} é",
            "score": np.float32(i / 3),
            "precise": i / 7,
            "n": i,
            "small": np.int32(-i),
            "flag": bool(i % 2),
            "vec": np.arange(3, dtype=np.float32) * i,
            "mat": np.arange(2 * (i % 3), dtype=np.int32).reshape(-1, 2),
            "meta": {"source": f"s{i}", "size": i * 100},
            "objects": [{"bbox": tfds.features.BBox(0.1, 0.2, 0.3 + j / 10, 0.9),
                         "kind": ["a", "b"][j % 2]} for j in range(i % 3)],
            "words": [f"w{j}" for j in range(i % 4)],
            "speech": (np.arange(5 + i) * 300 - 900).astype(np.int64),
            "big": np.uint64(2**64 - 1 - i),  # stored in an int64 list
        }


class Toy(tfds.core.GeneratorBasedBuilder):
    VERSION = tfds.core.Version("1.0.0")

    def _info(self):
        f = tfds.features
        return tfds.core.DatasetInfo(builder=self, features=f.FeaturesDict({
            "image": f.Image(shape=(None, None, 3)),
            "label": f.ClassLabel(names=["cat", "dog", "bird"]),
            "text": f.Text(),
            "score": np.float32,
            "precise": np.float64,
            "n": np.int64,
            "small": np.int32,
            "flag": np.bool_,
            "vec": f.Tensor(shape=(3,), dtype=np.float32),
            "mat": f.Tensor(shape=(None, 2), dtype=np.int32),
            "meta": {"source": f.Text(), "size": np.int64},
            "objects": f.Sequence({"bbox": f.BBoxFeature(),
                                   "kind": f.ClassLabel(names=["a", "b"])}),
            "words": f.Sequence(f.Text()),
            "speech": f.Audio(shape=(None,), dtype=np.int64, sample_rate=16000),
            "big": np.uint64,
        }))

    def _split_generators(self, dl_manager):
        return {"train": self._generate_examples(TRAIN, 0),
                "test": self._generate_examples(TEST, 1)}

    def _generate_examples(self, n, seed):
        yield from _rows(n, seed)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    builder = Toy(data_dir=str(tmp_path_factory.mktemp("tfds")))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        verify_ssl=False))
    return builder


def _flat(example, prefix=""):
    out = {}
    for key, value in example.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, f"{name}/"))
        else:
            out[name] = value
    return out


def _same(ours, theirs, name):
    if isinstance(theirs, bytes):
        assert (ours.encode() if isinstance(ours, str) else ours) == theirs, name
        return
    theirs = np.asarray(theirs)
    if theirs.dtype == object:
        assert [w.encode() if isinstance(w, str) else w for w in np.asarray(ours).tolist()] \
            == theirs.tolist(), name
        return
    ours = np.asarray(ours)
    assert ours.shape == theirs.shape, name
    if ours.ndim:  # arrays: the same dtype (one value per record: Python numbers)
        assert ours.dtype == theirs.dtype, (name, ours.dtype, theirs.dtype)
    else:  # the same number (a cast below would make -1 and 2**64 - 1 the same bytes)
        assert ours.item() == theirs.item(), (name, ours.item(), theirs.item())
    assert ours.astype(theirs.dtype).tobytes() == theirs.tobytes(), name  # exactly


def test_every_value_equals_tfds_as_numpy(prepared):
    root = prepared.data_dir
    manifest = tk.load_manifest(root)
    assert {k: v.records for k, v in manifest.splits.items()} == {"train": TRAIN, "test": TEST}
    assert list(manifest.schema["label"].names) == ["cat", "dog", "bird"]
    assert list(manifest.schema["objects/kind"].feature.names) == ["a", "b"]
    assert not (tk.format.index_path_for(f"{root}/x")).endswith("dataset.json")
    for split in ("train", "test"):
        theirs = [_flat(e) for e in tfds.as_numpy(prepared.as_dataset(split=split,
                                                                      shuffle_files=False))]
        records = tk.open_split(root, split)
        ours = [records.schema.decode(r) for r in records]
        assert len(ours) == len(theirs)
        for mine, want in zip(ours, theirs, strict=True):
            assert set(mine) == set(want)
            for name, value in want.items():
                _same(mine[name], value, name)
    # The loaders: one batch of everything, in the stored order, equal too.
    batch = next(iter(tk.load_numpy_dataset(root, "test", batch_size=TEST, sampling=tk.InOrder(),
                                            options=tk.DecodeOptions(padding="ragged"))))
    theirs = [_flat(e) for e in tfds.as_numpy(prepared.as_dataset(split="test",
                                                                  shuffle_files=False))]
    for k, want in enumerate(theirs):
        np.testing.assert_array_equal(batch["image"][k], want["image"])  # PNG: exact
        np.testing.assert_array_equal(batch["mat"][k], want["mat"])
        assert batch["n"][k] == want["n"]
    tf_batch = next(iter(tk.load_tf_dataset(root, "test", batch_size=TEST, sampling=tk.InOrder())))
    np.testing.assert_array_equal(tf_batch["n"].numpy(), batch["n"])
    np.testing.assert_array_equal(tf_batch["vec"].numpy(), batch["vec"])
    grain = tk.load_grain_source(root, "test")
    assert [int(grain[k]["n"]) for k in range(TEST)] == batch["n"].tolist()
    from tfrecordkit.readers.torch_data import load_torch_dataset

    torch_ids = [int(n) for b in load_torch_dataset(root, "test", batch_size=2,
                                                    sampling=tk.InOrder())
                 for n in b["n"]]
    assert torch_ids == batch["n"].tolist()
    assert not list(__import__("pathlib").Path(root).glob("dataset.json"))  # nothing written


def test_read_without_tensorflow_in_the_process(prepared):
    script = (
        "import sys, json, tfrecordkit as tk\n"
        f"loader = tk.load_numpy_dataset({str(prepared.data_dir)!r}, batch_size=8, seed=1)\n"
        "ids = [b['n'].tolist() for b in loader]\n"
        "pk = next(iter(tk.load_numpy_dataset("
        f"{str(prepared.data_dir)!r}, sampling=tk.PK(3, 2))))\n"
        "print(json.dumps({'ids': ids, 'tf': 'tensorflow' in sys.modules,\n"
        "                  'pk': pk['label'].tolist()}))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["tf"] is False
    assert sorted(n for batch in result["ids"] for n in batch) == list(range(TRAIN))
    assert sorted(set(result["pk"])) == [0, 1, 2]


def test_features_without_a_counterpart_are_named(tmp_path):
    root = tmp_path / "x" / "1.0.0"
    root.mkdir(parents=True)
    (root / "dataset_info.json").write_text(json.dumps({
        "name": "x", "splits": [{"name": "train", "shardLengths": ["0"]}]}))
    (root / "features.json").write_text(json.dumps({"featuresDict": {"features": {
        "clip": {"pythonClassName": "tensorflow_datasets.core.features.video_feature.Video",
                 "video": {}}}}}))
    with pytest.raises(tk.DatasetError, match=r"'clip'.*Video"):
        tk.load_manifest(root)


def test_adopted_folder_verifies_and_reads_the_same(prepared, tmp_path):
    from tfrecordkit.cli import main

    manifest = tk.adopt(prepared.data_dir, tmp_path / "adopted")
    assert {k: v.records for k, v in manifest.splits.items()} == {"train": TRAIN, "test": TEST}
    assert manifest.splits["train"].class_counts == {"0": 8, "1": 8, "2": 7}
    assert main(["verify", str(tmp_path / "adopted"), "-q"]) == 0
    ours = [r for r in tk.open_split(tmp_path / "adopted", "test")]
    assert ours == list(tk.open_split(prepared.data_dir, "test"))
