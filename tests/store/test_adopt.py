"""``adopt``: TFRecord files written by plain TensorFlow become a dataset without being
rewritten: per-class files (the tutorial's class_<k>.tfrecord) get the per-class layout and
P×K sampling, every reader returns the records' own values, and bad input writes nothing."""

from __future__ import annotations

import hashlib
import io
import json
import os

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tests.datasets import encode_image, own, photos
from tfrecordkit import CorruptRecordError, DatasetError
from tfrecordkit.cli import main

tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.integration


def _feature(value):
    if isinstance(value, bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
    if isinstance(value, float):
        return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))
    if isinstance(value, list):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=value))
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def write_tf(path, rows):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for row in rows:
            example = tf.train.Example(features=tf.train.Features(
                feature={k: _feature(v) for k, v in row.items()}))
            writer.write(example.SerializeToString())


def tutorial_files(folder, classes=30, per_class=5):
    """One file per class, as the tutorial writes them: JPEG bytes, label, a caption, a score
    and a variable-length list."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = list(photos().values())
    rows = {}
    for k in range(classes):
        made = []
        for i in range(per_class):
            pixels = sources[(k + i) % len(sources)][:20 + i, :24]
            made.append({"image": encode_image(pixels, "JPEG"), "label": k,
                         "caption": f"class {k} photo {i}".encode(), "score": k + i / 10,
                         "tags": list(range(i))})
        write_tf(folder / f"class_{k}.tfrecord", made)
        rows[k] = made
    return rows


def digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in folder.iterdir() if p.name.endswith(".tfrecord")}


def test_per_class_files_become_a_per_class_dataset(tmp_path):
    rows = tutorial_files(tmp_path / "raw")
    before = digests(tmp_path / "raw")
    manifest = tk.adopt(tmp_path / "raw")
    assert digests(tmp_path / "raw") == before  # not rewritten
    assert manifest.layout == "per_class" and manifest.label_feature == "label"
    split = manifest.splits["train"]
    assert split.records == 150 and len(split.class_counts) == 30
    schema = manifest.schema
    # Grey and colour photos: every image decodes to 3 channels, as a conversion decides.
    assert schema["image"] == tk.Image("jpeg", channels=3, dims=False)
    assert schema["label"] == tk.ClassLabel([str(k) for k in range(30)])
    assert isinstance(schema["caption"], tk.Text)
    assert schema["score"] == tk.Scalar("float32")
    assert schema["tags"] == tk.Sequence(tk.Scalar("int64"))
    assert all((tmp_path / "raw" / (s.file + ".index")).exists() for s in split.shards)

    def pixels(data):
        return np.asarray(PILImage.open(io.BytesIO(data)).convert("RGB"))

    # PxK batches: K images of each of P classes, each the pixels the files hold.
    batch = next(tk.load_numpy_dataset(tmp_path / "raw", sampling=tk.PK(6, 3), seed=0,
                                       options=tk.DecodeOptions(padding="ragged")).batches(1))
    for image, label, caption in zip(batch["image"], batch["label"], batch["caption"],
                                     strict=True):
        i = int(caption.split()[-1])
        assert np.array_equal(image, pixels(rows[int(label)][i]["image"]))
    assert len(set(batch["label"].tolist())) == 6
    # Sequential readers: every record, the same values in NumPy and tf.data.
    seen = {}
    for b in tk.load_numpy_dataset(tmp_path / "raw", batch_size=10,
                                   sampling=tk.InOrder(),
                                   options=tk.DecodeOptions(padding="ragged")):
        for j, caption in enumerate(b["caption"]):
            seen[caption] = (b["image"][j], int(b["label"][j]), float(b["score"][j]),
                             list(b["tags"][j]))
    assert len(seen) == 150
    for k, made in rows.items():
        for row in made:
            image, label, score, tags = seen[row["caption"].decode()]
            assert label == k and score == np.float32(row["score"]) and tags == row["tags"]
            assert np.array_equal(image, pixels(row["image"]))
    for example in tk.load_tf_dataset(tmp_path / "raw", sampling=tk.InOrder()).take(20):
        image, label, _, _ = seen[example["caption"].numpy().decode()]
        assert np.array_equal(own(example["image"]), image)
        assert int(example["label"]) == label


def test_mixed_files_and_an_output_folder_elsewhere(tmp_path):
    (tmp_path / "raw").mkdir()
    for part in range(3):
        write_tf(tmp_path / "raw" / f"part-{part}.tfrecord",
                 [{"x": float(i), "y": (i + part) % 4} for i in range(40)])
    manifest = tk.adopt(str(tmp_path / "raw" / "part-*.tfrecord"), tmp_path / "ds",
                        label_feature="y", class_names=["a", "b", "c", "d"], split="val")
    assert manifest.layout == "mixed" and manifest.class_names == ("a", "b", "c", "d")
    assert manifest.splits["val"].class_counts == {"0": 30, "1": 30, "2": 30, "3": 30}
    linked = tmp_path / "ds" / "part-0.tfrecord"
    assert os.stat(linked).st_ino == os.stat(tmp_path / "raw" / "part-0.tfrecord").st_ino
    batch = next(tk.load_numpy_dataset(tmp_path / "ds", "val", sampling=tk.PK(4, 5),
                                       seed=1).batches(1))
    assert sorted(set(batch["__class"].tolist())) == [0, 1, 2, 3]
    # The label feature keeps its name and values; "label" is no feature here.
    assert "label" not in batch and (batch["y"] == batch["__class"]).all()
    for x, y in zip(batch["x"], batch["__class"], strict=True):
        assert int(y) in {(int(x) + part) % 4 for part in range(3)}


def test_bad_input_writes_nothing(tmp_path):
    tutorial_files(tmp_path / "raw", classes=3, per_class=4)
    shard = tmp_path / "raw" / "class_1.tfrecord"
    data = bytearray(shard.read_bytes())
    data[40] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match=r"class_1\.tfrecord"):
        tk.adopt(tmp_path / "raw")
    assert not (tmp_path / "raw" / "dataset.json").exists()
    tutorial_files(tmp_path / "ok", classes=3, per_class=4)
    with pytest.raises(DatasetError, match="class id 2 found, but only 2 class names"):
        tk.adopt(tmp_path / "ok", class_names=["a", "b"])
    tk.adopt(tmp_path / "ok")
    with pytest.raises(DatasetError, match="already holds a dataset with split 'train'"):
        tk.adopt(tmp_path / "ok")
    with tk.RecordWriter(tmp_path / "ok" / "more.tfrecord", "gzip") as writer:
        writer.write(b"compressed, unlike the others")  # the bytes say so, not the name
    with pytest.raises(DatasetError, match="mix compressions"):
        tk.adopt(tmp_path / "ok", overwrite=True)


def test_a_truncated_file_is_named_and_nothing_is_written(tmp_path):
    tutorial_files(tmp_path / "raw", classes=3, per_class=4)
    shard = tmp_path / "raw" / "class_2.tfrecord"
    shard.write_bytes(shard.read_bytes()[:-7])
    with pytest.raises(CorruptRecordError, match=r"class_2\.tfrecord"):
        tk.adopt(tmp_path / "raw")
    assert not (tmp_path / "raw" / "dataset.json").exists()


def test_gzip_files_are_adopted_with_indexes_and_read_by_every_reader(tmp_path):
    (tmp_path / "gz").mkdir()
    options = tf.io.TFRecordOptions(compression_type="GZIP")
    for part in range(2):
        with tf.io.TFRecordWriter(str(tmp_path / "gz" / f"p{part}.tfrecord.gz"),
                                  options) as writer:
            for i in range(25):
                example = tf.train.Example(features=tf.train.Features(feature={
                    "x": _feature(float(i + 100 * part)), "label": _feature(i % 5)}))
                writer.write(example.SerializeToString())
    manifest = tk.adopt(tmp_path / "gz")
    assert manifest.compression == "gzip" and manifest.layout == "mixed"
    # Indexes of decompressed offsets (no restart points: their files are not rewritten).
    assert all(s.index and not s.restarts for s in manifest.splits["train"].shards)
    assert json.loads((tmp_path / "gz" / "dataset.json").read_text())["format_version"] == 6
    assert manifest.splits["train"].class_counts == {str(c): 10 for c in range(5)}
    expected = sorted((float(i + 100 * p), i % 5) for p in range(2) for i in range(25))
    got = sorted((float(e["x"]), int(e["label"]))
                 for e in tk.load_tf_dataset(tmp_path / "gz", sampling=tk.InOrder()))
    assert got == expected
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "gz", batch_size=50)))
    assert sorted(zip(batch["x"].tolist(), batch["label"].tolist(), strict=True)) == expected


def test_the_command_line(tmp_path, capsys):
    tutorial_files(tmp_path / "raw", classes=4, per_class=2)
    assert main(["adopt", str(tmp_path / "raw"), "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["layout"] == "per_class" and out["splits"]["train"]["records"] == 8
    assert main(["verify", str(tmp_path / "raw"), "-q"]) == 0


def test_files_of_another_split_join_the_dataset(tmp_path):
    """The tutorial's train/ and val/ files become one dataset with two splits: the second
    adopt takes the dataset's schema, label and class names (val has fewer classes)."""
    rows = tutorial_files(tmp_path / "train", classes=6, per_class=3)
    val_rows = tutorial_files(tmp_path / "val", classes=4, per_class=2)
    tk.adopt(tmp_path / "train", tmp_path / "ds")
    before = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    with pytest.raises(DatasetError, match="already holds a dataset with split 'train'"):
        tk.adopt(tmp_path / "val", tmp_path / "ds")
    for name in ("val_a", "val_b"):
        (tmp_path / name).mkdir()
    # Records the dataset's schema can't read, and an unlabelled class pattern: refused,
    # and nothing changes.
    write_tf(tmp_path / "val_a" / "other.tfrecord", [{"x": 1.0, "label": 0}])
    with pytest.raises(DatasetError, match=r"schema can't read .*other\.tfrecord"):
        tk.adopt(tmp_path / "val_a", tmp_path / "ds", split="val")
    with pytest.raises(DatasetError, match="its records hold their labels"):
        tk.adopt(tmp_path / "val", tmp_path / "ds", split="val", class_pattern=r"(\d+)")
    assert json.loads((tmp_path / "ds" / "dataset.json").read_text()) == before
    assert not (tmp_path / "ds" / "other.tfrecord").exists()

    manifest = tk.adopt(tmp_path / "val", tmp_path / "ds", split="val")
    assert sorted(manifest.splits) == ["train", "val"]
    assert manifest.to_json()["splits"]["train"] == before["splits"]["train"]
    # val's class_0.tfrecord joins train's under another name.
    assert {s.file for s in manifest.splits["val"].shards} == {
        f"val-class_{k}.tfrecord" for k in range(4)}
    assert manifest.class_names == tuple(str(k) for k in range(6))
    assert manifest.splits["val"].class_counts == {str(k): 2 for k in range(4)}
    assert manifest.layout == "per_class"
    got = {(e["caption"].numpy().decode(), int(e["label"]))
           for e in tk.load_tf_dataset(tmp_path / "ds", "val", sampling=tk.InOrder())}
    assert got == {(r["caption"].decode(), k) for k, made in val_rows.items() for r in made}
    batch = next(tk.load_numpy_dataset(tmp_path / "ds", "train", sampling=tk.PK(6, 2),
                                       options=tk.DecodeOptions(features=["label"])).batches(1))
    assert sorted(set(batch["label"].tolist())) == sorted(rows)
    assert main(["verify", str(tmp_path / "ds"), "-q"]) == 0


