"""Schema.decode_batch (columns through the codec) equals Schema.decode record by record, for
every feature kind, and reports the same errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.datasets import encode_audio, encode_image, tone
from tfrecordkit import SchemaError, encode_example
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

SCHEMA = Schema({
    "i8": Scalar("int8"), "u16": Scalar("uint16"), "b": Scalar("bool"), "f": Scalar("float32"),
    "d": Scalar("float64", float32_storage=True), "s": Scalar("string"),
    "label": ClassLabel(["a", "b", "c"]),
    "text": Text(), "tok": Text(token_ids=True), "seq": Sequence(Scalar("int64")),
    "words": Sequence(Text()), "t": Tensor((None, 2), "int16"), "fixed": Tensor((3,), "float32"),
    "png": Image("png"), "raw": Image("raw", channels=3), "pcm": Audio("pcm", sample_rate=8000),
    "wav": Audio("wav"),
})


def _row(i, rng):
    pixels = rng.integers(0, 256, (4 + i % 3, 5, 3), dtype=np.uint8)
    return {
        "i8": int(rng.integers(-128, 128)), "u16": int(rng.integers(0, 65536)), "b": i % 2 == 0,
        "f": float(rng.normal()), "d": float(rng.normal()), "s": b"\xff" * (i % 3),
        "label": i % 3, "text": "héllo " * (i % 4),
        "tok": {"text": f"t{i}", "ids": np.arange(i % 5)}, "seq": list(range(i % 4)),
        "words": ["w"] * (i % 3), "t": np.arange(2 * (i % 3), dtype=np.int16).reshape(-1, 2),
        "fixed": np.full(3, i, np.float32), "png": encode_image(pixels, "PNG"), "raw": pixels,
        "pcm": tone(0.01 * (1 + i % 2), 8000, 440), "wav": encode_audio(tone(0.01, 8000, 220),
                                                                        8000, "WAV"),
    }


def _same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, np.ndarray | np.generic) or isinstance(b, np.ndarray | np.generic):
        assert np.array_equal(np.asarray(a), np.asarray(b)), (a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype or np.asarray(a).ndim == 0
    elif isinstance(a, list):
        assert len(a) == len(b) and all(_same(x, y) is None for x, y in zip(a, b, strict=True))
    else:
        assert (a == b and type(a) is type(b)) or (isinstance(a, float) and a == b), (a, b)


@given(st.integers(0, 2**32 - 1), st.integers(1, 12))
def test_decode_batch_equals_decode_for_every_kind(seed, n):
    rng = np.random.default_rng(seed)
    records = [SCHEMA.encode(_row(i, rng)) for i in range(n)]
    batch = SCHEMA.decode_batch(records)
    for i, record in enumerate(records):
        one = SCHEMA.decode(record)
        for name in SCHEMA:
            value = batch[name][i]
            if isinstance(value, np.generic):  # numbers come as arrays: compare the value
                assert value.item() == one[name] or (value != value and one[name] != one[name])
            else:
                _same(value, one[name])


def test_selected_features_and_errors_name_the_record():
    rng = np.random.default_rng(0)
    records = [SCHEMA.encode(_row(i, rng)) for i in range(4)]
    assert set(SCHEMA.decode_batch(records, features=["label", "seq"])) == {"label", "seq"}
    schema = Schema({"x": Scalar("int8"), "label": ClassLabel(["a", "b"])})
    good = schema.encode({"x": 1, "label": 1})
    for bad, match in [(encode_example({"x": [300], "label": [1]}), "300 does not fit int8"),
                       (encode_example({"x": [1], "label": [5]}), "class index 5 outside"),
                       (encode_example({"x": [1.5], "label": [1]}), "holds a float32 list")]:
        with pytest.raises(SchemaError, match=f"record r2: .*{match}"):
            schema.decode_batch([good, good, bad], where=lambda i: f"r{i}")
        with pytest.raises(SchemaError, match=match):
            schema.decode(bad)
