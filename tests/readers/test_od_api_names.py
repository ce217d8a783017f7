"""Feature names with '/' (the TF Object Detection API layout: ``image/encoded``,
``image/object/bbox/xmin``): written and read by every reader, and adopted from files plain
TensorFlow wrote, with ``image/encoded`` an Image and its size from ``image/height`` and
``image/width``."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tfrecordkit.readers.grain_source import load_grain_source

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")


def _png(height: int, width: int, level: int) -> bytes:
    buffer = io.BytesIO()
    PILImage.fromarray(np.full((height, width, 3), level, np.uint8)).save(buffer, "PNG")
    return buffer.getvalue()


def _od_example(i: int) -> bytes:
    height, width = 10 + i, 12
    boxes = [0.1 * k for k in range(i % 3)]

    def floats(values):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    def strings(values):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))

    return tf.train.Example(features=tf.train.Features(feature={
        "image/encoded": strings([_png(height, width, 10 * i)]),
        "image/format": strings([b"png"]),
        "image/filename": strings([f"img{i}.png".encode()]),
        "image/height": ints([height]), "image/width": ints([width]),
        "image/object/bbox/xmin": floats(boxes), "image/object/bbox/ymax": floats(boxes),
        "image/object/class/label": ints(list(range(len(boxes)))),
    })).SerializeToString()


@pytest.fixture
def od_files(tmp_path):
    folder = tmp_path / "od"
    folder.mkdir()
    with tf.io.TFRecordWriter(str(folder / "train.tfrecord")) as writer:
        for i in range(6):
            writer.write(_od_example(i))
    return folder


def test_adopted_od_api_files_read_alike_in_every_reader(od_files):
    manifest = tk.adopt(od_files)
    schema = manifest.schema
    assert isinstance(schema["image/encoded"], tk.Image)
    assert isinstance(schema["image/object/bbox/xmin"], tk.Sequence)
    numpy = next(iter(tk.load_numpy_dataset(od_files, batch_size=6, sampling=tk.InOrder(),
                                            options=tk.DecodeOptions(padding="ragged"))))
    assert numpy["image/height"].tolist() == [10 + i for i in range(6)]
    for i, pixels in enumerate(numpy["image/encoded"]):
        assert pixels.shape == (10 + i, 12, 3) and int(pixels[0, 0, 0]) == 10 * i
        # The size the image decodes to is the one image/height and image/width give.
        assert pixels.shape[:2] == (numpy["image/height"][i], numpy["image/width"][i])
    assert [len(b) for b in numpy["image/object/bbox/xmin"]] == [i % 3 for i in range(6)]
    from tfrecordkit.readers.tf_data import load_tf_dataset

    (tf_batch,) = list(load_tf_dataset(od_files, batch_size=6, sampling=tk.InOrder(),
                                       options=tk.DecodeOptions(padding="ragged")).as_numpy_iterator())
    assert tf_batch["image/height"].tolist() == numpy["image/height"].tolist()
    for i in range(6):
        assert np.array_equal(tf_batch["image/encoded"][i], numpy["image/encoded"][i])
        # (tf.data gives text as bytes, the NumPy loader as str: the reader-core issue)
        assert tf_batch["image/filename"][i].decode() == numpy["image/filename"][i]
    row = load_grain_source(od_files)[3]
    assert row["image/encoded"]["values"].shape == (13, 12, 3)
    assert row["image/encoded"]["lengths"].tolist() == [13, 12]


def test_write_dataset_takes_names_with_slashes(tmp_path):
    schema = tk.Schema({"image/encoded": tk.Image("png", dims=False),
                        "image/height": tk.Scalar("int64"),
                        "image/object/class/label": tk.Sequence(tk.Scalar("int64"))})
    rows = [{"image/encoded": _png(4, 5, i), "image/height": 4,
             "image/object/class/label": [i, i]} for i in range(4)]
    tk.write_dataset(rows, tmp_path / "ds", schema, shards=tk.ShardOptions(shuffle=False))
    parsed = tf.io.parse_single_example(
        tk.open_split(tmp_path / "ds")[2],
        {"image/encoded": tf.io.FixedLenFeature([], tf.string),
         "image/object/class/label": tf.io.VarLenFeature(tf.int64)})
    assert parsed["image/object/class/label"].values.numpy().tolist() == [2, 2]
    with pytest.raises(tk.SchemaError, match="also written by"):
        tk.Schema({"image": tk.Image("png"), "image/height": tk.Scalar("int64")})
