"""``schema=`` in every loader: the class-balanced ones and ``adopt`` take it too, read through
the same plan (shards checked against the manifest, the schema against the records)."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_image, photos


def _pixels(value):
    """Images of a batch: the array, or the padded values of images of several sizes."""
    return value["values"] if isinstance(value, dict) else np.asarray(value)


@pytest.fixture(scope="module")
def mixed_channels(tmp_path_factory):
    """A per-class dataset written by another tool: grey and colour JPEGs, no channels
    promised, adopted with its inferred schema."""
    root = tmp_path_factory.mktemp("pk")
    shots = photos()
    files = []
    for c in range(4):
        path = root / f"class_{c}.tfrecord"
        with tk.RecordWriter(path) as writer:
            for i in range(6):
                pixels = (shots["camera"] if i % 3 == 0 else shots["astronaut"])[:16, :16]
                writer.write(tk.encode_example({"image": [encode_image(pixels, "JPEG")],
                                                "label": [c]}))
        files.append(str(path))
    tk.adopt(files, root / "ds")
    return root / "ds"


def test_pk_and_triplets_read_with_a_given_schema(mixed_channels):
    grey = tk.Schema({"image": tk.Image("jpeg", channels=1, dims=False),
                      "label": tk.ClassLabel(["0", "1", "2", "3"])})
    batch = next(iter(tk.load_numpy_dataset(mixed_channels, sampling=tk.PK(2, 3),
                                            read=tk.ReadOptions(schema=grey))))
    assert _pixels(batch["image"]).shape[-1] == 1
    default = next(iter(tk.load_numpy_dataset(mixed_channels, sampling=tk.PK(2, 3))))
    assert _pixels(default["image"]).shape[-1] == 3  # adopt: grey among colour as colour
    np.testing.assert_array_equal(batch["__class"], default["__class"])
    triplet = next(iter(tk.load_numpy_dataset(mixed_channels, batch_size=4, sampling=tk.Triplets(),
                                              read=tk.ReadOptions(schema=grey))))
    assert _pixels(triplet["anchor"]["image"]).shape[-1] == 1


def test_a_schema_the_records_do_not_fit_is_refused_before_training(mixed_channels):
    wrong = tk.Schema({"pixels": tk.Image("jpeg", dims=False),
                       "label": tk.ClassLabel(["0", "1", "2", "3"])})
    with pytest.raises(tk.DatasetError, match=r"records lack \['pixels'\]"):
        tk.load_numpy_dataset(mixed_channels, sampling=tk.PK(2, 2),
                              read=tk.ReadOptions(schema=wrong))
    with pytest.raises(tk.DatasetError, match="schema mismatch"):
        next(iter(tk.load_numpy_dataset(mixed_channels, batch_size=2, sampling=tk.Triplets(),
                                   read=tk.ReadOptions(schema=wrong))))


@pytest.mark.integration
def test_tf_pk_and_torch_pk_take_it_too(mixed_channels):
    pytest.importorskip("tensorflow")
    grey = tk.Schema({"image": tk.Image("jpeg", channels=1, dims=False),
                      "label": tk.ClassLabel(["0", "1", "2", "3"])})
    ds = tk.load_tf_dataset(mixed_channels, sampling=tk.PK(2, 3), read=tk.ReadOptions(schema=grey))
    batch = next(iter(ds))
    assert _pixels(tf_numpy(batch["image"])).shape[-1] == 1
    torch = pytest.importorskip("torch")
    loader = tk.load_torch_dataset(mixed_channels, sampling=tk.PK(2, 3),
                                   read=tk.ReadOptions(schema=grey))
    first = next(iter(torch.utils.data.DataLoader(loader, batch_size=None)))
    assert _pixels(first["image"]).shape[-1] == 1


def tf_numpy(value):
    return {k: v.numpy() for k, v in value.items()} if isinstance(value, dict) else value.numpy()


def test_adopt_with_a_given_schema(tmp_path):
    with tk.RecordWriter(tmp_path / "f.tfrecord") as writer:
        for i in range(30):
            writer.write(tk.encode_example({"x": [float(i)] * 3, "label": [i % 3],
                                            "note": [b"n"]}))
    schema = tk.Schema({"x": tk.Sequence(tk.Scalar("float32")),
                        "label": tk.ClassLabel(["a", "b", "c"])})
    manifest = tk.adopt(str(tmp_path / "f.tfrecord"), tmp_path / "ds", schema=schema)
    assert manifest.schema == schema and manifest.label_feature == "label"
    assert manifest.class_names == ("a", "b", "c")
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=30, sampling=tk.InOrder())))
    assert set(batch) >= {"x", "label"} and "note" not in batch
    assert batch["x"]["values"].shape == (30, 3)
    bad = tk.Schema({"x": tk.Scalar("float32")})  # three values per record, not one
    with pytest.raises(tk.DatasetError, match="can't read"):
        tk.adopt(str(tmp_path / "f.tfrecord"), tmp_path / "bad", schema=bad)
    assert not (tmp_path / "bad" / "dataset.json").exists()