def test_one_image_size_is_found_by_the_scan_and_kept_only_if_a_new_split_shares_it(tmp_path):
    image = photos()["chelsea"]
    for split, size in (("train", 24), ("val", 24), ("test", 20)):
        (tmp_path / split).mkdir()
        write_tf(tmp_path / split / f"{split}.tfrecord",
                 [{"image": encode_image(image[i : i + size, :size], "PNG"), "label": i % 2}
                  for i in range(6)])
    manifest = tk.adopt(tmp_path / "train", tmp_path / "ds")
    assert manifest.schema["image"] == tk.Image("png", channels=3, dims=False, size=(24, 24))
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=3)))
    assert batch["image"].shape == (3, 24, 24, 3)
    assert tk.adopt(tmp_path / "val", tmp_path / "ds", split="val").schema["image"].size == (
        24, 24)
    manifest = tk.adopt(tmp_path / "test", tmp_path / "ds", split="test")
    assert manifest.schema["image"].size is None
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "ds", "test", batch_size=3)))
    assert batch["image"]["values"].shape == (3, 20, 20, 3)


def test_a_class_pattern_dataset_takes_a_split_by_the_same_names(tmp_path):
    from tests.datasets import class_of, unlabelled_files

    unlabelled_files(tmp_path / "train", per_file=2)
    unlabelled_files(tmp_path / "val", per_file=1)
    for extra in (tmp_path / "val").glob("class_[45]-*"):
        extra.unlink()
    tk.adopt(tmp_path / "train", tmp_path / "ds", class_pattern=r"class_(\d+)")
    with pytest.raises(DatasetError, match="its classes come from file names"):
        tk.adopt(tmp_path / "val", tmp_path / "ds", split="val")
    manifest = tk.adopt(tmp_path / "val", tmp_path / "ds", split="val",
                        class_pattern=r"class_(\d+)")
    assert manifest.class_names == tuple(str(k) for k in range(6))
    for batch in tk.load_numpy_dataset(tmp_path / "ds", "val", batch_size=2,
                                       options=tk.DecodeOptions(features=["caption", "label"])):
        assert batch["label"].tolist() == [class_of(c) for c in batch["caption"]]


