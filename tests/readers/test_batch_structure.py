"""Every batch of a feature has one structure, whatever records it holds: a feature whose
schema leaves its shape open is always padded with lengths (or listed, ragged), even in a
batch whose values happen to agree; a fixed one is always a plain array. Conversion finds
when every image has one size and says so in the schema, so such images batch as arrays
(and have a static shape in tf.data)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecordkit as tk
from tests.datasets import encode_audio, encode_image, photos, tone
from tfrecordkit import SchemaError
from tfrecordkit.schema import ImageObservations


def _structures(loader):
    return {name: type(value).__name__ for batch in loader for name, value in batch.items()
            if name not in ("__id", "__valid")}


def test_open_shapes_are_padded_in_every_batch_even_when_they_agree(tmp_path):
    image = photos()["astronaut"]
    schema = tk.Schema({"seq": tk.Sequence(tk.Scalar("int64")),
                        "v": tk.Tensor((None, 2), "float32"),
                        "image": tk.Image("png"), "audio": tk.Audio("wav"),
                        "x": tk.Scalar("float32")})
    # The first batch of 4 agrees in every shape; the second doesn't.
    rows = [{"seq": [i, i] if i < 4 else list(range(i)),
             "v": np.ones((3 if i < 4 else i, 2), np.float32),
             "image": encode_image(image[: 20 if i < 4 else 20 + i, :30], "PNG"),
             "audio": encode_audio(tone(0.1 if i < 4 else 0.1 + i / 100, 8000, 440), 8000,
                                   "WAV"),
             "x": i / 2} for i in range(8)]
    tk.write_dataset(rows, tmp_path / "ds", schema, shards=tk.ShardOptions(shuffle=False))
    assert tk.load_manifest(tmp_path / "ds").schema["image"].size is None  # sizes vary
    batches = list(tk.load_numpy_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder()))
    for batch in batches:
        for name in ("seq", "v", "image"):
            assert set(batch[name]) == {"values", "lengths"}, name
        assert set(batch["audio"]["samples"]) == {"values", "lengths"}
        assert isinstance(batch["x"], np.ndarray)
        assert isinstance(batch["audio"]["sample_rate"], np.ndarray)
    assert batches[0]["seq"]["lengths"].tolist() == [[2]] * 4
    assert batches[0]["image"]["values"].shape == (4, 20, 30, 3)
    ragged = tk.load_numpy_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
                                   options=tk.DecodeOptions(padding="ragged"))
    assert _structures(ragged) == {"seq": "list", "v": "list", "image": "list",
                                   "audio": "dict", "x": "ndarray"}
    # Resized images have one shape: plain arrays.
    resized = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=4,
                                              image_size=(16, 16))))
    assert resized["image"].shape == (4, 16, 16, 3)


@pytest.mark.integration
def test_images_of_one_size_get_it_in_the_schema_and_batch_as_arrays(tmp_path):
    image = photos()["coffee"]
    rows = [{"image": encode_image(image[i : i + 24, :32], "JPEG"), "label": i % 2}
            for i in range(10)]
    schema = tk.Schema({"image": tk.Image(), "label": tk.ClassLabel(["a", "b"])})
    done = tk.write_dataset(rows, tmp_path / "ds", schema)
    assert done.manifest.schema["image"] == tk.Image("jpeg", channels=3, size=(24, 32))
    assert tk.load_manifest(tmp_path / "ds").schema["image"].fixed_shape == (24, 32, 3)
    sizes = []
    for batch in tk.load_numpy_dataset(tmp_path / "ds", batch_size=4):
        assert batch["image"].shape[1:] == (24, 32, 3)
        sizes.append(len(batch["image"]))
    assert sizes == [4, 4, 2]  # every record, the last batch smaller
    pytest.importorskip("tensorflow")
    ds = tk.load_tf_dataset(tmp_path / "ds", batch_size=4)
    assert ds.element_spec["image"].shape.as_list() == [None, 24, 32, 3]
    # Folders of one size too (the local engine and arrays).
    arrays = {"image": np.stack([image[:16, :16]] * 6), "label": np.arange(6) % 2}
    schema = tk.Schema({"image": tk.Image(), "label": tk.ClassLabel(["0", "1"])})
    done = tk.convert(tk.NumpyArrays(arrays), tmp_path / "arrays", schema=schema)
    assert done.manifest.schema["image"].size == (16, 16)


def test_a_given_size_is_checked_and_kept_in_json():
    feature = tk.Image("png", channels=3, size=(4, 5))
    assert tk.Schema.from_json(tk.Schema({"i": feature}).to_json())["i"] == feature
    schema = tk.Schema({"i": feature})
    schema.encode({"i": np.zeros((4, 5, 3), np.uint8)})
    with pytest.raises(SchemaError, match="image is 5x5; the feature's size is 4x5"):
        schema.encode({"i": np.zeros((5, 5, 3), np.uint8)})
    for bad in [(0, 5), (4,), ("4", 5), (4.0, 5)]:
        with pytest.raises(SchemaError, match="size must be"):
            tk.Image(size=bad)


observation = st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["jpeg", "png"]),
                        st.sampled_from([0, 1, 3]),
                        st.sampled_from(["", "4x5", "5x4", "8x8"]))


@given(st.lists(observation, max_size=30), st.randoms())
def test_observations_merge_to_the_same_schema_in_any_chunking(seen, rnd):
    """Engines merge chunks as they arrive: any chunking and order refines alike, and a
    size is pinned only when every image had it."""
    schema = tk.Schema({"a": tk.Image(), "b": tk.Image("png", channels=1)})
    whole = ImageObservations()
    whole.add(seen)
    shuffled = list(seen)
    rnd.shuffle(shuffled)
    merged = ImageObservations()
    while shuffled:
        cut = rnd.randint(1, len(shuffled))
        chunk = ImageObservations()
        chunk.add(shuffled[:cut])
        merged.add([list(t) for t in chunk.as_set()])  # as JSON gives them back
        shuffled = shuffled[cut:]
    assert merged.refine(schema) == whole.refine(schema)
    for name in ("a", "b"):
        sizes = {s for n, _, _, s in seen if n == name}
        size = whole.refine(schema)[name].size
        if len(sizes) == 1 and "" not in sizes:
            assert size == tuple(int(d) for d in next(iter(sizes)).split("x"))
        else:
            assert size is None
