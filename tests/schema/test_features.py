"""Typed features: encoding, decoding without TensorFlow, validation, JSON."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.datasets import encode_audio, encode_image, tone
from tfrecordkit import SchemaError, decode_example
from tfrecordkit.schema import (
    Audio,
    ClassLabel,
    Image,
    Scalar,
    Schema,
    Sequence,
    Tensor,
    Text,
)


def round_trip(schema: Schema, record: dict) -> dict:
    return schema.decode(schema.encode(record))


@given(hnp.arrays(st.sampled_from([np.uint8, np.int16, np.int64, np.float16, np.float32,
                                   np.float64, np.bool_]),
                  hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_tensor_round_trips_exactly(array):
    schema = Schema({"t": Tensor((None,) * array.ndim, array.dtype.name)})
    back = round_trip(schema, {"t": array})["t"]
    assert back.dtype == array.dtype and back.shape == array.shape
    assert np.array_equal(back, array, equal_nan=array.dtype.kind == "f")


def test_fixed_shape_tensor_writes_no_shape_key():
    schema = Schema({"t": Tensor((2, 3), "float32")})
    keys = decode_example(schema.encode({"t": np.ones((2, 3), np.float32)})).keys()
    assert set(keys) == {"t"}
    with pytest.raises(SchemaError, match=r"shape \(3, 2\) does not fit \(2, 3\)"):
        schema.encode({"t": np.ones((3, 2), np.float32)})


@given(st.integers(-(2**63), 2**63 - 1), st.floats(width=32, allow_nan=False),
       st.text(), st.lists(st.integers(-(2**63), 2**63 - 1), max_size=10),
       st.lists(st.text(max_size=5), max_size=5))
def test_scalars_text_and_sequences_round_trip(i, f, text, ints, texts):
    schema = Schema({"i": Scalar("int64"), "f": Scalar("float32"), "s": Text(),
                     "seq": Sequence(Scalar("int64")), "words": Sequence(Text()),
                     "ids": Text(token_ids=True)})
    back = round_trip(schema, {"i": i, "f": f, "s": text, "seq": ints, "words": texts,
                               "ids": {"text": text, "ids": ints}})
    assert back["i"] == i and back["f"] == np.float32(f) and back["s"] == text
    assert back["seq"].tolist() == ints and back["words"] == texts
    assert back["ids"]["text"] == text and back["ids"]["ids"].tolist() == ints


def test_class_label_takes_names_or_indexes():
    schema = Schema({"label": ClassLabel(["cat", "dog"])})
    assert round_trip(schema, {"label": "dog"})["label"] == 1
    assert round_trip(schema, {"label": np.int64(0)})["label"] == 0
    with pytest.raises(SchemaError, match="unknown class 'cow'"):
        schema.encode({"label": "cow"})
    with pytest.raises(SchemaError, match=r"class index 2 outside 0\.\.1"):
        schema.encode({"label": 2})


def test_images_keep_bytes_and_record_shape():
    rgb = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    png = encode_image(rgb, "PNG")
    schema = Schema({"image": Image("png")})
    features = decode_example(schema.encode({"image": png}))
    assert features["image"] == [png]
    assert [features[f"image/{d}"].tolist() for d in ("height", "width", "channels")] == [
        [5], [7], [3]]
    assert np.array_equal(schema.decode(schema.encode({"image": png}))["image"], rgb)
    raw = Schema({"image": Image("raw")})
    assert np.array_equal(round_trip(raw, {"image": rgb})["image"], rgb)
    with pytest.raises(SchemaError, match="bytes are png, feature expects jpeg"):
        Schema({"image": Image("jpeg")}).encode({"image": png})


def test_audio_round_trips():
    samples = tone(0.1, 8000, 440, channels=2)
    wav = encode_audio(samples, 8000, "WAV")
    back = round_trip(Schema({"a": Audio("wav")}), {"a": wav})["a"]
    assert back["sample_rate"] == 8000
    assert np.allclose(back["samples"], samples, atol=1 / 32768)
    pcm = round_trip(Schema({"a": Audio("pcm", sample_rate=8000)}), {"a": samples})["a"]
    assert np.array_equal(pcm["samples"], samples)


def test_schema_errors_name_feature_and_record():
    schema = Schema({"x": Scalar("int64"), "s": Text()})
    with pytest.raises(SchemaError) as info:
        schema.encode({"x": "seven", "s": "ok"}, source="rows.csv:7")
    assert str(info.value).startswith("record rows.csv:7: feature 'x': expected an integer")
    with pytest.raises(SchemaError, match="feature 's': missing from the record"):
        schema.encode({"x": 1})
    with pytest.raises(SchemaError, match="feature 'y': not in the schema"):
        schema.encode({"x": 1, "s": "", "y": 2})
    with pytest.raises(SchemaError, match="not valid UTF-8"):
        schema.encode({"x": 1, "s": b"\xff"})


def test_schema_rejects_clashing_keys_and_bad_parameters():
    assert Schema({"image/height": Scalar()})  # '/' is allowed (the OD API layout) ...
    with pytest.raises(SchemaError, match="also written by"):  # ... unless keys clash
        Schema({"image": Image(), "image/height": Scalar()})
    with pytest.raises(SchemaError, match="encoding must be one of"):
        Image("gif")
    with pytest.raises(SchemaError, match="class names must be unique"):
        ClassLabel(["a", "a"])
    with pytest.raises(SchemaError, match="not supported"):
        Sequence(Image())


def test_schema_json_round_trip():
    schema = Schema({"image": Image("jpeg", channels=3), "label": ClassLabel(["a", "b"]),
                     "t": Tensor((None, 4), "int16"), "s": Sequence(Scalar("float32")),
                     "text": Text(token_ids=True), "audio": Audio("flac", 16000)})
    assert Schema.from_json(schema.to_json()) == schema


def test_schema_pickles_for_worker_processes():
    import pickle

    schema = Schema({"image": Image("png"), "label": ClassLabel(["a", "b"]), "x": Scalar()})
    again = pickle.loads(pickle.dumps(schema))
    assert again == schema
    assert again.encode({"image": {"bytes": b"\x89PNG\r\n\x1a\n", "height": 1, "width": 1,
                                   "channels": 1}, "label": "b", "x": 3}) == schema.encode(
        {"image": {"bytes": b"\x89PNG\r\n\x1a\n", "height": 1, "width": 1, "channels": 1},
         "label": "b", "x": 3})
