"""Schema.encode_frames: a batch framed at once equals framing each record's Schema.encode,
byte for byte, with the compiled and the pure-Python encoders; bad records fail the same way;
TensorFlow reads the frames back."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfrecordkit import (
    ClassLabel,
    FeatureList,
    Image,
    Scalar,
    Schema,
    SchemaError,
    Sequence,
    Tensor,
    Text,
    Vocabulary,
)
from tfrecordkit.format import _encode, frame_record
from tfrecordkit.format._columns import codec_name

COMPILED = codec_name() == "compiled"
SKIP_REASON = ("compiled-codec checks: the pure-Python codec is forced "
               "(TFRECORDKIT_PURE_PYTHON=1)" if os.environ.get("TFRECORDKIT_PURE_PYTHON")
               else "the C codec was not built (no compiler at install)")
NAMES = ["cat", "dog", "emu"]


def _reference(schema, records):
    """Per-record bytes, or the (feature, record) of the first error."""
    frames = []
    for i, record in enumerate(records):
        try:
            frames.append(frame_record(schema.encode(record, source=i)))
        except SchemaError as err:
            return "error", (err.feature, err.record)
    return "ok", b"".join(frames)


def _batched(schema, records, monkeypatch=None):
    try:
        encoded = schema.encode_frames(records)
    except SchemaError as err:
        return "error", (err.feature, err.record)
    offsets = encoded.offsets
    assert offsets.tolist() == [sum(encoded.lengths[:i].tolist()) for i in range(len(encoded))]
    return "ok", encoded.buffer


def _pure(schema, records, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(_encode, "_CODEC", None)
        return _batched(schema, records)


# Values each kind accepts (and some it refuses), in the forms users pass them.
float_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.floats(allow_nan=False),  # some overflow float32: an error either way
    st.integers(-(2**40), 2**40),
    st.integers(-5, 5).map(np.float64),
)
int64_values = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**64), 2**64),  # out of range: an error
    st.booleans(),
    st.integers(-100, 100).map(np.int32),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != int(f) if
                                                            math.isfinite(f) else True),
)
uint8_values = st.integers(-3, 300)
text_values = st.one_of(st.text(), st.binary(max_size=8),
                        st.text().map(lambda s: s.encode("utf-8")))
label_values = st.one_of(st.sampled_from(NAMES), st.sampled_from(["bird", ""]),
                         st.integers(-1, 4), st.booleans())

def _encoded(fmt: str, shape: tuple[int, ...]) -> bytes:
    import io

    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.fromarray(np.full(shape, 7, np.uint8)).save(buffer, format=fmt)
    return buffer.getvalue()


IMAGES = [_encoded("PNG", (3, 4, 3)), _encoded("JPEG", (5, 2)), b"not an image"]
image_values = st.builds(
    lambda data, h, w, c: {"bytes": data, "height": h, "width": w, "channels": c},
    st.sampled_from(IMAGES), st.one_of(st.integers(0, 9), st.just(3.0)),
    st.integers(-1, 2**40), st.integers(1, 4))

KINDS = {
    "f32": (Scalar("float32"), float_values),
    "f64": (Scalar("float64", float32_storage=True), float_values),
    "i64": (Scalar("int64"), int64_values),
    "u8": (Scalar("uint8"), uint8_values),
    "bool": (Scalar("bool"), st.one_of(st.booleans(), st.integers(-1, 2))),
    "str": (Scalar("string"), text_values),
    "text": (Text(), text_values),
    "label": (ClassLabel(NAMES), label_values),
    "image": (Image("auto"), image_values),
    "jpeg": (Image("jpeg"), image_values),
    "tensor": (Tensor((2, None), "int16"),
               st.integers(0, 3).map(lambda k: np.arange(2 * k, dtype=np.int16).reshape(2, k))),
    "seq_i64": (Sequence(Scalar("int64")), st.one_of(
        st.lists(int64_values, max_size=4), st.tuples(int64_values), st.none(),
        st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4).map(
            lambda v: np.array(v, np.int64)),
        st.lists(st.integers(0, 2**64 - 1), max_size=3).map(lambda v: np.array(v, np.uint64)),
        st.lists(st.booleans(), max_size=3).map(np.array))),
    "seq_f32": (Sequence(Scalar("float32")), st.one_of(
        st.lists(float_values, max_size=4), st.text(max_size=2),
        st.lists(st.floats(), max_size=4).map(lambda v: np.array(v, np.float64)),
        st.lists(st.integers(-(2**62), 2**62), max_size=3).map(np.array))),
    "vocab": (Text(vocabulary=Vocabulary(["the", "cat", "sat", "ça"])), text_values),
    # feature lists: records become SequenceExamples (any values: bytes or the same error)
    "steps": (FeatureList("int64", (None,)), st.one_of(
        st.lists(st.lists(int64_values, max_size=3), max_size=3), st.none(), st.text(max_size=2),
        st.lists(st.lists(st.floats(), max_size=2), max_size=2))),
    "frames": (FeatureList("float32", (2,)), st.one_of(
        st.lists(st.lists(float_values, min_size=1, max_size=3), max_size=3),
        st.integers(0, 3).map(lambda k: np.ones((k, 2), np.float64)))),
}


@st.composite
def batches(draw, uniform: bool):
    """A schema of random kinds and a batch of records for it. ``uniform``: every value of a
    feature has one Python type (the batch path); else anything goes (the fallback path)."""
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=6))
    schema = Schema({f"k{i}_{kind}": KINDS[kind][0] for i, kind in enumerate(kinds)})
    n = draw(st.integers(0, 12))
    columns = {}
    for name, kind in zip(schema, kinds, strict=True):
        strategy = KINDS[kind][1]
        if uniform:
            strategy = {"f32": st.floats(width=32), "f64": st.floats(width=32),
                        "i64": st.integers(-(2**63), 2**63 - 1), "u8": st.integers(0, 255),
                        "bool": st.integers(0, 1), "str": st.text(), "text": st.text(),
                        "label": st.sampled_from(NAMES),
                        "seq_i64": st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5),
                        "seq_f32": st.lists(st.floats(width=32), max_size=5),
                        "vocab": st.lists(st.sampled_from(["the", "Cat", "dog", "ça", "!"]),
                                          max_size=6).map(" ".join)}.get(kind, strategy)
        columns[name] = draw(st.lists(strategy, min_size=n, max_size=n))
    return schema, [{name: columns[name][i] for name in schema} for i in range(n)]


SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(batches(uniform=True))
def test_batches_equal_record_by_record(monkeypatch, batch):
    schema, records = batch
    expected = _reference(schema, records)
    assert _batched(schema, records) == expected
    assert _pure(schema, records, monkeypatch) == expected


@SETTINGS
@given(batches(uniform=False))
def test_any_values_give_the_same_bytes_or_the_same_error(monkeypatch, batch):
    schema, records = batch
    expected = _reference(schema, records)
    assert _batched(schema, records) == expected
    assert _pure(schema, records, monkeypatch) == expected


def test_float_overflow_is_a_schema_error_not_a_crash():
    schema = Schema({"x": Scalar("float32")})
    with pytest.raises(SchemaError, match="does not fit float32"):
        schema.encode({"x": 1e300})
    with pytest.raises(SchemaError, match=r"record 1: feature 'x'"):
        schema.encode_frames([{"x": 1.0}, {"x": 1e300}])
    # Lists too (they used to become inf, with only a RuntimeWarning).
    schema = Schema({"x": Sequence(Scalar("float32"))})
    with pytest.raises(SchemaError, match=r"record 1: feature 'x': 1e\+300 does not fit"):
        schema.encode_frames([{"x": [1.0]}, {"x": [2.0, 1e300]}])
    with pytest.raises(SchemaError, match="does not fit float32"):
        schema.encode({"x": np.array([3.5e38])})


def test_missing_and_extra_features_name_the_record():
    schema = Schema({"x": Scalar("int64"), "y": Text()})
    with pytest.raises(SchemaError, match=r"record 2: feature 'y'"):
        schema.encode_frames([{"x": 1, "y": "a"}, {"x": 2, "y": "b"}, {"x": 3}])
    with pytest.raises(SchemaError, match=r"record a: feature 'z'"):
        schema.encode_frames([{"x": 1, "y": "a", "z": 0}], sources=["a"])


def test_images_and_large_values(tmp_path):
    """Image entries (per-record path) and a value past 2**21 bytes (a 4-byte varint)."""
    import io

    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.fromarray(np.zeros((5, 7, 3), np.uint8)).save(buffer, format="PNG")
    png = buffer.getvalue()
    schema = Schema({"image": Image("png"), "blob": Scalar("string"), "label": ClassLabel(NAMES)})
    records = [{"image": png, "blob": bytes(3 << 20), "label": "emu"},
               {"image": np.ones((2, 3), np.uint8), "blob": b"", "label": 0}]
    assert _batched(schema, records) == _reference(schema, records)


@pytest.mark.integration
@pytest.mark.skipif(not COMPILED, reason=SKIP_REASON)
def test_tensorflow_reads_the_frames(tmp_path):
    tf = pytest.importorskip("tensorflow")
    schema = Schema({"x": Scalar("float32"), "n": Scalar("int64"), "s": Text()})
    records = [{"x": i / 3, "n": -(i**5), "s": "é" * i} for i in range(100)]
    path = tmp_path / "batch.tfrecord"
    path.write_bytes(schema.encode_frames(records).buffer)
    spec = {"x": tf.io.FixedLenFeature([], tf.float32), "n": tf.io.FixedLenFeature([], tf.int64),
            "s": tf.io.FixedLenFeature([], tf.string)}
    got = [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(str(path))]
    assert [float(g["x"]) for g in got] == [float(np.float32(r["x"])) for r in records]
    assert [int(g["n"]) for g in got] == [r["n"] for r in records]
    assert [g["s"].numpy().decode() for g in got] == [r["s"] for r in records]