def test_a_split_of_another_image_format_reads_alike_in_tf_data_and_numpy(tmp_path):
    """train/ holds PNGs, val/ JPEGs: the joined dataset must not promise PNG, or tf.data's
    PNG decoder would meet JPEG bytes; both readers give the same pixels."""
    image = photos()["coffee"]
    for split, fmt in (("train", "PNG"), ("val", "JPEG")):
        (tmp_path / split).mkdir()
        write_tf(tmp_path / split / f"{split}.tfrecord",
                 [{"image": encode_image(image[i : i + 16, :16], fmt), "label": i % 2}
                  for i in range(4)])
    assert tk.adopt(tmp_path / "train", tmp_path / "ds").schema["image"].encoding == "png"
    manifest = tk.adopt(tmp_path / "val", tmp_path / "ds", split="val")
    assert manifest.schema["image"].encoding == "auto"
    for split in ("train", "val"):
        numpy_pixels = next(iter(tk.load_numpy_dataset(tmp_path / "ds", split, batch_size=4,
                                                       sampling=tk.InOrder())))["image"]
        tf_pixels = next(iter(tk.load_tf_dataset(tmp_path / "ds", split, batch_size=4,
                                                 sampling=tk.InOrder()))
                         )["image"].numpy()
        assert np.array_equal(numpy_pixels, tf_pixels)


