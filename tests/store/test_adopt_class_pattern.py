"""``adopt(class_pattern=...)``: per-class files whose records carry no label at all (the class
lives only in the file name) become a per-class dataset with a label taken from the shard,
and every reader (NumPy, torch, grain, tf.data in all its paths, P×K and triplets in both,
``open_split``, the CLI) gives each record its file's class. Bad input writes nothing."""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tests.datasets import CLASSES, class_of, unlabelled_files
from tfrecordkit import DatasetError, SchemaError
from tfrecordkit.cli import main
from tfrecordkit.readers.grain_source import GrainSource

tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.integration

@pytest.fixture(scope="module")
def adopted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("adopt") / "raw"
    rows = unlabelled_files(folder, parts_of=lambda k: 1 + k % 2)  # 9 files, 45 records
    manifest = tk.adopt(folder, class_pattern=r"class_(\d+)-")
    return folder, rows, manifest


def test_the_manifest_takes_the_class_from_file_names(adopted):
    folder, rows, manifest = adopted
    assert manifest.layout == "per_class" and manifest.label_feature == "label"
    assert manifest.schema["label"] == tk.ClassLabel([str(k) for k in range(CLASSES)],
                                                     from_shard=True)
    split = manifest.splits["train"]
    assert split.records == len(rows) == 45
    assert split.class_counts == {str(k): 5 * (1 + k % 2) for k in range(CLASSES)}
    for shard in split.shards:
        assert shard.class_id == int(shard.file.split("_")[1].split("-")[0])
    data = json.loads((folder / "dataset.json").read_text())
    assert data["format_version"] == 3
    assert data["schema"]["features"]["label"]["from_shard"] is True
    assert tk.load_manifest(folder) == manifest


def _pixels(data):
    return np.asarray(PILImage.open(io.BytesIO(data)).convert("RGB"))


def test_numpy_torch_and_grain_give_every_record_its_files_class(adopted):
    folder, rows, _ = adopted
    ragged = tk.DecodeOptions(padding="ragged")
    seen = {}
    for batch in tk.load_numpy_dataset(folder, batch_size=7, sampling=tk.Shuffled(),
                                       seed=3, options=ragged):
        for caption, label, image in zip(batch["caption"], batch["label"], batch["image"],
                                         strict=True):
            assert int(label) == class_of(caption)
            seen[caption] = image
    assert len(seen) == 45
    for caption, (_, row) in rows.items():
        assert np.array_equal(seen[caption], _pixels(row["image"]))
    # Per-record rows (augment) and undecoded records (decode=False) carry it too.
    def augment(values, rng):
        return values

    for batch in tk.load_numpy_dataset(folder, batch_size=9,
                                       options=dataclasses.replace(ragged, augment=augment)):
        assert [int(v) for v in batch["label"]] == [class_of(c) for c in batch["caption"]]
    for batch in tk.load_numpy_dataset(folder, batch_size=9,
                                       options=tk.DecodeOptions(decode=False)):
        for caption, label in zip(batch["caption"], batch["label"], strict=True):
            assert int(label) == class_of(caption)
    source = GrainSource(folder, options=ragged)
    for i in range(len(source)):
        assert int(source[i]["label"]) == class_of(source[i]["caption"])
    raw = GrainSource(folder, options=tk.DecodeOptions(decode=False))
    assert [int(raw[i]["label"]) for i in range(len(raw))] == [
        int(source[i]["label"]) for i in range(len(source))]
    torch = pytest.importorskip("torch")
    from tfrecordkit.readers.torch_data import load_torch_dataset

    dataset = load_torch_dataset(folder, batch_size=5,
                                 options=tk.DecodeOptions(features=["caption", "label"]))
    for batch in torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2):
        assert batch["label"].tolist() == [class_of(c) for c in batch["caption"]]


def test_open_split_decodes_with_the_shards_class(adopted):
    folder, _, _ = adopted
    records = tk.open_split(folder)
    classes = records.shard_classes(range(len(records)))
    for i in range(len(records)):
        values = records.schema.decode(records[i], shard_class=int(classes[i]))
        assert values["label"] == class_of(values["caption"][0] if isinstance(
            values["caption"], list) else values["caption"])
    with pytest.raises(SchemaError, match=r"label.*each file's class"):
        records.schema.decode(records[0])


