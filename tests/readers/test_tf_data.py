"""load_tf_dataset against real TensorFlow: values equal the sources, batching, sharding, errors."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import digits_folder, encode_audio, encode_image, photos, tone
from tfrecordkit import DatasetError, DecodeOptions, ShardOptions
from tfrecordkit.convert import convert, write_dataset
from tfrecordkit.schema import Audio, ClassLabel, Image, Scalar, Schema, Sequence, Tensor, Text
from tfrecordkit.sources import ImageFolder, Table

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
tf_data = pytest.importorskip("tfrecordkit.readers.tf_data")
load_tf_dataset = tf_data.load_tf_dataset


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """Digits as PNG class folders, converted (4 shards); returns (dataset path, pixels)."""
    root = tmp_path_factory.mktemp("digits")
    pixels = digits_folder(root / "src", limit_per_class=30)
    convert(ImageFolder(root / "src"), root / "ds", shards=ShardOptions(num_shards=4), workers=1)
    return root / "ds", pixels


def all_records(ds) -> list[dict]:
    out = []
    for batch in ds:
        arrays = {k: v.numpy() if hasattr(v, "numpy") else v for k, v in batch.items()}
        size = len(next(iter(arrays.values())))
        out.extend({k: v[i] for k, v in arrays.items()} for i in range(size))
    return out


def test_decoded_images_equal_the_source_pixels(digits):
    path, pixels = digits
    ds = load_tf_dataset(path, batch_size=32, seed=0)
    assert ds.class_names == [str(i) for i in range(10)]
    # Every digit is 8x8: the manifest says so, and the shape is static.
    assert ds.element_spec["image"].shape.as_list() == [None, 8, 8, 1]
    assert len(ds) == math.ceil(300 / 32)
    sources = {px.tobytes(): int(Path(p).parent.name) for p, px in pixels.items()}
    records = all_records(ds)
    assert len(records) == 300
    for record in records:
        assert sources[record["image"][:, :, 0].tobytes()] == record["label"]


def test_variable_sizes_pad_and_ragged(tmp_path):
    images = photos()
    schema = Schema({"image": Image("auto"), "name": Text(), "label": ClassLabel(list(images))})
    rows = [{"image": encode_image(px, "PNG"), "name": n, "label": n} for n, px in images.items()]
    manifest = write_dataset(rows, tmp_path / "ds", schema,
                             shards=ShardOptions(compression="gzip")).manifest
    # Grey and colour images mixed: the conversion pins 3 channels, grey is replicated.
    assert manifest.schema["image"].channels == 3
    padded = next(iter(load_tf_dataset(tmp_path / "ds", batch_size=6, sampling=tk.InOrder())))
    assert set(padded["image"]) == {"values", "lengths"}
    lengths = padded["image"]["lengths"].numpy()
    padded = {**padded, "image": padded["image"]["values"]}
    assert padded["image"].shape[3] == 3
    tallest = max(px.shape[0] for px in images.values())
    widest = max(px.shape[1] for px in images.values())
    assert padded["image"].shape[1:3] == (tallest, widest)
    ragged = next(iter(load_tf_dataset(tmp_path / "ds", batch_size=6,
                                       options=DecodeOptions(padding="ragged"))))
    assert isinstance(ragged["image"], tf.RaggedTensor)
    for i in range(6):
        name = ragged["name"][i].numpy().decode()
        got = ragged["image"][i].to_tensor().numpy()
        source = images[name] if images[name].ndim == 3 else np.repeat(
            images[name][:, :, None], 3, axis=2)
        assert np.array_equal(got, source), name
        # Padded values hold the image in the top-left corner, zeros elsewhere.
        row = next(j for j in range(6) if padded["name"][j].numpy().decode() == name)
        h, w = source.shape[:2]
        assert lengths[row].tolist() == [h, w]
        canvas = padded["image"][row].numpy()
        assert np.array_equal(canvas[:h, :w], source)
        assert not canvas[h:].any() and not canvas[:, w:].any()


def test_jpeg_bytes_are_kept(tmp_path):
    folder = tmp_path / "src" / "coffee"
    folder.mkdir(parents=True)
    jpeg = encode_image(photos()["coffee"], "JPEG")
    (folder / "a.jpg").write_bytes(jpeg)
    convert(ImageFolder(tmp_path / "src"), tmp_path / "ds", workers=1)
    raw = next(iter(load_tf_dataset(tmp_path / "ds", options=tk.DecodeOptions(decode=False))))
    assert raw["image"].numpy() == jpeg
    decoded = next(iter(load_tf_dataset(tmp_path / "ds")))
    accurate = tf.io.decode_jpeg(jpeg, dct_method="INTEGER_ACCURATE")
    assert np.array_equal(decoded["image"].numpy(), accurate.numpy())


@pytest.mark.parametrize("padding", ["pad", "ragged"])
@pytest.mark.parametrize("compression", [None, "zlib"])
def test_tensors_text_sequences_round_trip(tmp_path, padding, compression):
    rng = np.random.default_rng(0)
    schema = Schema({
        "fixed": Tensor((2, 3), "float32"), "var": Tensor((None, 2), "int16"),
        "flag": Scalar("bool"), "score": Scalar("float32"), "text": Text(token_ids=True),
        "tags": Sequence(Scalar("int64")), "label": ClassLabel(["a", "b"]),
    })
    rows = [{
        "fixed": rng.normal(size=(2, 3)).astype(np.float32),
        "var": rng.integers(-99, 99, size=(i % 4 + 1, 2)).astype(np.int16),
        "flag": bool(i % 2), "score": float(i) / 3,
        "text": {"text": f"t{i}", "ids": list(range(i % 5))},
        "tags": list(range(i % 3)), "label": i % 2,
    } for i in range(23)]
    write_dataset(rows, tmp_path / "ds", schema,
                  shards=ShardOptions(compression=compression, num_shards=2))
    ds = load_tf_dataset(tmp_path / "ds", batch_size=5, sampling=tk.InOrder(),
                         options=DecodeOptions(padding=padding))
    by_text = {}
    for batch in ds:
        for i in range(batch["label"].shape[0]):
            text = batch["text"]["text"][i].numpy().decode()
            by_text[text] = {k: (v["values"][i] if isinstance(v, dict) and "values" in v
                                 else v[i] if k != "text" else v["ids"][i])
                             for k, v in batch.items()}
    assert len(by_text) == 23
    for i, row in enumerate(rows):
        got = by_text[f"t{i}"]
        assert np.array_equal(got["fixed"].numpy(), row["fixed"])
        # A ragged batch's row of a (None, 2) tensor is dense: the fixed dimension is static.
        var = got["var"].numpy()
        assert np.array_equal(var[: len(row["var"])], row["var"])
        assert bool(got["flag"]) == row["flag"] and got["label"] == row["label"]
        assert np.float32(got["score"]) == np.float32(row["score"])
        ids = got["text"].numpy()
        assert list(ids[: len(row["text"]["ids"])]) == row["text"]["ids"]
        assert list(np.asarray(got["tags"])[: len(row["tags"])]) == row["tags"]


@pytest.mark.parametrize("encoding", ["wav", "flac", "pcm"])
def test_audio_round_trips(tmp_path, encoding):
    rate = 8000
    clips = [tone(0.05 * (i + 1), rate, 220 * (i + 1)) for i in range(3)]
    if encoding == "pcm":
        values = [{"samples": c, "sample_rate": rate} for c in clips]
    else:
        values = [encode_audio(c, rate, encoding.upper()) for c in clips]
    schema = Schema({"audio": Audio(encoding, sample_rate=rate), "n": Scalar("int64")})
    write_dataset([{"audio": a, "n": i} for i, a in enumerate(values)], tmp_path / "ds", schema)
    batch = next(iter(load_tf_dataset(tmp_path / "ds", batch_size=3, sampling=tk.InOrder(),
                                      options=DecodeOptions(padding="ragged"))))
    for i in range(3):
        n = int(batch["n"][i])
        got = batch["audio"]["samples"][i].to_tensor().numpy()
        assert int(batch["audio"]["sample_rate"][i]) == rate
        tolerance = 0 if encoding == "pcm" else 1 / 32768
        assert got.shape == clips[n].shape
        assert np.allclose(got, clips[n], atol=tolerance)


def test_multimodal_table(tmp_path):
    images = photos()
    rows = []
    for i, (name, px) in enumerate(list(images.items())[:4]):
        (tmp_path / "img").mkdir(exist_ok=True)
        (tmp_path / "wav").mkdir(exist_ok=True)
        Path(tmp_path / "img" / f"{name}.png").write_bytes(encode_image(px, "PNG"))
        Path(tmp_path / "wav" / f"{name}.wav").write_bytes(
            encode_audio(tone(0.05, 8000, 300 + 50 * i), 8000, "WAV"))
        rows.append({"image_path": f"img/{name}.png", "caption": f"a photo of {name}",
                     "label": ["animal", "object"][i % 2], "audio_path": f"wav/{name}.wav"})
    table = tmp_path / "table.jsonl"
    table.write_text("\n".join(json.dumps(r) for r in rows))
    source = Table(table)
    schema = source.schema()
    assert isinstance(schema["image_path"], Image) and isinstance(schema["audio_path"], Audio)
    assert isinstance(schema["caption"], Text) and schema["label"] == ClassLabel(["animal",
                                                                                 "object"])
    convert(source, tmp_path / "ds", workers=2)
    ds = load_tf_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
                         options=DecodeOptions(padding="ragged"))
    batch = next(iter(ds))
    for i in range(4):
        caption = batch["caption"][i].numpy().decode()
        name = caption.removeprefix("a photo of ")
        source_px = images[name] if images[name].ndim == 3 else np.repeat(
            images[name][:, :, None], 3, axis=2)  # grey and colour mixed: 3 channels
        assert np.array_equal(batch["image_path"][i].to_tensor().numpy(), source_px)
        assert batch["audio_path"]["samples"][i].to_tensor().shape == (400, 1)
        assert int(batch["audio_path"]["sample_rate"][i]) == 8000
        index = [r["caption"] for r in rows].index(caption)
        assert ds.class_names[int(batch["label"][i])] == rows[index]["label"]


def test_keras_trains_and_loss_decreases(digits):
    path, _ = digits
    tf.keras.utils.set_random_seed(0)
    ds = load_tf_dataset(path, batch_size=16, seed=0, options=tk.DecodeOptions(as_supervised=True))
    model = tf.keras.Sequential([
        tf.keras.layers.Input((8, 8, 1)), tf.keras.layers.Rescaling(1 / 255),
        tf.keras.layers.Flatten(), tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(ds, epochs=3, verbose=0)
    losses = history.history["loss"]
    assert all(np.isfinite(losses))
    assert losses[-1] < losses[0] * 0.7


@pytest.mark.parametrize("num_shards", [4, 1])  # by file, then by record
def test_two_workers_see_every_record_once(tmp_path, num_shards):
    schema = Schema({"n": Scalar("int64")})
    write_dataset([{"n": i} for i in range(101)], tmp_path / "ds", schema,
                  shards=ShardOptions(num_shards=num_shards))
    seen = []
    for worker in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=worker,
                                             num_replicas_in_sync=2)
        ds = load_tf_dataset(tmp_path / "ds", batch_size=8,  # the global batch
                             partition=tk.Partition.from_input_context(context))
        batches = list(ds)
        # Each pipeline's share of every global batch; the last step wraps around, its
        # fillers marked as not valid, as in every reader.
        assert {len(b["n"]) for b in batches} == {4} and len(ds) == math.ceil(101 / 8)
        seen.extend(int(v) for b in batches
                    for v in b["n"].numpy()[b["__valid"].numpy()])
    assert sorted(seen) == list(range(101))
    with pytest.raises(tk.OptionError, match="global batch_size 9 must divide evenly"):
        load_tf_dataset(tmp_path / "ds", batch_size=9, partition=tk.Partition(0, 2))


def test_distribute_datasets_from_function(digits):
    path, _ = digits
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])

    def dataset_fn(context):
        return load_tf_dataset(path, batch_size=32,  # global: each pipeline takes its share
                               partition=tk.Partition.from_input_context(context),
                               options=tk.DecodeOptions(as_supervised=True))

    dist = strategy.distribute_datasets_from_function(dataset_fn)
    count = sum(int(tf.shape(y)[0]) for _, y in dist)
    assert count == 300


def test_seeded_shuffle_is_reproducible(digits):
    path, _ = digits

    def order(seed):
        ds = load_tf_dataset(path, batch_size=50, seed=seed)
        return [int(v) for b in ds for v in b["label"].numpy()]

    assert order(3) == order(3)
    assert order(3) != order(4)


def test_feature_subset_and_augmentation(digits):
    path, _ = digits
    ds = load_tf_dataset(path, batch_size=8, image_size=(12, 12),
                         options=tk.DecodeOptions(
                             features=["image"],
                             augment=[tf_data.random_flip(), tf_data.random_brightness(0.1),
                                      tf_data.random_crop((10, 10))]))
    batch = next(iter(ds))
    assert set(batch) == {"image", "__id", "__valid"}  # as every reader gives them
    assert batch["image"].shape == (8, 10, 10, 1) and batch["image"].dtype == tf.uint8


def _darken_bright(example):
    """A user's augmentation that branches on a tensor (AutoGraph turns it into tf.cond)."""
    image = example["image"]
    if tf.reduce_mean(tf.cast(image, tf.float32)) > 40.0:
        image = image // 2
    return {**example, "image": image}