def test_a_join_that_fails_on_a_corrupt_file_leaves_nothing_so_a_retry_works(tmp_path):
    """A corrupt record found mid-scan (in a file the schema sample skips): the links and
    index files made so far are removed, so the dataset folder is as it was and the same
    join succeeds once the file is fixed."""
    tutorial_files(tmp_path / "train", classes=12, per_class=2)
    tutorial_files(tmp_path / "val", classes=12, per_class=2)
    tk.adopt(tmp_path / "train", tmp_path / "ds")
    before = sorted(p.name for p in (tmp_path / "ds").iterdir())
    shard = tmp_path / "val" / "class_7.tfrecord"  # the sample: 8 first files and the last
    good = shard.read_bytes()
    data = bytearray(good)
    data[40] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match=r"class_7\.tfrecord"):
        tk.adopt(tmp_path / "val", tmp_path / "ds", split="val")
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == before
    assert not list((tmp_path / "val").glob("*.index"))
    shard.write_bytes(good)
    manifest = tk.adopt(tmp_path / "val", tmp_path / "ds", split="val")
    assert manifest.splits["val"].records == 24


def test_adopt_describes_what_the_sample_missed(tmp_path):
    """The schema comes from every record: a key first seen after the sample, and a list
    longer late than in the sample, are described; every record reads back."""
    (tmp_path / "raw").mkdir()
    rows = [{"x": float(i), "tags": [i, i + 1]} for i in range(3000)]
    rows[2500]["late"] = b"only here"
    rows[2900]["tags"] = list(range(7))
    write_tf(tmp_path / "raw" / "part-0.tfrecord", rows)
    manifest = tk.adopt(str(tmp_path / "raw" / "*.tfrecord"), tmp_path / "ds")
    assert "late" in manifest.schema
    batches = list(tk.load_numpy_dataset(tmp_path / "ds", batch_size=500, sampling=tk.InOrder()))
    lengths = np.concatenate([b["tags"]["lengths"][:, 0] for b in batches])
    assert lengths[2900] == 7 and lengths[0] == 2
    late = [v for b in batches for row in b["late"]["values"].tolist() for v in row if v]
    assert late == [b"only here"]
    counts = np.concatenate([b["late"]["lengths"][:, 0] for b in batches])
    assert counts.sum() == 1 and counts[2500] == 1