def test_tf_data_gives_every_record_its_files_class(adopted):
    folder, _, _ = adopted

    def check(example):
        labels = np.atleast_1d(example["label"].numpy())
        captions = np.atleast_1d(example["caption"].numpy())
        assert labels.tolist() == [class_of(c) for c in captions]
        return len(labels)

    # Shuffled and interleaved: decoded per example (images), batched, unbatched.
    assert sum(check(b) for b in tk.load_tf_dataset(folder, batch_size=8, seed=1,

options=tk.DecodeOptions(padding="ragged"))) == 45
    assert sum(check(e) for e in tk.load_tf_dataset(folder, seed=2)) == 45
    # Decoded as whole batches (no images), and raw (decode=False).
    text = ["caption", "label"]
    assert sum(check(b) for b in tk.load_tf_dataset(
        folder, batch_size=8, seed=1, options=tk.DecodeOptions(features=text))) == 45
    assert sum(check(b) for b in tk.load_tf_dataset(
        folder, batch_size=8, options=tk.DecodeOptions(features=text, decode=False))) == 45
    # The label alone; as_supervised.
    labels = [int(x) for b in tk.load_tf_dataset(folder, batch_size=8, sampling=tk.InOrder(),
                                                 options=tk.DecodeOptions(features=["label"]))
              for x in b["label"]]
    assert sorted(labels) == sorted(k for k in range(CLASSES) for _ in range(5 * (1 + k % 2)))
    for score, label in tk.load_tf_dataset(
            folder, batch_size=8,
            options=tk.DecodeOptions(features=["score", "label"], as_supervised=True)):
        assert (np.floor(score.numpy()).astype(int) == label.numpy()).all()
    # Each pipeline's share of every global batch (the last one wrapped around, its
    # fillers not valid), in the library's order and in TensorFlow's buffered shuffle
    # (by file for 3 pipelines over 9 files, by record for 10).
    for pipelines, sampling in ((3, tk.Shuffled()), (10, tk.Shuffled()),
                                (3, tk.Shuffled(buffer=16)), (10, tk.Shuffled(buffer=16))):
        got = []
        for worker in range(pipelines):
            context = tf.distribute.InputContext(num_input_pipelines=pipelines,
                                                 input_pipeline_id=worker)
            share = tk.Partition.from_input_context(context)
            for b in tk.load_tf_dataset(folder, batch_size=4 * pipelines, partition=share,
                                        sampling=sampling,
                                        options=tk.DecodeOptions(features=["caption", "label"])):
                check(b)
                valid = b["__valid"].numpy() if "__valid" in b else [True] * len(b["label"])
                got += [c.decode() for c, ok in zip(b["caption"].numpy(), valid, strict=True)
                        if ok]
        assert len(got) == len(set(got)) == 45, (pipelines, sampling)


def test_pk_and_triplets_give_the_files_class_in_numpy_and_tf(adopted):
    folder, _, _ = adopted
    features = ["caption", "label"]
    batch = next(tk.load_numpy_dataset(folder, sampling=tk.PK(3, 2), seed=0,
                                       options=tk.DecodeOptions(features=features)).batches(1))
    assert batch["label"].tolist() == [class_of(c) for c in batch["caption"]]
    tf_batch = next(iter(tk.load_tf_dataset(folder, sampling=tk.PK(3, 2), seed=0,
                                            options=tk.DecodeOptions(features=features))))
    assert tf_batch["label"].numpy().tolist() == batch["label"].tolist()
    assert [c.decode() for c in tf_batch["caption"].numpy()] == list(batch["caption"])
    triplets = next(iter(tk.load_numpy_dataset(folder, batch_size=4, sampling=tk.Triplets(), seed=0,
                                          options=tk.DecodeOptions(features=features))))
    tf_triplets = next(iter(tk.load_tf_dataset(folder, batch_size=4, sampling=tk.Triplets(), seed=0,
                                               options=tk.DecodeOptions(features=features))))
    for role in ("anchor", "positive", "negative"):
        part = triplets[role]
        assert part["label"].tolist() == [class_of(c) for c in part["caption"]]
        assert tf_triplets[role]["label"].numpy().tolist() == part["label"].tolist()
    assert (triplets["anchor"]["label"] == triplets["positive"]["label"]).all()
    assert (triplets["anchor"]["label"] != triplets["negative"]["label"]).all()


