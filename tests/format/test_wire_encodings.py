"""decode_example over arbitrary valid wire encodings, not only what our encoder writes.

A regression for a float list over 32 values beside an unknown field (garbage floats came
back), and the property that every decoding shortcut equals a full protobuf parse.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from tests.wire import examples, field, same_value, varint
from tfrecordkit.errors import RecordFormatError
from tfrecordkit.format import decode_example
from tfrecordkit.format._example import messages


def _float_example(values: np.ndarray, float_list_extra: bytes) -> bytes:
    float_list = field(1, 2, values.astype("<f4").tobytes()) + float_list_extra
    entry = field(1, 2, b"x") + field(2, 2, field(2, 2, float_list))
    return field(1, 2, field(1, 2, entry))


def test_a_float_list_with_another_field_is_read_or_refused_as_tensorflow_does():
    # After the packed run opening the list, TensorFlow ignores the rest and protobuf skips
    # unknown fields: both read the run (tests/format/test_trailing_fields.py probes TF).
    values = np.arange(40, dtype=np.float32)
    for extra in (field(5, 0, 7), field(9, 2, b"junk"), field(3, 5, b"\x00\x00\x80\x3f")):
        assert np.array_equal(decode_example(_float_example(values, extra))["x"], values)
    # A value after the run: protobuf appends it, TensorFlow ignores it: refused.
    with pytest.raises(RecordFormatError, match=r"FloatList|value list"):
        decode_example(_float_example(values, field(1, 5, b"\x00\x00\x80\x3f")))
    assert np.array_equal(decode_example(_float_example(values, b""))["x"], values)


def test_long_float_list_unpacked_decodes_exactly():
    values = np.linspace(-1, 1, 50, dtype=np.float32)
    float_list = b"".join(field(1, 5, np.float32(v).tobytes()) for v in values)
    entry = field(1, 2, b"x") + field(2, 2, field(2, 2, float_list))
    assert np.array_equal(decode_example(field(1, 2, field(1, 2, entry)))["x"], values)


def test_varint_helper_matches_protobuf():
    message = messages["Int64List"]()
    message.value.extend([0, 1, 300, -1, 2**63 - 1])
    assert message.SerializeToString() == field(1, 2, b"".join(
        varint(v) for v in [0, 1, 300, -1, 2**63 - 1]))


@given(examples())
def test_decode_example_equals_a_full_protobuf_parse(case):
    wire, expected, _ = case
    if expected is None:  # a map entry protobuf would drop: refused, never silently lost
        with pytest.raises(ValueError, match=r"map entry|TensorFlow|value list"):
            decode_example(wire)
        return
    try:
        decoded = decode_example(wire)
    except RecordFormatError:  # a layout TensorFlow refuses or misreads: refused
        return
    assert decoded.keys() == expected.keys()
    for key, value in expected.items():
        assert same_value(decoded[key], value), key
    parsed = messages["Example"].FromString(wire)  # the model agrees with protobuf too
    assert set(parsed.features.feature.keys()) == expected.keys()
