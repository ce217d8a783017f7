"""Encoding and decoding ``tf.train.Example`` and ``tf.train.SequenceExample`` without TensorFlow.

The messages come from our own ``_proto/example.proto`` (same wire format as TensorFlow's), loaded
into a private descriptor pool so they never clash with TensorFlow's ``tensorflow.*`` messages and
do not depend on the protobuf version that generated them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any, TypeAlias

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.unknown_fields import UnknownFieldSet

from tfrecordkit.errors import RecordFormatError, SchemaError
from tfrecordkit.format._compiled import CODEC
from tfrecordkit.format._wire import ListKind, encode_example_wire, feature_wire

__all__ = [
    "DecodedValue",
    "FeatureValue",
    "classify_value",
    "decode_example",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
    "messages",
]

FeatureValue: TypeAlias = (
    bytes | str | int | float | bool | np.generic | np.ndarray | Sequence[Any]
)
"""What a feature may be given as: a scalar, bytes, str, a list of those, or a NumPy array."""

DecodedValue: TypeAlias = np.ndarray | list[bytes]
"""What a decoded feature is: float32 or int64 arrays, or a list of bytes."""


def _load_messages() -> dict[str, Any]:
    desc = resources.files("tfrecordkit.format._proto").joinpath("example.desc").read_bytes()
    pool = descriptor_pool.DescriptorPool()
    for file_proto in descriptor_pb2.FileDescriptorSet.FromString(desc).file:
        pool.Add(file_proto)
    names = ["BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList",
             "FeatureLists", "Example", "SequenceExample"]
    return {
        name: message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"tfrecordkit.proto.{name}")
        )
        for name in names
    }


messages: dict[str, Any] = _load_messages()
"""The protobuf message classes by name (``messages["Example"]``, ...)."""

_Example = messages["Example"]
_SequenceExample = messages["SequenceExample"]
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _check_int64(name: str, ints: list[int]) -> list[int]:
    if ints and (min(ints) < _INT64_MIN or max(ints) > _INT64_MAX):
        raise SchemaError(name, "an integer does not fit int64")
    return ints


def _to_bytes(name: str, item: object) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, bytearray | memoryview | np.bytes_):
        return bytes(item)
    raise SchemaError(name, f"cannot mix {type(item).__name__} into a bytes list")


def classify_value(name: str, value: object) -> tuple[ListKind, Any]:
    """Return ``(list kind, values)`` for a Python or NumPy feature value.

    Raises:
        SchemaError: the value has no Example representation.
    """
    if value is None:
        return "none", None  # no value: an empty Feature, as tf.train.Feature() is
    if isinstance(value, bytes):
        return "bytes", [value]
    if isinstance(value, str | bytearray | memoryview):
        return "bytes", [_to_bytes(name, value)]
    if isinstance(value, bool | int | np.integer | np.bool_):
        return "int64", _check_int64(name, [int(value)])
    if isinstance(value, float | np.floating):
        return "float", np.asarray([value], dtype=np.float32)
    if isinstance(value, np.ndarray):
        return _classify_array(name, value)
    if isinstance(value, list | tuple):
        return _classify_list(name, value)
    raise SchemaError(name, f"cannot encode a value of type {type(value).__name__}")


def _classify_array(name: str, array: np.ndarray) -> tuple[ListKind, Any]:
    kind = array.dtype.kind
    if kind == "f":
        return "float", array.ravel()
    if kind in "iub":
        if kind == "u" and array.size and int(array.max()) > _INT64_MAX:
            raise SchemaError(name, f"value {int(array.max())} does not fit int64")
        return "int64", array.astype(np.int64, copy=False).ravel()
    if kind == "S":
        return "bytes", array.ravel().tolist()
    if kind == "U":
        return "bytes", [s.encode("utf-8") for s in array.ravel().tolist()]
    if kind == "O":
        return _classify_list(name, array.ravel().tolist())
    raise SchemaError(name, f"cannot encode an array of dtype {array.dtype}")


def _classify_list(name: str, items: Sequence[object]) -> tuple[ListKind, Any]:
    if not items:
        return "none", None  # an empty Feature (no kind), as tf.train.Feature() is
    first = items[0]
    if isinstance(first, bytes | bytearray | memoryview | str | np.bytes_):
        return "bytes", [_to_bytes(name, item) for item in items]
    if all(isinstance(i, bool | int | np.integer | np.bool_) for i in items):
        return "int64", _check_int64(name, [int(i) for i in items])  # type: ignore[call-overload]
    if all(isinstance(i, int | float | np.integer | np.floating | bool) for i in items):
        return "float", np.asarray(items, dtype=np.float32)
    kinds = sorted({type(i).__name__ for i in items})
    raise SchemaError(name, f"a list must hold one kind of value; got {', '.join(kinds)}")


def _fill_feature(feature: Any, name: str, value: object) -> None:
    """Set a protobuf ``Feature`` from a Python or NumPy value (via its wire bytes)."""
    kind, values = classify_value(name, value)
    feature.MergeFromString(feature_wire(kind, values))


def _fill_features(features: Any, values: Mapping[str, object]) -> None:
    features.SetInParent()  # present even when empty, as tf.train.Features(feature={}) is
    table = features.feature
    for name, value in values.items():
        if not isinstance(name, str):
            raise SchemaError(str(name), "feature names must be str")
        _fill_feature(table[name], name, value)


def encode_example(features: Mapping[str, object]) -> bytes:
    """Serialize a mapping of feature name to value as a ``tf.train.Example``.

    Bytes and str become a bytes list (str as UTF-8); ints and bools an int64 list; floats a
    float list (stored as float32, as TensorFlow does); lists and NumPy arrays (flattened) keep
    their kind. An empty plain list gives a feature with no list set.

    Raises:
        SchemaError: a value has no Example representation (names the feature).
    """
    entries = []
    for name, value in features.items():
        if not isinstance(name, str):
            raise SchemaError(str(name), "feature names must be str")
        entries.append((name, feature_wire(*classify_value(name, value))))
    return encode_example_wire(entries)


def _packed_floats(raw: bytes, count: int) -> np.ndarray | None:
    """The ``count`` floats of a re-serialized ``FloatList``, or None if ``raw`` is not laid
    out as one packed field 1 holding exactly them (unknown fields may follow it)."""
    # Field 1 with wire type 2 can only be the packed values (protobuf writes them as one
    # field); any other leading tag (an unknown field first) means: take the slow path.
    if raw[:1] != b"\x0a":
        return None
    length, shift, at = 0, 0, 1
    while at < len(raw) and at < 11:
        byte = raw[at]
        length |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            break
        shift += 7
    if length != 4 * count or at + length > len(raw):
        return None
    return np.frombuffer(raw, dtype="<f4", count=count, offset=at).astype(np.float32)


def _decode_feature(feature: Any) -> DecodedValue:
    kind = feature.WhichOneof("kind")
    if kind == "bytes_list":
        return list(feature.bytes_list.value)
    if kind == "float_list":
        values = feature.float_list.value
        if len(values) > 32:
            packed = _packed_floats(feature.float_list.SerializeToString(), len(values))
            if packed is not None:
                return packed
        return np.array(values, dtype=np.float32)
    if kind == "int64_list":
        return np.array(feature.int64_list.value, dtype=np.int64)
    return []


def _check_map(message: Any, what: str) -> None:
    """Refuse a map whose entries protobuf dropped: an entry carrying a field the map entry
    does not define is kept as an unknown field of the map's message (where TensorFlow's
    parser rejects the record), so reading on would silently lose a feature."""
    if any(field.field_number == 1 for field in UnknownFieldSet(message)):
        raise RecordFormatError(f"a {what} map entry holds fields a map entry cannot have "
                         "(TensorFlow rejects such a record)")


def _decode_features(features: Any, kindless: bool = True) -> dict[str, DecodedValue]:
    _check_map(features, "Features")
    if kindless:
        return {name: _decode_feature(feature) for name, feature in features.feature.items()}
    return {name: _decode_feature(feature) for name, feature in features.feature.items()
            if feature.WhichOneof("kind") is not None}


def decode_example_keys(data: bytes) -> dict[str, DecodedValue]:
    """:func:`decode_example` as parsers check it: a feature with no list set is left out
    (TensorFlow's parser reads it as absent), so an empty list always has a type.

    Raises:
        ValueError: ``data`` is not a serialized Example.
    """
    return _decode_example(data, kindless=False)


def decode_example(data: bytes) -> dict[str, DecodedValue]:
    """Parse a serialized ``tf.train.Example`` into ``{name: value}``.

    Values are float32 or int64 NumPy arrays, or a list of bytes; a feature with no list set
    decodes to an empty list.

    Raises:
        ValueError: ``data`` is not a serialized Example.
    """
    return _decode_example(data, kindless=True)


# Which fields of each message of an Example hold messages (the rest hold bytes or numbers).
_SUBMESSAGES: dict[str, dict[int, str]] = {
    "Example": {1: "Features"}, "Features": {1: "Entry"}, "Entry": {2: "Feature"},
    "Feature": {1: "BytesList", 2: "FloatList", 3: "Int64List"},
    "BytesList": {}, "FloatList": {}, "Int64List": {},
    # a SequenceExample: its context is an Example's Features; its feature lists a map of
    # lists of Features
    "SequenceExample": {1: "Features", 2: "FeatureLists"}, "FeatureLists": {1: "ListEntry"},
    "ListEntry": {2: "FeatureList"}, "FeatureList": {1: "Feature"},
}
# The fields each message may hold, and in which wire types, for TensorFlow's parser to read
# it as protobuf does (None: any field); protobuf would keep others as unknown fields.
_ALLOWED: dict[str, dict[int, tuple[int, ...]] | None] = {
    "Example": None, "Features": {1: (2,)}, "Entry": {1: (2,), 2: (2,)},
    "Feature": {1: (2,), 2: (2,), 3: (2,)}, "BytesList": {1: (2,)}, "FloatList": {1: (2, 5)},
    "Int64List": {1: (0, 2)}, "SequenceExample": None, "FeatureLists": {1: (2,)},
    "ListEntry": {1: (2,), 2: (2,)}, "FeatureList": {1: (2,)},
}
_MAP_ENTRIES = {"Entry": "Features map entry", "ListEntry": "FeatureLists map entry"}


def _read_varint(data: bytes | memoryview, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("a truncated or overlong varint")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7


def _skip_group(view: bytes | memoryview, pos: int, end: int, number: int) -> int:
    """The position after the group of field ``number`` that starts at ``pos``."""
    open_groups = [number]
    while open_groups:
        if pos >= end or len(open_groups) > 100:
            raise ValueError("an unterminated or too deeply nested group")
        tag, pos = _read_varint(view, pos)
        field, wire = tag >> 3, tag & 7
        if field == 0 or tag > 0xFFFFFFFF:
            raise ValueError("a malformed tag in a group")
        if wire == 0:
            _, pos = _read_varint(view, pos)
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        elif wire == 2:
            size, pos = _read_varint(view, pos)
            pos += size
        elif wire == 3:
            open_groups.append(field)
        elif wire == 4:
            if open_groups.pop() != field:
                raise ValueError("a group closed by another field's end tag")
        else:
            raise ValueError(f"wire type {wire} in a group")
    return pos


def check_wire(data: bytes | memoryview, message: str = "Example") -> None:
    """Refuse what protobuf accepts but ``tf.io.parse_example`` refuses or reads otherwise, so
    that every reader gives the same values: a tag written as a padded (non-minimal) varint, a
    length of more than 5 bytes, a field a Features message, map entry or value list cannot
    have (or in another wire type), a map entry without a key or with its key or value twice,
    a Feature with more than one value list, a packed run beside other values. Unknown fields
    after a Feature's list, or after the packed run that opens a numeric list, are skipped:
    TensorFlow ignores what follows there and protobuf skips them, so both read alike (the
    compiled codec applies the same rules).

    Raises:
        ValueError: naming the byte offset.
    """
    view = bytes(data)
    stack = [(message, 0, len(view))]
    while stack:
        kind, pos, end = stack.pop()
        _check_message(view, kind, pos, end, stack)


def _check_message(view: bytes, kind: str, pos: int, end: int,
                   stack: list[tuple[str, int, int]]) -> None:
    """One message of :func:`check_wire` (its submessages pushed on ``stack``). The per-field
    loop keeps its counts in locals and reads one-byte tags and lengths inline: it is the
    pure-Python codec's per-record check."""
    allowed = _ALLOWED[kind]
    children = _SUBMESSAGES[kind]
    numeric_list = kind in ("FloatList", "Int64List")
    entry = kind in _MAP_ENTRIES
    fields = lists = packed = keys = values = 0
    while pos < end:
        start = pos
        if view[pos] < 0x80:
            number, wire, pos = view[pos] >> 3, view[pos] & 7, pos + 1
            if not number:
                raise ValueError(f"a malformed tag at byte {start}")
        else:
            number, wire, pos = _checked_tag(view, pos)
        # After a Feature's list, or after the packed run opening a numeric list,
        # TensorFlow ignores the rest and protobuf skips unknown fields: both read alike.
        trailing = allowed is not None and number not in allowed and (
            (kind == "Feature" and lists > 0)
            or (numeric_list and packed == 1 and fields == 1))
        if not trailing:
            if allowed is not None and wire not in allowed.get(number, ()):
                raise ValueError(f"a {_MAP_ENTRIES.get(kind, f'{kind} message')} holds field "
                                 f"{number} (wire type {wire}) at byte {start}, which "
                                 "TensorFlow rejects")
            fields += 1
            if entry:
                keys += number == 1
                values += number == 2
                repeated = keys > 1 or values > 1
            elif kind == "Feature":
                lists += 1
                repeated = lists > 1
            else:
                packed += numeric_list and wire == 2
                repeated = packed > 0 and fields > 1
            if repeated:
                raise ValueError(f"a {_MAP_ENTRIES.get(kind, f'{kind} message')} repeats a "
                                 f"field at byte {start}, which TensorFlow reads otherwise "
                                 "than protobuf")
        if wire == 2 and pos < end and view[pos] < 0x80:  # a one-byte length, inline
            size = view[pos]
            pos += 1
            if pos + size > end:
                raise ValueError(f"a malformed length at byte {pos - 1}")
            if (inner := children.get(number)) is not None:
                stack.append((inner, pos, pos + size))
            pos += size
        else:
            pos = _skip_field(view, pos, end, number, wire, start=start,
                              inner=children.get(number), stack=stack)
    if entry and not (keys and values):
        raise ValueError(f"a {_MAP_ENTRIES[kind]} has no key or no value, which "
                         "TensorFlow rejects")


def _checked_tag(view: bytes, pos: int) -> tuple[int, int, int]:
    """The field number and wire type of the tag at ``pos``, and where its value starts;
    a padded or malformed tag refused."""
    start, tag = pos, view[pos]
    if tag < 0x80:
        pos += 1
    else:
        tag, pos = _read_varint(view, pos)
        if view[pos - 1] == 0 or tag > 0xFFFFFFFF:
            raise ValueError(f"a malformed or padded tag at byte {start}")
    if not tag >> 3:
        raise ValueError(f"a malformed tag at byte {start}")
    return tag >> 3, tag & 7, pos


def _skip_field(view: bytes, pos: int, end: int, number: int, wire: int, *, start: int,
                inner: str | None, stack: list[tuple[str, int, int]]) -> int:
    """Where the value of the field whose tag began at ``start`` ends (a submessage of kind
    ``inner`` pushed on ``stack`` to check)."""
    if wire == 2:
        size_at = pos
        size = view[pos] if pos < end else 0x80
        if size < 0x80:
            pos += 1
        else:
            size, pos = _read_varint(view, pos)
            if pos - size_at > 5:
                raise ValueError(f"a malformed length at byte {size_at}")
        if pos + size > end:
            raise ValueError(f"a malformed length at byte {size_at}")
        if inner is not None:
            stack.append((inner, pos, pos + size))
        pos += size
    elif wire == 0:
        _, pos = _read_varint(view, pos)
    elif wire in {1, 5}:
        pos += 8 if wire == 1 else 4
    elif wire == 3:
        pos = _skip_group(view, pos, end, number)
    else:
        raise ValueError(f"an unmatched end of group or wire type {wire} at byte {start}")
    if pos > end:
        raise ValueError(f"a field runs past its message at byte {start}")
    return pos


def _compiled_check() -> Any:
    """The compiled codec's structural check of one record (the rules of
    :func:`check_wire`, ~0.5 us), or :func:`check_wire` itself without the compiled codec
    (the codec the columnar parser chose)."""
    codec = CODEC
    if codec is None:
        return check_wire

    def check(data: bytes | memoryview) -> None:
        try:
            codec.scan([bytes(data)], [])
        except ValueError as err:
            # The codec's errors are (record, spec, message).
            raise ValueError(str(err.args[-1])) from None

    return check


_check_structure = None


def _decode_example(data: bytes, kindless: bool) -> dict[str, DecodedValue]:
    global _check_structure  # noqa: PLW0603 - chosen once, on first use
    if _check_structure is None:
        _check_structure = _compiled_check()
    try:
        _check_structure(data)
    except ValueError as err:
        raise RecordFormatError(f"not a serialized tf.train.Example: {err}") from None
    try:
        example = _Example.FromString(data)
    except Exception as err:  # protobuf's DecodeError has no stable import path across versions
        raise RecordFormatError(f"not a serialized tf.train.Example: {err}") from None
    try:
        return _decode_features(example.features, kindless)
    except ValueError as err:
        raise RecordFormatError(f"not a valid tf.train.Example: {err}") from None


def encode_sequence_example(
    context: Mapping[str, object], feature_lists: Mapping[str, Sequence[object]]
) -> bytes:
    """Serialize a ``tf.train.SequenceExample``: context features plus per-step feature lists."""
    message = _SequenceExample()
    _fill_features(message.context, context)
    message.feature_lists.SetInParent()
    lists = message.feature_lists.feature_list
    for name, steps in feature_lists.items():
        feature_list = lists[name]
        if isinstance(steps, str | bytes):
            raise SchemaError(name, "a feature list must be a sequence of per-step values")
        for step in steps:
            _fill_feature(feature_list.feature.add(), name, step)
    return message.SerializeToString(deterministic=True)  # type: ignore[no-any-return]


def decode_sequence_example(
    data: bytes,
) -> tuple[dict[str, DecodedValue], dict[str, list[DecodedValue]]]:
    """Parse a serialized ``tf.train.SequenceExample`` into ``(context, feature_lists)``,
    refusing what TensorFlow's parser refuses or reads otherwise (see :func:`check_wire`)."""
    try:
        check_wire(data, "SequenceExample")
    except ValueError as err:
        raise RecordFormatError(f"not a serialized tf.train.SequenceExample: {err}") from None
    try:
        message = _SequenceExample.FromString(data)
    except Exception as err:
        raise RecordFormatError(f"not a serialized tf.train.SequenceExample: {err}") from None
    context = _decode_features(message.context)
    _check_map(message.feature_lists, "FeatureLists")
    lists = {
        name: [_decode_feature(f) for f in feature_list.feature]
        for name, feature_list in message.feature_lists.feature_list.items()
    }
    return context, lists
