"""Numbers that don't fit their declared type are refused at encoding, at both ends of every
dtype the schema accepts; numbers that fit read back as written (up to the declared precision).
"""

from __future__ import annotations

import numpy as np
import pytest

from tfrecordkit import SchemaError
from tfrecordkit.format import frame_record
from tfrecordkit.schema import Scalar, Schema, Sequence, Tensor

INT_DTYPES = ["int64", "int32", "int16", "int8", "uint8", "uint16", "uint32"]
FLOAT_DTYPES = ["float16", "float32"]


def _round_trip(feature, value):
    schema = Schema({"v": feature})
    by_record = schema.decode(schema.encode({"v": value}))["v"]
    # The batch encoder (columns) must agree with the record-by-record one.
    frames = schema.encode_frames([{"v": value}])
    assert bytes(frames.buffer) == frame_record(schema.encode({"v": value}))
    return by_record


def _refused(feature, value, match):
    schema = Schema({"v": feature})
    with pytest.raises(SchemaError, match=match) as caught:
        schema.encode({"v": value})
    assert caught.value.feature == "v"
    with pytest.raises(SchemaError, match=match):
        schema.encode_frames([{"v": value}])


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_scalars_hold_both_ends_and_refuse_one_beyond(dtype):
    info = np.iinfo(dtype)
    for value in (int(info.min), int(info.max)):
        assert _round_trip(Scalar(dtype), value) == value
        assert _round_trip(Sequence(Scalar(dtype)), [value, 0]).tolist() == [value, 0]
        assert _round_trip(Tensor((2,), dtype), [value, 0]).tolist() == [value, 0]
    for value in (int(info.min) - 1, int(info.max) + 1):
        _refused(Scalar(dtype), value, "does not fit")
        _refused(Sequence(Scalar(dtype)), [value], "does not fit")
        if dtype != "int64":  # beyond int64, NumPy itself refuses the list
            _refused(Tensor((1,), dtype), np.array([value], dtype=np.int64), "does not fit")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_scalars_hold_both_ends_and_refuse_overflow_and_vanishing(dtype):
    info = np.finfo(dtype)
    largest, tiniest = float(info.max), float(info.smallest_subnormal)
    for value in (largest, -largest, tiniest, -tiniest, 0.0, -0.0):
        assert _round_trip(Scalar(dtype), value) == value
        assert _round_trip(Sequence(Scalar(dtype)), [value]).tolist() == [value]
        assert _round_trip(Tensor((1,), dtype), np.array([value])).tolist() == [value]
    for value in (largest * 2, -largest * 2):
        _refused(Scalar(dtype), value, f"does not fit {dtype}")
        _refused(Sequence(Scalar(dtype)), [value], f"does not fit {dtype}")
        _refused(Tensor((1,), dtype), np.array([value]), f"does not fit {dtype}")
    for value in (tiniest / 4, -tiniest / 4):
        _refused(Scalar(dtype), value, f"would become 0.0 in {dtype}")
        _refused(Sequence(Scalar(dtype)), [value], f"would become 0.0 in {dtype}")
        _refused(Tensor((1,), dtype), np.array([value]), f"would become 0.0 in {dtype}")


def test_the_issue_examples():
    _refused(Scalar("float16"), 70000.0, "does not fit float16")
    _refused(Scalar("float16"), 1e-8, "would become 0.0")
    # Rounding to the declared precision is what declaring it asks for.
    assert _round_trip(Scalar("float16"), 0.1) == float(np.float16(0.1))
    assert _round_trip(Scalar("float32"), 16777217.0) == 16777216.0


def test_float64_is_refused_at_schema_time_naming_the_way_to_store_it():
    with pytest.raises(SchemaError, match=r"Tensor\(\(\), 'float64'\)"):
        Scalar("float64")
    exact = Tensor((), "float64")
    for value in (16777217.0, 5e-324, 1.7976931348623157e308, -0.1):
        assert _round_trip(exact, np.float64(value)).item() == value


def test_float64_scalars_of_existing_manifests_still_read():
    """Datasets written before float64 was refused hold float32 values: they read as before."""
    old = {"features": {"d": {"kind": "scalar", "dtype": "float64"}}}
    schema = Schema.from_json(old)
    assert schema.to_json()["features"]["d"] == {"kind": "scalar", "dtype": "float64"}
    assert schema.decode(schema.encode({"d": 0.5}))["d"] == 0.5
    with pytest.raises(SchemaError, match="does not fit float32"):
        schema.encode({"d": 1e300})


def test_ints_given_as_python_lists_fit_narrow_tensors():
    assert _round_trip(Tensor((3,), "uint8"), [0, 17, 255]).tolist() == [0, 17, 255]
    _refused(Tensor((1,), "uint8"), [-1], "-1 does not fit uint8")
