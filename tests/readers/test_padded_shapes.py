"""Fixed padded shapes, as the tutorials' ``padded_batch(padded_shapes=([256, None, 3], []))``:
per feature, ``None`` meaning the batch's longest, with padding values; tf.data and the NumPy
loader give the same values; a value larger than its shape is an error naming the feature."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import photos
from tfrecordkit import DatasetError, SchemaError


def write(tmp_path):
    images = [img if img.ndim == 3 else np.repeat(img[:, :, None], 3, axis=2)
              for img in photos().values()]
    rng = np.random.default_rng(0)
    rows = []
    for i in range(12):
        image = images[i % len(images)][: 40 + 9 * i, : 30 + 11 * i]
        rows.append({"image": image, "v": rng.integers(0, 9, size=1 + i % 5).astype(np.int32),
                     "n": i})
    schema = tk.Schema({"image": tk.Image("png", channels=3), "v": tk.Tensor((None,), "int32"),
                        "n": tk.Scalar("int64")})
    tk.write_dataset(rows, tmp_path / "ds", schema, shards=tk.ShardOptions(shuffle=False))
    return {r["n"]: r for r in rows}


SHAPES = {"image": (160, None, 3), "v": (6,)}
FILLS = {"v": -1}


def test_numpy_batches_pad_to_the_given_shapes(tmp_path):
    rows = write(tmp_path)
    options = tk.DecodeOptions(padded_shapes=SHAPES, padding_values=FILLS)
    for batch in tk.load_numpy_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
                                       options=options):
        images, v = batch["image"], batch["v"]
        widest = max(rows[int(n)]["image"].shape[1] for n in batch["n"])
        assert images["values"].shape == (4, 160, widest, 3)
        assert v["values"].shape == (4, 6)
        for i, n in enumerate(batch["n"]):
            row = rows[int(n)]
            h, w, _ = row["image"].shape
            assert tuple(images["lengths"][i]) == (h, w)  # the dimensions that vary
            assert np.array_equal(images["values"][i, :h, :w], row["image"])
            assert not images["values"][i, h:].any() and not images["values"][i, :, w:].any()
            k = len(row["v"])
            assert list(v["values"][i, :k]) == list(row["v"]) and set(v["values"][i, k:]) <= {-1}


@pytest.mark.integration
def test_tf_data_pads_the_same_way(tmp_path):
    pytest.importorskip("tensorflow")
    write(tmp_path)
    options = tk.DecodeOptions(padded_shapes=SHAPES, padding_values=FILLS)
    want = list(tk.load_numpy_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
                                      options=options))
    got = list(tk.load_tf_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
                                  options=options))
    assert len(got) == len(want) == 3
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a["n"].numpy(), b["n"])
        for name in ("image", "v"):  # one structure: values and lengths
            assert np.array_equal(a[name]["values"].numpy(), b[name]["values"])
            assert np.array_equal(a[name]["lengths"].numpy(), b[name]["lengths"])
        assert a["image"]["values"].shape[1] == 160


def test_a_value_larger_than_its_shape_is_named(tmp_path):
    write(tmp_path)
    options = tk.DecodeOptions(padded_shapes={"image": (45, None, 3)})
    with pytest.raises(SchemaError, match=r"'image'.*larger than the padded shape"):
        list(tk.load_numpy_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
                                   options=options))


@pytest.mark.integration
def test_a_value_larger_than_its_shape_fails_in_tf_data_naming_the_feature(tmp_path):
    tf = pytest.importorskip("tensorflow")
    write(tmp_path)
    ds = tk.load_tf_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
                            options=tk.DecodeOptions(padded_shapes={"image": (45, None, 3)}))
    # TensorFlow's assertion, met in Python, comes back as the TF-free reader's error.
    with pytest.raises(tk.SchemaError, match=r"(?s)'image'.*larger than the padded shape.*"
                                             r"a value is larger than its padded shape") as err:
        list(ds)
    assert isinstance(err.value.__cause__, tf.errors.InvalidArgumentError)


def test_bad_shapes_are_refused_before_reading(tmp_path):
    write(tmp_path)
    with pytest.raises(ValueError, match=r"positive sizes or None"):
        tk.DecodeOptions(padded_shapes={"image": (0, None, 3)})
    with pytest.raises(ValueError, match="needs padding='pad'"):
        tk.DecodeOptions(padded_shapes={"v": (4,)}, padding="ragged")
    with pytest.raises(DatasetError, match=r"\['nope'\]"):
        tk.load_numpy_dataset(tmp_path / "ds", batch_size=4,
                              options=tk.DecodeOptions(padded_shapes={"nope": (3,)}))