def test_a_users_augmentation_may_branch_on_tensors(digits):
    """The library's own map functions are traced without AutoGraph (the first batch comes
    ~1.4 s sooner); augmentations passed in are still converted."""
    path, _ = digits
    plain = next(iter(load_tf_dataset(path, batch_size=16, sampling=tk.InOrder())))["image"]
    darker = next(iter(load_tf_dataset(path, batch_size=16, sampling=tk.InOrder(),
                                       options=tk.DecodeOptions(augment=_darken_bright))))["image"]
    plain, darker = _values(plain), _values(darker)
    for a, b in zip(plain, darker, strict=True):
        want = a // 2 if a.astype(np.float32).mean() > 40.0 else a
        np.testing.assert_array_equal(b, want)


def _values(images):
    values = images["values"] if isinstance(images, dict) else images
    return values.numpy()


def test_manifest_disagreements_fail_before_training(digits, tmp_path):
    path, _ = digits
    broken = tmp_path / "ds"
    shutil.copytree(path, broken)
    shard = sorted(broken.glob("train-*.tfrecord"))[0]
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(DatasetError, match=r"bytes, dataset\.json says"):
        load_tf_dataset(broken)
    shard.unlink()
    with pytest.raises(DatasetError, match=r"listed in dataset\.json but missing"):
        load_tf_dataset(broken)
    with pytest.raises(DatasetError, match="no split 'test'"):
        load_tf_dataset(path, "test")
    wrong = tmp_path / "wrong"
    shutil.copytree(path, wrong)
    manifest = json.loads((wrong / "dataset.json").read_text())
    manifest["schema"]["features"]["depth"] = {"kind": "scalar", "dtype": "float32"}
    (wrong / "dataset.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetError, match="schema mismatch"):
        load_tf_dataset(wrong)


def test_foreign_files_written_by_tensorflow(golden):
    ds = load_tf_dataset(str(golden / "examples.tfrecord"), batch_size=5, sampling=tk.InOrder(),
                         options=DecodeOptions(padding="ragged"))
    batch = next(iter(ds))
    assert batch["label"].numpy().tolist() == [0, 1, 2, 0, 1]
    assert batch["image"][0].to_tensor().shape == (8, 12, 3)
    assert batch["caption"][0].numpy() == b"a cat on a mat"
    assert isinstance(batch["scores"], tf.RaggedTensor)
