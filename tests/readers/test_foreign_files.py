"""Files tfrecordkit did not write (a plain TensorFlow script's, as the tutorials write them),
read by every reader: the TF-free loaders return what load_tf_dataset returns."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_image, own, photos
from tfrecordkit import DecodeOptions
from tfrecordkit.errors import DatasetError, SchemaError
from tfrecordkit.readers.grain_source import load_grain_source
from tfrecordkit.readers.numpy_data import load_numpy_dataset

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
tf_data = pytest.importorskip("tfrecordkit.readers.tf_data")

N = 30


@pytest.fixture(scope="module")
def tutorial_files(tmp_path_factory):
    """Two files written the way TensorFlow's TFRecord tutorial writes them."""
    root = tmp_path_factory.mktemp("foreign")
    pictures = [encode_image(p, "JPEG") for p in photos().values() if p.ndim == 3]

    def feature(**kwargs):
        return tf.train.Feature(**kwargs)

    for part in range(2):
        with tf.io.TFRecordWriter(str(root / f"part-{part}.tfrecord")) as writer:
            for i in range(part * N // 2, (part + 1) * N // 2):
                example = tf.train.Example(features=tf.train.Features(feature={
                    "image_raw": feature(bytes_list=tf.train.BytesList(
                        value=[pictures[i % len(pictures)]])),
                    "label": feature(int64_list=tf.train.Int64List(value=[i % 4])),
                    "bbox": feature(float_list=tf.train.FloatList(
                        value=[i / 10, 0.25, 0.5, 1.0])),
                    "tokens": feature(int64_list=tf.train.Int64List(value=list(range(i % 5)))),
                    "caption": feature(bytes_list=tf.train.BytesList(
                        value=[f"picture {i}".encode()])),
                }))
                writer.write(example.SerializeToString())
    return root


def test_numpy_loader_reads_them_like_tf_data(tutorial_files):
    pattern = str(tutorial_files / "*.tfrecord")
    loader = load_numpy_dataset(pattern, batch_size=N, sampling=tk.InOrder(),
                                options=DecodeOptions(padding="ragged"))
    assert len(loader) == 1
    (batch,) = list(loader)
    tf_rows = list(tf_data.load_tf_dataset(pattern, sampling=tk.InOrder())
                   .as_numpy_iterator())
    assert len(tf_rows) == N
    # tf.data interleaves the files; the loader goes file by file: match by caption.
    position = {caption: k for k, caption in enumerate(batch["caption"])}
    assert batch["caption"][:3] == [b"picture 0", b"picture 1", b"picture 2"]
    for row in tf_rows:
        k = position[row["caption"]]
        assert batch["label"][k] == row["label"] and batch["label"].dtype == np.int64
        assert np.array_equal(batch["bbox"][k], row["bbox"])
        assert batch["bbox"].dtype == np.float32
        assert np.array_equal(batch["tokens"][k], own(row["tokens"]))
        assert batch["caption"][k] == row["caption"]
        assert np.array_equal(batch["image_raw"][k], own(row["image_raw"]))  # decoded JPEG pixels


def test_image_size_on_foreign_images_matches_tf_data(tutorial_files):

    pattern = str(tutorial_files / "*.tfrecord")
    # fast_resize=False: full decode, then tf.image.resize's arithmetic (exact agreement).
    options = DecodeOptions(features=("image_raw",), image_size=(20, 24), fast_resize=False)
    (batch,) = list(load_numpy_dataset(pattern, batch_size=N, sampling=tk.InOrder(),
                                       options=options))
    tf_rows = list(tf_data.load_tf_dataset(pattern, sampling=tk.InOrder(), image_size=(20, 24),
                                           options=tk.DecodeOptions(features=["image_raw"]))
                   .as_numpy_iterator())
    assert batch["image_raw"].shape == (N, 20, 24, 3)
    mine = sorted(image.tobytes() for image in batch["image_raw"])
    assert mine == sorted(row["image_raw"].tobytes() for row in tf_rows)


def test_grain_source_and_order_over_foreign_files(tutorial_files):
    source = load_grain_source(str(tutorial_files / "*.tfrecord"),
                               options=tk.DecodeOptions(features=["label", "bbox"]))
    assert len(source) == N
    assert [int(source[i]["label"]) for i in range(N)] == [i % 4 for i in range(N)]
    shuffled = load_numpy_dataset(str(tutorial_files / "*.tfrecord"), batch_size=10,
                                  sampling=tk.Shuffled(exact=True), seed=1,
                                  options=tk.DecodeOptions(features=["label"]))
    ids = np.concatenate([b["__id"] for b in shuffled])
    assert sorted(ids.tolist()) == list(range(N))


def test_bad_foreign_inputs_are_one_clear_error(tutorial_files, tmp_path):
    with pytest.raises(DatasetError, match="no TFRecord files match"):
        load_numpy_dataset(str(tmp_path / "*.tfrecord"), batch_size=2)
    with pytest.raises(DatasetError, match="unknown features"):
        load_numpy_dataset(str(tutorial_files / "*.tfrecord"), batch_size=2,
                           options=tk.DecodeOptions(features=["nope"]))
    # A record whose bbox has another length than the sample showed names record and key.
    odd = tmp_path / "odd.tfrecord"
    with tf.io.TFRecordWriter(str(odd)) as writer:
        for count in [4] * 1000 + [3]:  # the schema is inferred from the first 1,000
            example = tf.train.Example(features=tf.train.Features(feature={
                "bbox": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5] * count))}))
            writer.write(example.SerializeToString())
    loader = load_numpy_dataset(str(odd), batch_size=1001, sampling=tk.InOrder())
    with pytest.raises(SchemaError, match=r"record 1000 .*byte \d+ of .*odd.tfrecord\).*'bbox'"):
        list(loader)


