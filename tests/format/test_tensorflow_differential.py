"""decode_example and Schema.decode against TensorFlow's own parsers, on arbitrary wire bytes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from tests.wire import examples, same_value
from tfrecordkit.format import decode_example
from tfrecordkit.schema import Scalar, Schema, Sequence

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")

_TF_DTYPE = {"float32": tf.float32, "int64": tf.int64}


def _dtype_of(value) -> str:
    if isinstance(value, np.ndarray):
        return value.dtype.name
    return "string"


def _tf_value(value):
    out = value.numpy()
    return list(out) if out.dtype == object else out


@settings(max_examples=60)
@given(examples())
def test_records_protobuf_would_drop_a_feature_of_are_refused_as_tensorflow_refuses(case):
    wire, expected, _ = case
    if expected is None:
        # (TensorFlow's error message quotes the record and can fail to decode as UTF-8.)
        with pytest.raises((tf.errors.InvalidArgumentError, UnicodeDecodeError)):
            tf.io.parse_example([wire], {"__probe": tf.io.RaggedFeature(tf.int64)})
        with pytest.raises(ValueError, match=r"map entry|TensorFlow|value list"):
            decode_example(wire)


@settings(max_examples=120)
@given(examples(odd=False))
def test_decode_example_agrees_with_tensorflow(case):
    wire, _, _ = case
    ours = decode_example(wire)
    theirs = tf.train.Example.FromString(wire).features.feature
    assert set(theirs.keys()) == ours.keys()
    if not ours:
        return
    spec = {key: tf.io.RaggedFeature(_TF_DTYPE.get(_dtype_of(v), tf.string))
            for key, v in ours.items()}
    parsed = tf.io.parse_example([wire], spec)
    for key, value in ours.items():
        got = parsed[key][0]
        if isinstance(value, np.ndarray):
            assert same_value(value, got.numpy()), key
        else:
            assert value == list(got.numpy()), key


@settings(max_examples=120)
@given(examples(odd=False))
def test_schema_decode_agrees_with_parse_example(case):
    wire, expected, _ = case
    features = {key: Sequence(Scalar({"float32": "float32", "int64": "int64"}.get(
        _dtype_of(value), "string"))) for key, value in expected.items()
        if key and "/" not in key}
    if not features:
        return
    schema = Schema(features)
    ours = schema.decode(wire)
    from tfrecordkit.readers.tf_data import feature_description

    parsed = tf.io.parse_example([wire], feature_description(schema))
    for key, value in ours.items():
        got = parsed[key][0].numpy()
        if isinstance(value, np.ndarray):
            assert same_value(value, got), key
        else:
            assert list(value) == list(got), key


def test_schema_decode_refuses_what_tensorflow_refuses():
    from tfrecordkit.errors import SchemaError
    from tfrecordkit.format import encode_example
    from tfrecordkit.readers.tf_data import feature_description

    wire = encode_example({"n": [1, 2, 3, 4], "s": 7})
    schema = Schema({"n": Scalar("int64"), "s": Scalar("string")})
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_example([wire], feature_description(schema))
    with pytest.raises(SchemaError, match=r"'n'.*4 value"):
        schema.decode(wire)
