"""``tf.io.serialize_tensor`` bytes (a ``TensorProto``) decoded without TensorFlow, as
``tf.io.parse_tensor`` decodes them: dtype and shape from the proto, values from its
``tensor_content`` or its typed value lists (the last value repeated to fill the shape, zeros
when there are none, the first ones kept when there are more). Untrusted input: every length
is checked, and a shape is refused when it claims far more values than the bytes could
describe."""

from __future__ import annotations

import math

import numpy as np

from tfrecordkit.errors import RecordFormatError
from tfrecordkit.format._example import _read_varint
from tfrecordkit.format._wire import varint

__all__ = ["decode_tensor_proto", "encode_tensor_proto"]

# TensorFlow's DataType numbers for the dtypes we decode, and the typed field holding them.
_DTYPES: dict[int, tuple[str, int]] = {
    1: ("float32", 5), 2: ("float64", 6), 3: ("int32", 7), 4: ("uint8", 7), 5: ("int16", 7),
    6: ("int8", 7), 7: ("object", 8), 9: ("int64", 10), 10: ("bool", 11), 17: ("uint16", 7),
    19: ("float16", 13), 22: ("uint32", 16), 23: ("uint64", 17),
}
# Values a typed list may be broadcast to, per byte of the proto (a guard against bombs).
_FILL_LIMIT = 1 << 26


def _fields(data: bytes) -> list[tuple[int, int, object]]:
    """``(field, wire type, value)``: varints as ints, fixed ones and lengths as bytes."""
    out: list[tuple[int, int, object]] = []
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, pos = _read_varint(data, pos)
            out.append((field, wire, value))
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(data):
                raise ValueError("a truncated fixed-width field")
            out.append((field, wire, data[pos : pos + size]))
            pos += size
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            if pos + size > len(data):
                raise ValueError("a length beyond the end of the tensor bytes")
            out.append((field, wire, data[pos : pos + size]))
            pos += size
        else:
            raise ValueError(f"wire type {wire}")
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _shape(data: bytes) -> tuple[int, ...]:
    dims = []
    fields = _fields(data)
    if _last(fields, 3, 0):
        raise ValueError("a tensor of unknown rank")
    for field, wire, value in fields:
        if field == 2 and wire == 2:
            size = 0
            for dim_field, dim_wire, dim_value in _fields(value):  # type: ignore[arg-type]
                if dim_field == 1 and dim_wire == 0:
                    size = _signed(dim_value)  # type: ignore[arg-type]
            if size < 0:
                raise ValueError(f"a dimension of size {size}")
            dims.append(size)
    return tuple(dims)


def _typed(values: list[tuple[int, object]], dtype: str) -> list[object]:
    """A typed list's values, packed or not."""
    out: list[object] = []
    for wire, value in values:
        if dtype == "object":
            if not isinstance(value, bytes):
                raise ValueError("a string value that is not length-delimited")
            out.append(value)
        elif dtype in ("float32", "float64"):
            width = 4 if dtype == "float32" else 8
            if wire == 0 or len(value) % width:  # type: ignore[arg-type]
                raise ValueError(f"{dtype} values of the wrong width")
            # NumPy scalars of the stored bits: a Python float would quiet a signalling NaN,
            # which TensorFlow keeps as it is.
            out.extend(np.frombuffer(value, f"<f{width}").astype(dtype))  # type: ignore[call-overload]
        elif wire == 0:
            out.append(value)
        elif wire == 2:
            pos, raw = 0, value
            while pos < len(raw):  # type: ignore[arg-type]
                item, pos = _read_varint(raw, pos)  # type: ignore[arg-type]
                out.append(item)
        else:
            raise ValueError(f"{dtype} values of wire type {wire}")
    return out


def decode_tensor_proto(data: bytes) -> np.ndarray:
    """The array ``tf.io.parse_tensor`` gives for ``data`` (strings as an object array of
    bytes).

    Fields follow protobuf's rules, as TensorFlow's parser applies them: a repeated scalar
    field (``dtype``, ``tensor_content``) keeps its last value, repeated ``tensor_shape``
    messages merge, a field of an unexpected wire type is skipped as unknown.

    Raises:
        RecordFormatError: the bytes are not a TensorProto of a supported dtype, or their
            values disagree with their shape (a ``ValueError`` too).
    """
    try:
        return _decode(bytes(data))
    except RecordFormatError:
        raise
    except ValueError as err:
        raise RecordFormatError(f"not a serialized tensor: {err}") from None


def _last(fields: list[tuple[int, int, object]], field: int, wire: int) -> object:
    """The last value of a singular field (protobuf keeps the last), or None."""
    found = [v for f, w, v in fields if f == field and w == wire]
    return found[-1] if found else None


def _decode(data: bytes) -> np.ndarray:
    fields = _fields(data)
    code = _last(fields, 1, 0)
    if code not in _DTYPES:
        raise ValueError(f"not a serialized tensor of a supported dtype (DataType {code})")
    dtype, typed_field = _DTYPES[code]
    # Repeated occurrences of a message field merge: parse their concatenation.
    shape_bytes = b"".join(v for f, w, v in fields if f == 2 and w == 2)  # type: ignore[misc]
    shape = _shape(shape_bytes)
    count = math.prod(shape)
    if count == 0:  # TensorFlow reads no values, whatever the proto lists
        return np.empty(shape, dtype=object if dtype == "object" else dtype)
    content = _last(fields, 4, 2)
    if content and dtype != "object":
        raw: bytes = content  # type: ignore[assignment]
        itemsize = np.dtype(dtype).itemsize
        if len(raw) != count * itemsize:
            raise ValueError(f"tensor_content holds {len(raw)} bytes; shape {shape} of "
                             f"{dtype} needs {count * itemsize}")
        return np.frombuffer(raw, np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(shape)
    values = _typed([(w, v) for f, w, v in fields if f == typed_field], dtype)
    values = values[:count]  # TensorFlow takes the first values a shape holds
    if count > len(values) and count > _FILL_LIMIT:
        raise ValueError(f"shape {shape} claims {count} values")
    if dtype not in ("object", "float32", "float64", "float16", "uint64"):
        values = [_signed(v) for v in values]  # type: ignore[arg-type]
    if dtype == "float16":
        values = [np.uint16(v).view(np.float16) for v in values]  # type: ignore[arg-type]
    out = np.empty(count, dtype=object if dtype == "object" else dtype)
    if count:
        fill = values[-1] if values else (b"" if dtype == "object" else 0)
        out[: len(values)] = values
        out[len(values) :] = fill
    return out.reshape(shape)


_CODES = {dtype: code for code, (dtype, _) in _DTYPES.items() if dtype != "object"}


def _message(field: int, payload: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def encode_tensor_proto(array: np.ndarray) -> bytes:
    """The bytes ``tf.io.serialize_tensor`` gives for a numeric or boolean ``array``: its
    dtype, shape and little-endian ``tensor_content``.

    Raises:
        ValueError: a dtype a TensorProto cannot hold (strings, complex, ...).
    """
    array = np.asarray(array)
    code = _CODES.get(array.dtype.name)
    if code is None:
        raise ValueError(f"a {array.dtype} array cannot be a serialized tensor")
    shape = b"".join(_message(2, varint(8) + varint(d) if d else b"") for d in array.shape)
    content = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
    return (varint(8) + varint(code) + _message(2, shape)
            + (_message(4, content) if content else b""))