def test_load_tf_dataset_takes_the_same_options_object(tutorial_files):

    pattern = str(tutorial_files / "*.tfrecord")
    options = DecodeOptions(features=("label", "image_raw"), image_size=(8, 8))
    by_object = list(tf_data.load_tf_dataset(pattern, sampling=tk.InOrder(),
                                             options=options).as_numpy_iterator())
    by_keywords = list(tf_data.load_tf_dataset(
        pattern, sampling=tk.InOrder(), image_size=(8, 8),
        options=tk.DecodeOptions(features=["label", "image_raw"])).as_numpy_iterator())
    assert set(by_object[0]) == {"label", "image_raw", "__id"}
    for a, b in zip(by_object, by_keywords, strict=True):
        assert a["label"] == b["label"] and np.array_equal(a["image_raw"], b["image_raw"])
    # Keywords combine with the options; only a conflict is an error.
    raw = next(tf_data.load_tf_dataset(
        pattern, sampling=tk.InOrder(),
        options=dataclasses.replace(options, decode=False)).as_numpy_iterator())
    assert isinstance(raw["image_raw"], bytes)
    with pytest.raises(ValueError, match=r"image_size=\(4, 4\) conflicts with options"):
        tf_data.load_tf_dataset(pattern, options=options, image_size=4)


def test_truncated_foreign_files_are_one_clear_error(tutorial_files, tmp_path):
    from tfrecordkit import CorruptRecordError

    source = tutorial_files / "part-0.tfrecord"
    cut = tmp_path / "cut.tfrecord"
    data = source.read_bytes()
    cut.write_bytes(data[: len(data) - 7])  # the last record loses its tail
    with pytest.raises(CorruptRecordError, match=r"cut\.tfrecord"):
        load_numpy_dataset(str(cut), batch_size=2)


def test_grey_among_colour_jpegs_read_by_glob_as_colour_like_adopt(tmp_path):
    """A glob reads grey JPEGs among colour ones as colour (the most channels seen), as
    adopt's schema does; an explicit schema= gives the same pixels in every reader."""
    shots = photos()
    with tk.RecordWriter(tmp_path / "mixed.tfrecord") as writer:
        for i in range(8):
            pixels = shots["camera"][:20, :20] if i % 4 == 0 else shots["astronaut"][:20, :20]
            writer.write(tk.encode_example({"image": [encode_image(pixels, "JPEG")],
                                            "label": [i % 2]}))
    pattern = str(tmp_path / "*.tfrecord")
    globbed = next(iter(tk.load_numpy_dataset(pattern, batch_size=8, sampling=tk.InOrder())))
    assert globbed["image"]["values"].shape == (8, 20, 20, 3)
    assert tk.infer_schema(pattern)["image"] == tk.Image(channels=3, dims=False)
    schema = tk.Schema({"image": tk.Image("jpeg", channels=3, dims=False),
                        "label": tk.Scalar("int64")})
    batch = next(iter(tk.load_numpy_dataset(pattern, batch_size=8, sampling=tk.InOrder(),
                                            read=tk.ReadOptions(schema=schema))))
    assert batch["image"]["values"].shape[-1] == 3
    np.testing.assert_array_equal(globbed["image"]["values"], batch["image"]["values"])
    source = tk.load_grain_source(pattern, read=tk.ReadOptions(schema=schema))
    assert source[0]["image"]["values"].shape[-1] == 3
    torch = pytest.importorskip("torch")
    ds = tk.load_torch_dataset(pattern, batch_size=8, sampling=tk.InOrder(),
                               read=tk.ReadOptions(schema=schema))
    first = next(iter(torch.utils.data.DataLoader(ds, batch_size=None)))
    assert np.array_equal(first["image"]["values"].numpy(), batch["image"]["values"])