def test_the_command_line_adopts_verifies_and_shows_the_class(tmp_path, capsys):
    unlabelled_files(tmp_path / "raw", per_file=2)
    assert main(["adopt", str(tmp_path / "raw"), "--class-pattern", r"class_(?P<class>\d)",
                 "--class-names", "a,b,c,d,e,f", "--label-feature", "kind", "-q"]) == 0
    assert "6 classes, layout per_class" in capsys.readouterr().out
    manifest = tk.load_manifest(tmp_path / "raw")
    assert manifest.class_names == tuple("abcdef") and manifest.label_feature == "kind"
    assert main(["verify", str(tmp_path / "raw"), "-q"]) == 0
    capsys.readouterr()
    assert main(["head", str(tmp_path / "raw"), "-n", "12", "--json"]) == 0
    shown = [json.loads(line)["features"] for line in capsys.readouterr().out.splitlines()]
    assert len(shown) == 12
    for features in shown:
        k = class_of(features["caption"])
        assert features["kind"] == f"{k} ({'abcdef'[k]})"


def test_class_names_by_name_and_sorted_names(tmp_path):
    folder = tmp_path / "raw"
    unlabelled_files(folder, per_file=1)
    for k, name in enumerate(["cat", "dog", "emu", "fox", "gnu", "hen"]):
        (folder / f"class_{k}-0.tfrecord").rename(folder / f"{name}.tfrecord")
    manifest = tk.adopt(folder, class_pattern=r"^(\w+)\.tfrecord$")
    assert manifest.class_names == ("cat", "dog", "emu", "fox", "gnu", "hen")
    manifest = tk.adopt(folder, class_pattern=r"^\w+", overwrite=True,
                        class_names=["hen", "gnu", "fox", "emu", "dog", "cat"])
    by_file = {s.file: s.class_id for s in manifest.splits["train"].shards}
    assert by_file["hen.tfrecord"] == 0 and by_file["cat.tfrecord"] == 5


def test_bad_patterns_and_names_write_nothing(tmp_path):
    folder = tmp_path / "raw"
    unlabelled_files(folder, per_file=1)
    with pytest.raises(DatasetError, match=r"class_0-0\.tfrecord: its name does not give"):
        tk.adopt(folder, class_pattern=r"kind_(\d+)")
    with pytest.raises(DatasetError, match="not a regular expression"):
        tk.adopt(folder, class_pattern=r"class_(\d+")
    with pytest.raises(DatasetError,
                       match=r"class_3-0\.tfrecord: class '3' .* not among the 3 class names"):
        tk.adopt(folder, class_pattern=r"class_(\d+)", class_names=["a", "b", "c"])
    with pytest.raises(DatasetError, match="already hold a feature 'caption'"):
        tk.adopt(folder, class_pattern=r"class_(\d+)", label_feature="caption")
    assert not (folder / "dataset.json").exists()
    assert not list(folder.glob("*.index"))


def test_a_label_from_the_shard_is_only_valid_where_shards_have_classes(adopted, tmp_path):
    folder, _, _ = adopted
    data = json.loads((folder / "dataset.json").read_text())
    mixed = json.loads(json.dumps(data))
    mixed["layout"] = "mixed"
    with pytest.raises(DatasetError, match="label_feature"):
        tk.Manifest.from_json(mixed)
    classless = json.loads(json.dumps(data))
    del classless["splits"]["train"]["shards"][0]["class_id"]
    with pytest.raises(DatasetError, match=r"no class_id.*shards\[0\]"):
        tk.Manifest.from_json(classless)
    old = json.loads(json.dumps(data))
    old["format_version"] = 2
    with pytest.raises(DatasetError, match="version 3"):
        tk.Manifest.from_json(old)
    schema = tk.Schema({"x": tk.Scalar("float32"),
                        "label": tk.ClassLabel(["a", "b"], from_shard=True)})
    with pytest.raises(SchemaError, match="from_shard"):
        tk.write_dataset([{"x": 1.0, "label": 0}], tmp_path / "ds", schema)
    with pytest.raises(SchemaError, match="not written into records"):
        schema.encode({"x": 1.0, "label": 0})
    with pytest.raises(DatasetError, match="only a dataset's manifest gives"):
        tk.load_tf_dataset(str(folder / "*.tfrecord"),
                           read=tk.ReadOptions(schema=tk.load_manifest(folder).schema))
    with pytest.raises(SchemaError, match="only one class label"):
        tk.Schema({"a": tk.ClassLabel(["x"], from_shard=True),
                   "b": tk.ClassLabel(["y"], from_shard=True)})
