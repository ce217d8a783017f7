"""The Example and SequenceExample codec, without TensorFlow."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfrecordkit import (
    SchemaError,
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
FLOAT32 = st.floats(width=32, allow_nan=True, allow_infinity=True)
names = st.text(min_size=1, max_size=12)
int_lists = st.lists(INT64, min_size=1, max_size=20).map(lambda v: np.array(v, dtype=np.int64))
float_lists = st.lists(FLOAT32, max_size=80).map(lambda v: np.array(v, dtype=np.float32))
bytes_lists = st.lists(st.binary(max_size=40), max_size=5)
values = st.one_of(int_lists, float_lists, bytes_lists)


def same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray) and a.dtype == b.dtype
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        )
    return a == b


@given(st.dictionaries(names, values, max_size=6))
def test_example_round_trip(features):
    decoded = decode_example(encode_example(features))
    assert decoded.keys() == features.keys()
    for name, value in features.items():
        assert same(value, decoded[name]), name


@given(st.dictionaries(names, values, max_size=3),
       st.dictionaries(names, st.lists(values, max_size=4), max_size=3))
def test_sequence_example_round_trip(context, feature_lists):
    encoded = encode_sequence_example(context, feature_lists)
    got_context, got_lists = decode_sequence_example(encoded)
    assert got_context.keys() == context.keys()
    assert all(same(context[k], got_context[k]) for k in context)
    assert got_lists.keys() == feature_lists.keys()
    for name, steps in feature_lists.items():
        assert len(got_lists[name]) == len(steps)
        assert all(same(a, b) for a, b in zip(steps, got_lists[name], strict=True))


def test_python_values_take_their_natural_kind():
    decoded = decode_example(encode_example({
        "b": b"\xff\x00", "s": "héllo", "i": 7, "t": True, "f": 0.5, "np_i": np.int16(-3),
        "np_f": np.float64(2.5), "ints": [1, 2], "floats": [1, 2.5], "strs": ["a", b"b"],
        "empty": [], "matrix": np.arange(6, dtype=np.uint8).reshape(2, 3),
        "unicode": np.array(["x", "ÿ"]), "fixed_bytes": np.array([b"ab", b"c"]),
    }))
    assert decoded["b"] == [b"\xff\x00"]
    assert decoded["s"] == ["héllo".encode()]
    assert decoded["i"].tolist() == [7] and decoded["i"].dtype == np.int64
    assert decoded["t"].tolist() == [1]
    assert decoded["f"].tolist() == [0.5] and decoded["f"].dtype == np.float32
    assert decoded["np_i"].tolist() == [-3]
    assert decoded["np_f"].tolist() == [2.5]
    assert decoded["ints"].tolist() == [1, 2]
    assert decoded["floats"].tolist() == [1.0, 2.5]
    assert decoded["strs"] == [b"a", b"b"]
    assert decoded["empty"] == []
    assert decoded["matrix"].tolist() == [0, 1, 2, 3, 4, 5]
    assert decoded["unicode"] == [b"x", "ÿ".encode()]
    assert decoded["fixed_bytes"] == [b"ab", b"c"]


def test_float_extremes():
    values = np.array([np.nan, np.inf, -np.inf, -0.0, 3.4028235e38, 1e-45], dtype=np.float32)
    decoded = decode_example(encode_example({"x": values}))["x"]
    assert math.isnan(decoded[0]) and decoded[1:3].tolist() == [math.inf, -math.inf]
    assert math.copysign(1, decoded[3]) == -1
    assert decoded[4:].tolist() == values[4:].tolist()


def test_encoding_is_deterministic_and_key_order_free():
    a = encode_example({"a": 1, "b": [b"x"], "c": [0.5]})
    b = encode_example({"c": [0.5], "b": [b"x"], "a": 1})
    assert a == b


@pytest.mark.parametrize(("value", "message"), [
    ({"bad": object()}, "feature 'bad': cannot encode a value of type object"),
    ({"mixed": [1, "a"]}, "one kind of value"),
    ({"mixed": ["a", 1]}, "cannot mix int into a bytes list"),
    ({"huge": [2**63]}, "does not fit int64"),
    ({"huge": np.array([2**64 - 1], dtype=np.uint64)}, "does not fit int64"),
    ({"c": np.array([1j])}, "dtype complex128"),
])
def test_values_without_a_representation_raise_schema_error(value, message):
    with pytest.raises(SchemaError, match=message) as info:
        encode_example(value)
    assert info.value.feature == next(iter(value))
    assert isinstance(info.value, ValueError)


def test_garbage_is_not_an_example():
    with pytest.raises(ValueError, match=r"not a serialized tf\.train\.Example"):
        decode_example(b"\xff\xff\xff")


def protobuf_serialization(features: dict) -> bytes:
    """The same Example built through protobuf's API, serialized deterministically."""
    from tfrecordkit.format._example import messages

    example = messages["Example"]()
    example.features.SetInParent()
    for name, value in features.items():
        feature = example.features.feature[name]
        if isinstance(value, list) and not value:
            continue  # a plain empty list is a Feature with no list set
        if isinstance(value, list):
            feature.bytes_list.SetInParent()
            feature.bytes_list.value.extend(value)
        elif value.dtype == np.float32:
            feature.float_list.SetInParent()
            feature.float_list.value.extend(value.tolist())
        else:
            feature.int64_list.SetInParent()
            feature.int64_list.value.extend(value.tolist())
    return example.SerializeToString(deterministic=True)


@given(st.dictionaries(st.text(max_size=12), values, max_size=8))
def test_wire_encoding_equals_protobuf_byte_for_byte(features):
    assert encode_example(features) == protobuf_serialization(features)
