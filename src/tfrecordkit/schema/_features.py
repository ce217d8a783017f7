"""Typed features: how each kind of value is stored in a ``tf.train.Example`` and read back.

Each feature owns one main Example key (its name) and, where shapes vary per record, auxiliary
keys ``<name>/<field>`` (``image/height``, ``tensor/shape``, ...). A feature knows how to encode
a Python/NumPy value, which parsing spec reads each key, and how to decode without TensorFlow.
"""

from __future__ import annotations

import collections.abc
import io
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from tfrecordkit.errors import MissingDependencyError, SchemaError
from tfrecordkit.format._columns import Column
from tfrecordkit.format._encode import (
    EncColumn,
    bytes_column,
    float_column,
    int64_column,
    ragged_column,
)
from tfrecordkit.format._spec import KeySpec, SpecDtype, check_key
from tfrecordkit.format._wire import feature_wire, frame_entry, map_entry_prefix, varint
from tfrecordkit.schema._sniff import image_header, png_bit_depth, sniff_bytes
from tfrecordkit.schema._vocab import Vocabulary

__all__ = [
    "Audio",
    "ClassLabel",
    "Feature",
    "Image",
    "KeySpec",
    "Scalar",
    "Sequence",
    "Tensor",
    "Text",
    "check_key",
    "convert_channels",
    "decode_image_bytes",
    "feature_from_json",
]

Entries = list[bytes]  # wire parts of a feature's map entries, joined as they are
_SPEC_DTYPE: dict[str, SpecDtype] = {"bytes": "string", "float": "float32", "int64": "int64"}
EntryEncoder = Callable[[Any], Entries]
ColumnEncoder = Callable[[list[Any]], list[EncColumn] | None]


# -- entry encoders: value -> framed map entries ---------------------------------------------


def _entry(key: str, kind: Literal["bytes", "float", "int64"], values: Any) -> bytes:
    return frame_entry(map_entry_prefix(key), feature_wire(kind, values))


def _int_scalar_encoder(key: str) -> Callable[[int], bytes]:
    # Feature{int64_list{value: [v]}}: every length is fixed by the varint's length.
    prefix = map_entry_prefix(key)
    prefixes = {}
    for n in range(1, 11):
        feature_head = b"\x1a" + varint(n + 2) + b"\x0a" + varint(n)
        entry_len = len(prefix) + 2 + len(feature_head) + n
        prefixes[n] = b"\x0a" + varint(entry_len) + prefix + b"\x12" + varint(
            len(feature_head) + n) + feature_head

    small = [prefixes[1] + bytes([n]) for n in range(128)]

    def encode(value: int) -> bytes:
        if 0 <= value < 128:
            return small[value]
        encoded = varint(value)
        return prefixes[len(encoded)] + encoded

    return encode


def _float_scalar_encoder(key: str) -> Callable[[float], bytes]:
    head = frame_entry(map_entry_prefix(key), b"\x12\x06\x0a\x04\x00\x00\x00\x00")[:-4]
    pack = struct.Struct("<f").pack

    def encode(value: float) -> bytes:
        try:
            packed = pack(value)
        except OverflowError:
            raise SchemaError(key, f"{value!r} does not fit float32") from None
        if packed in _FLOAT32_ZEROS and value:
            raise SchemaError(key, f"{value!r} would become 0.0 in float32")
        return head + packed

    return encode


_FLOAT32_ZEROS = (b"\x00\x00\x00\x00", b"\x00\x00\x00\x80")


def _bytes_scalar_encoder(key: str) -> Callable[[bytes], tuple[bytes, bytes]]:
    """Encoder of a one-value bytes list; returns ``(head, value)`` parts so that a large
    value (an image) is copied once, when the record is joined."""
    prefix = map_entry_prefix(key)

    def encode(value: bytes) -> tuple[bytes, bytes]:
        n = len(value)
        value_head = b"\x0a" + varint(n)
        list_len = len(value_head) + n
        list_head = b"\x0a" + varint(list_len)
        feature_len = len(list_head) + list_len
        entry_head = prefix + b"\x12" + varint(feature_len)
        entry_len = len(entry_head) + feature_len
        return b"\x0a" + varint(entry_len) + entry_head + list_head + value_head, value

    return encode


def _as_int(name: str, value: Any) -> int:
    if isinstance(value, bool | int | np.integer | np.bool_):
        result = int(value)
        if -(2**63) <= result < 2**63:
            return result
        raise SchemaError(name, f"{result} does not fit int64")
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "iub":
        return _as_int(name, value.reshape(()).item())
    raise SchemaError(name, f"expected an integer, got {type(value).__name__} {value!r:.60}")


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, float | int | np.floating | np.integer) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "fiu":
        return float(value.reshape(()).item())
    raise SchemaError(name, f"expected a number, got {type(value).__name__} {value!r:.60}")


def _utf8(name: str, text: str) -> bytes:
    """``text`` as UTF-8, refusing a lone surrogate (not a Unicode character) by position."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise SchemaError(name, f"text holds a lone surrogate {text[err.start]!r} at character "
                                f"{err.start}, which is not valid Unicode") from None


def _as_text_bytes(name: str, value: Any) -> bytes:
    if isinstance(value, str):
        return _utf8(name, value)
    if isinstance(value, bytes | bytearray | np.bytes_):
        data = bytes(value)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise SchemaError(name, f"text is not valid UTF-8 (byte {err.start})") from None
        return data
    raise SchemaError(name, f"expected str, got {type(value).__name__}")


def _as_bytes(name: str, value: Any) -> bytes:
    if isinstance(value, str):
        return _utf8(name, value)
    if isinstance(value, bytes | bytearray | np.bytes_):
        return bytes(value)
    raise SchemaError(name, f"expected str or bytes, got {type(value).__name__} {value!r:.60}")


def _scalar(features: Mapping[str, Any], key: str) -> Any:
    return features[key][0]


def _int_column(values: list[Any], low: int, high: int) -> np.ndarray | None:
    """``values`` as an ``[n, 1]`` int64 array when all are ints within ``low..high``."""
    if not all(type(v) is int for v in values):
        return None
    try:
        array = np.array(values, dtype=np.int64)
    except OverflowError:
        return None
    if array.size and (int(array.min()) < low or int(array.max()) > high):
        return None
    return array.reshape(-1, 1)


def _float_column(values: list[Any], dtype: str = "float32") -> np.ndarray | None:
    """``values`` as an ``[n, 1]`` float32 array when all are floats that fit ``dtype``."""
    if not all(type(v) is float for v in values):
        return None
    try:
        return _float32_list("", values, dtype).reshape(-1, 1)
    except SchemaError:
        return None  # the record-by-record path names the value


def _float32_list(name: str, values: list[float] | np.ndarray,
                  dtype: str = "float32") -> np.ndarray:
    """``values`` as float32 (what a float list stores), refusing one beyond the range of
    ``dtype`` or a non-zero one that ``dtype`` would round to zero; rounding to its
    precision is what declaring it asks for."""
    wide = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        narrow = wide.astype(dtype)
    bad = np.flatnonzero(np.isinf(narrow) & ~np.isinf(wide))
    if bad.size:
        raise SchemaError(name, f"{wide[bad[0]].item()!r} does not fit {dtype}")
    bad = np.flatnonzero((narrow == 0) & (wide != 0))
    if bad.size:
        raise SchemaError(name, f"{wide[bad[0]].item()!r} would become 0.0 in {dtype}")
    return narrow.astype(np.float32)


def _check_narrowing(name: str, array: np.ndarray, dtype: str) -> None:
    """Refuse values of ``array`` that ``dtype`` cannot hold: integers beyond its range, floats
    beyond its range or non-zero floats it would round to zero (wrapping or overflowing
    silently is never what declaring a narrower type asks for)."""
    if not array.size:
        return
    target = np.dtype(dtype)
    if target.kind in "iu":
        info = np.iinfo(target)
        low, high = int(array.min()), int(array.max())
        if low < info.min or high > info.max:
            bad = low if low < info.min else high
            raise SchemaError(name, f"{bad} does not fit {dtype}")
    elif target.kind == "f":
        _float32_list(name, array.reshape(-1), dtype)


def _ragged_column(lists: list[Any], kind: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Lists (of Python ints or floats, or 1-D arrays) of float or int64 numbers as flat values
    and row splits, when every value converts as the record-by-record path converts it."""
    arrays: list[Any] = []
    for items in lists:
        if isinstance(items, np.ndarray):
            allowed = "fiub" if kind == "float" else "iub"
            if items.ndim != 1 or items.dtype.kind not in allowed or (
                    items.dtype.kind == "u" and items.dtype.itemsize == 8):
                return None
            arrays.append(items)
        elif type(items) is list or type(items) is tuple:
            number = (int, float) if kind == "float" else (int,)
            if not all(type(v) in number for v in items):
                return None
            arrays.append(items)
        else:
            return None
    splits = _row_splits([len(a) for a in arrays])
    flat = [v for a in arrays for v in (a.tolist() if isinstance(a, np.ndarray) else a)]
    try:
        if kind == "float":  # ints converted as the record path converts them
            return _float32_list("", [float(v) for v in flat]), splits
        return np.array(flat, dtype=np.int64), splits
    except (OverflowError, SchemaError):
        return None  # the record-by-record path names the bad value


def _row_splits(lengths: list[int]) -> np.ndarray:
    """Where each of ``len(lengths)`` rows starts in the flat values, and where the last ends."""
    splits = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=splits[1:])
    return splits


def _str_column(values: list[Any], *, accept_bytes: bool) -> list[bytes] | None:
    """UTF-8 bytes of every value when all are str (or, with ``accept_bytes``, all bytes)."""
    if all(type(v) is str for v in values):
        try:
            return [v.encode("utf-8") for v in values]
        except UnicodeEncodeError:
            return None
    if accept_bytes and all(type(v) is bytes for v in values):
        return values
    return None


# -- features --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Feature:
    """Base of all features; subclasses are frozen dataclasses that validate on construction."""

    kind: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description, inverse of :func:`feature_from_json`."""
        out: dict[str, Any] = {"kind": self.kind}
        for name, value in self.__dict__.items():
            out[name] = value.to_json() if isinstance(value, Feature) else (
                list(value) if isinstance(value, tuple) else value)
        return out

    def key_specs(self, name: str) -> list[KeySpec]:
        """Parsing specs of every Example key this feature writes."""
        raise NotImplementedError

    def entry_encoder(self, name: str) -> EntryEncoder:
        """A function turning one value into this feature's framed Example map entries."""
        raise NotImplementedError

    def column_encoder(self, name: str) -> ColumnEncoder | None:
        """A function turning a batch's values into encoding columns at once, or None.

        It returns None for values it does not take in one go (it then encodes them record
        by record through :meth:`entry_encoder`, which also reports the bad ones). Both
        give the same bytes.
        """
        return None

    def decode(self, name: str, features: Mapping[str, Any]) -> Any:
        """The value back from decoded Example features, without TensorFlow."""
        raise NotImplementedError

    def decode_column(self, name: str, columns: Mapping[str, Column], n: int,
                      where: Callable[[int], Any], **options: Any) -> Any:
        """Every record's value from the batch's columns (a sequence of ``n`` values); this
        default decodes record by record (``options`` go to :meth:`decode`), kinds with a
        vectorised form override it."""
        keys = [spec.key for spec in self.key_specs(name)]
        out = []
        for i in range(n):
            record = {k: columns[k].row(i) for k in keys if not columns[k].missing[i]}
            try:
                out.append(self.decode(name, record, **options))
            except SchemaError as err:
                raise SchemaError(err.feature, err.reason, record=where(i)) from None
            except (OSError, ValueError, RuntimeError, KeyError, IndexError) as err:
                raise SchemaError(name, f"cannot decode: {err}", record=where(i)) from None
        return out


_SCALAR_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "bool",
                  "float32", "float64", "float16", "string")


@dataclass(frozen=True)
class Scalar(Feature):
    """One number or string per record: int64 / float32 list of one value, or bytes."""

    dtype: str = "int64"
    #: Only for ``float64``: keep values as float32 (what datasets written before float64 was
    #: refused hold), rounding them; without it ``float64`` is refused (it would not round-trip).
    float32_storage: bool = field(default=False, repr=False)
    kind: ClassVar[str] = "scalar"

    def __post_init__(self) -> None:
        if self.dtype not in _SCALAR_DTYPES:
            raise SchemaError(
                "<scalar>", f"dtype must be one of {_SCALAR_DTYPES}; got {self.dtype!r}")
        if self.dtype == "float64" and not self.float32_storage:
            raise SchemaError(
                "<scalar>", "float64 values would be stored as float32 (a tf.train.Example "
                "float list is 32-bit) and not read back as written; keep every bit with "
                "Tensor((), 'float64') (8 bytes a value, read in TensorFlow with "
                "tf.io.decode_raw), or declare Scalar('float32')")
        if self.float32_storage and self.dtype != "float64":
            raise SchemaError("<scalar>", "float32_storage applies to float64 only")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "dtype": self.dtype}

    @property
    def _float_dtype(self) -> str:
        """The type a float value must fit: float64 kept as float32 must fit float32."""
        return "float32" if self.dtype == "float64" else self.dtype

    @property
    def list_kind(self) -> Literal["bytes", "float", "int64"]:
        if self.dtype == "string":
            return "bytes"
        return "float" if self.dtype.startswith("float") else "int64"

    def key_specs(self, name: str) -> list[KeySpec]:
        return [KeySpec(name, _SPEC_DTYPE[self.list_kind], ())]

    @property
    def _int_range(self) -> tuple[int, int]:
        if self.dtype == "bool":
            return 0, 1
        info = np.iinfo(self.dtype)
        return int(info.min), int(info.max)

    def _checked_int(self, name: str, value: Any) -> int:
        number = _as_int(name, value)
        low, high = self._int_range
        if not low <= number <= high:
            raise SchemaError(name, f"{number} does not fit {self.dtype}")
        return number

    def entry_encoder(self, name: str) -> EntryEncoder:
        if self.list_kind == "float":
            encode_float = _float_scalar_encoder(name)
            if self._float_dtype == "float16":
                return lambda value: [encode_float(float(_float32_list(
                    name, [_as_float(name, value)], "float16")[0]))]
            return lambda value: [encode_float(
                value if type(value) is float else _as_float(name, value))]
        if self.list_kind == "int64":
            encode_int = _int_scalar_encoder(name)
            low, high = self._int_range
            return lambda value: [encode_int(
                value if type(value) is int and low <= value <= high
                else self._checked_int(name, value))]
        encode_bytes = _bytes_scalar_encoder(name)

        def encode(value: Any) -> Entries:
            if isinstance(value, str):
                value = _utf8(name, value)
            if not isinstance(value, bytes):
                raise SchemaError(name, f"expected str or bytes, got {type(value).__name__}")
            return [*encode_bytes(value)]

        return encode

    def column_encoder(self, name: str) -> ColumnEncoder | None:
        def encode(values: list[Any]) -> list[EncColumn] | None:
            if self.list_kind == "float":
                floats = _float_column(values, self._float_dtype)
                return None if floats is None else [float_column(name, floats)]
            if self.list_kind == "int64":
                ints = _int_column(values, *self._int_range)
                return None if ints is None else [int64_column(name, ints)]
            data = _str_column(values, accept_bytes=True)
            return None if data is None else [bytes_column(name, data)]

        return encode

    def decode(self, name: str, features: Mapping[str, Any]) -> Any:
        value = _scalar(features, name)
        if self.dtype == "string":
            return value
        if self.list_kind == "int64":
            number = self._checked_int(name, value)
            return bool(number) if self.dtype == "bool" else number
        return np.asarray(value).astype(self.dtype).item()

    def decode_column(self, name: str, columns: Mapping[str, Column], n: int,
                      where: Callable[[int], Any], **options: Any) -> Any:
        column = columns[name]
        if self.dtype == "string":
            return column.to_bytes()
        values = column.values.reshape(n)
        if self.list_kind == "int64":
            low, high = self._int_range
            bad = np.flatnonzero((values < low) | (values > high))
            if bad.size:
                raise SchemaError(name, f"{int(values[bad[0]])} does not fit {self.dtype}",
                                  record=where(int(bad[0])))
            return values != 0 if self.dtype == "bool" else values.astype(self.dtype)
        return values.astype(self.dtype)


@dataclass(frozen=True)
class ClassLabel(Feature):
    """A class index (int64), with the class names kept in the schema.

    ``from_shard=True`` describes files whose records carry no label because each file holds
    one class (``tfrecordkit adopt --class-pattern``): nothing is stored in or parsed from a
    record, and every reader gives the class of the record's shard (per-class layout only).
    """

    names: collections.abc.Sequence[str] = ()
    from_shard: bool = False
    kind: ClassVar[str] = "class_label"

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(str(n) for n in self.names))
        if not self.names:
            raise SchemaError("<class_label>", "needs at least one class name")
        if len(set(self.names)) != len(self.names):
            raise SchemaError("<class_label>", "class names must be unique")
        if not isinstance(self.from_shard, bool):
            raise SchemaError("<class_label>", f"from_shard must be True or False; got "
                                               f"{self.from_shard!r}")

    @property
    def num_classes(self) -> int:
        return len(self.names)

    def index_of(self, name: str, value: Any) -> int:
        """The class index of ``value`` (an index or a class name)."""
        if isinstance(value, str):
            try:
                return self._lookup[value]
            except KeyError:
                raise SchemaError(name, f"unknown class {value!r:.60}") from None
        index = _as_int(name, value)
        if not 0 <= index < len(self.names):
            raise SchemaError(name, f"class index {index} outside 0..{len(self.names) - 1}")
        return index

    @property
    def _lookup(self) -> dict[str, int]:
        lookup = self.__dict__.get("_lookup_cache")
        if lookup is None:
            lookup = {n: i for i, n in enumerate(self.names)}
            object.__setattr__(self, "_lookup_cache", lookup)
        return lookup

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "names": list(self.names)}
        if self.from_shard:
            out["from_shard"] = True
        return out

    def key_specs(self, name: str) -> list[KeySpec]:
        return [] if self.from_shard else [KeySpec(name, "int64", ())]

    def entry_encoder(self, name: str) -> EntryEncoder:
        if self.from_shard:
            def refuse(value: Any) -> list[bytes]:
                raise SchemaError(name, "a label taken from the shard (from_shard=True) is "
                                        "not written into records; store it as "
                                        "ClassLabel(names)")
            return refuse
        encode_int = _int_scalar_encoder(name)
        return lambda value: [encode_int(self.index_of(name, value))]

    def column_encoder(self, name: str) -> ColumnEncoder | None:
        if self.from_shard:
            return None

        def encode(values: list[Any]) -> list[EncColumn] | None:
            ids: np.ndarray | None
            if all(type(v) is str for v in values):
                lookup = self._lookup
                if not all(v in lookup for v in values):
                    return None
                ids = np.array([lookup[v] for v in values], dtype=np.int64).reshape(-1, 1)
            else:
                ids = _int_column(values, 0, len(self.names) - 1)
            return None if ids is None else [int64_column(name, ids)]

        return encode

    def decode(self, name: str, features: Mapping[str, Any]) -> int:
        return self.index_of(name, _scalar(features, name))

    def shard_entry(self, name: str, class_id: int) -> bytes:
        """A serialized Example holding only this label, ``class_id``: appended to a record,
        it adds the label to the record's features (concatenated Example messages merge),
        so TensorFlow's parser reads it as if the record held it."""
        entry = _int_scalar_encoder(name)(self.index_of(name, class_id))
        return b"\x0a" + varint(len(entry)) + entry

    def shard_values(self, name: str, classes: Any, n: int) -> np.ndarray:
        """A label taken from the shard: the ``n`` records' shard classes, checked.

        Raises:
            SchemaError: no shard classes given (the record alone does not hold the label),
                or a class id outside the names.
        """
        if classes is None:
            raise SchemaError(name, "the label is each file's class (from_shard=True), not "
                                    "in the record: read it with a tfrecordkit reader, or "
                                    "pass the shard's class")
        values = np.asarray(classes, dtype=np.int64).reshape(n)
        bad = np.flatnonzero((values < 0) | (values >= len(self.names)))
        if bad.size:
            raise SchemaError(name, f"shard class {int(values[bad[0]])} outside "
                                    f"0..{len(self.names) - 1}")
        return values

    def decode_column(self, name: str, columns: Mapping[str, Column], n: int,
                      where: Callable[[int], Any], **options: Any) -> Any:
        values = columns[name].values.reshape(n)
        bad = np.flatnonzero((values < 0) | (values >= len(self.names)))
        if bad.size:
            raise SchemaError(name, f"class index {int(values[bad[0]])} outside "
                                    f"0..{len(self.names) - 1}", record=where(int(bad[0])))
        return values


@dataclass(frozen=True)
class Text(Feature):
    """UTF-8 text (one string per record), optionally with its token ids (``<name>/ids``):
    given with each record (``token_ids=True``), or computed by a :class:`Vocabulary`
    (``vocabulary=Vocabulary(max_size=20000)`` builds one from the training split at
    conversion and stores it in the schema)."""

    token_ids: bool = False
    vocabulary: Vocabulary | None = None
    kind: ClassVar[str] = "text"

    @property
    def has_ids(self) -> bool:
        """Whether records store token ids next to the text."""
        return self.token_ids or self.vocabulary is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "token_ids": self.token_ids}
        if self.vocabulary is not None:
            out["vocabulary"] = self.vocabulary.to_json()
        return out

    def key_specs(self, name: str) -> list[KeySpec]:
        specs = [KeySpec(name, "string", ())]
        if self.has_ids:
            specs.append(KeySpec(f"{name}/ids", "int64", None))
        return specs

    def entry_encoder(self, name: str) -> EntryEncoder:
        encode_text = _bytes_scalar_encoder(name)
        ids_key = f"{name}/ids"
        vocabulary = self.vocabulary
        if vocabulary is not None and not vocabulary.built:
            def unbuilt(value: Any) -> Entries:
                raise SchemaError(name, "the vocabulary has no tokens yet: convert builds it "
                                        "from the training split, or give Vocabulary(tokens)")
            return unbuilt

        def encode(value: Any) -> Entries:
            if vocabulary is not None and not isinstance(value, Mapping):
                text = _as_text_bytes(name, value)
                return [*encode_text(text),
                        _entry(ids_key, "int64", vocabulary.ids(text.decode("utf-8")))]
            if self.has_ids:
                if not isinstance(value, Mapping) or "ids" not in value:
                    raise SchemaError(name, "expected {'text': ..., 'ids': [...]} (token_ids=True)")
                ids = np.asarray(value["ids"])
                if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
                    raise SchemaError(
                        name, f"token ids must be a 1-D integer list, got {ids.dtype}")
                return [*encode_text(_as_text_bytes(name, value.get("text", ""))),
                        _entry(ids_key, "int64", ids.astype(np.int64))]
            if isinstance(value, Mapping):
                value = value.get("text")
            return [*encode_text(_as_text_bytes(name, value))]

        return encode

    def column_encoder(self, name: str) -> ColumnEncoder | None:
        vocabulary = self.vocabulary
        if self.token_ids or (vocabulary is not None and not vocabulary.built):
            return None

        def encode(values: list[Any]) -> list[EncColumn] | None:
            data = _str_column(values, accept_bytes=False)  # bytes need a UTF-8 check
            if data is None:
                return None
            if vocabulary is None:
                return [bytes_column(name, data)]
            ids = [vocabulary.ids(v) for v in values]
            flat = np.concatenate(ids) if ids else np.zeros(0, np.int64)
            return [bytes_column(name, data), ragged_column(
                f"{name}/ids", "int64", flat, _row_splits([len(i) for i in ids]))]

        return encode

    def decode_column(self, name: str, columns: Mapping[str, Column], n: int,
                      where: Callable[[int], Any], **options: Any) -> Any:
        if self.has_ids:
            return super().decode_column(name, columns, n, where, **options)
        out = []
        for i, data in enumerate(columns[name].to_bytes()):
            try:
                out.append(data.decode("utf-8"))
            except UnicodeDecodeError as err:
                raise SchemaError(name, f"cannot decode: {err}", record=where(i)) from None
        return out

    def decode(self, name: str, features: Mapping[str, Any]) -> Any:
        text = _scalar(features, name).decode("utf-8")
        if self.has_ids:
            return {"text": text, "ids": np.asarray(features.get(f"{name}/ids", []), np.int64)}
        return text


@dataclass(frozen=True)
class Tensor(Feature):
    """An n-d array stored as raw little-endian bytes; ``None`` dims vary per record."""

    shape: tuple[int | None, ...] = ()
    dtype: str = "float32"
    kind: ClassVar[str] = "tensor"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        try:
            dtype = np.dtype(self.dtype)
        except TypeError:
            raise SchemaError("<tensor>", f"unknown dtype {self.dtype!r}") from None
        if dtype.kind not in "biuf":
            raise SchemaError("<tensor>", f"dtype must be boolean, integer or float; got {dtype}")
        object.__setattr__(self, "dtype", dtype.name)
        if any(d is not None and (not isinstance(d, int) or d < 0) for d in self.shape):
            raise SchemaError("<tensor>", f"shape dims must be ints >= 0 or None; got {self.shape}")

    @property
    def variable(self) -> bool:
        return any(d is None for d in self.shape)

    def key_specs(self, name: str) -> list[KeySpec]:
        specs = [KeySpec(name, "string", ())]
        if self.variable:
            specs.append(KeySpec(f"{name}/shape", "int64", (len(self.shape),)))
        return specs

    def entry_encoder(self, name: str) -> EntryEncoder:
        encode_bytes = _bytes_scalar_encoder(name)
        shape_key = f"{name}/shape"
        little = np.dtype(self.dtype).newbyteorder("<")

        def encode(value: Any) -> Entries:
            try:
                array = np.asarray(value)
            except (TypeError, ValueError) as err:
                raise SchemaError(name, f"not an array: {err}") from None
            if array.ndim != len(self.shape) or any(
                want is not None and want != got for want, got in zip(self.shape, array.shape,
                                                                       strict=True)
            ):
                raise SchemaError(name, f"shape {array.shape} does not fit {self.shape}")
            target = np.dtype(self.dtype)
            if array.dtype != target and not np.can_cast(
                array.dtype, target, casting="same_kind"
            ) and not (array.dtype.kind in "iub" and target.kind in "iu"):
                raise SchemaError(name, f"dtype {array.dtype} does not fit {self.dtype}")
            if not np.can_cast(array.dtype, self.dtype, casting="safe"):
                _check_narrowing(name, array, self.dtype)
            entries = [*encode_bytes(np.ascontiguousarray(array, dtype=little).tobytes())]
            if self.variable:
                entries.append(_entry(shape_key, "int64", list(array.shape)))
            return entries

        return encode

    def decode(self, name: str, features: Mapping[str, Any]) -> np.ndarray:
        shape: tuple[int, ...] = (
            tuple(features[f"{name}/shape"].tolist()) if self.variable
            else tuple(int(d) for d in self.shape)  # type: ignore[arg-type]  # fixed: no None
        )
        data = _scalar(features, name)
        fits = len(shape) == len(self.shape) and all(
            d >= 0 and (want is None or want == d) for d, want in zip(shape, self.shape,
                                                                      strict=False))
        itemsize = np.dtype(self.dtype).itemsize
        if not fits or int(np.prod(np.array(shape, dtype=np.int64))) * itemsize != len(data):
            raise SchemaError(name, f"{len(data)} bytes with stored shape {shape} do not fit "
                                    f"{self.dtype} {self.shape}")
        return np.frombuffer(data, dtype=np.dtype(self.dtype).newbyteorder("<")).astype(
            self.dtype).reshape(shape)


def _pil() -> Any:
    try:
        from PIL import Image as PILImage
    except ImportError as err:
        raise MissingDependencyError("pillow", "image", "encoding or decoding images") from err
    return PILImage


PIL_MODE_CHANNELS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "P": 3, "1": 1, "I;16": 1, "CMYK": 3,
                 "YCbCr": 3, "I": 1, "F": 1}


@dataclass(frozen=True)
class Image(Feature):
    """An image: encoded bytes (``jpeg``, ``png``, or ``auto``: either, as they came) or ``raw``
    uint8 pixels, with per-record ``height``, ``width`` and ``channels``.

    ``channels`` is what readers decode to (None: as stored, which may vary per record).
    ``dims=False`` describes records that hold only the encoded bytes (files other tools
    wrote): nothing else is stored or read; not for ``raw``. ``size`` is the ``(height,
    width)`` of every image, when they all have one (conversion finds it); readers then
    batch images as plain arrays rather than padded ones with their lengths.
    """

    encoding: str = "auto"
    channels: int | None = None
    dims: bool = True
    size: tuple[int, int] | None = None
    kind: ClassVar[str] = "image"

    _ENCODINGS: ClassVar[tuple[str, ...]] = ("auto", "jpeg", "png", "raw")

    def __post_init__(self) -> None:
        if self.encoding not in self._ENCODINGS:
            raise SchemaError("<image>", f"encoding must be one of {self._ENCODINGS}; "
                                         f"got {self.encoding!r}")
        if self.channels not in (None, 1, 2, 3, 4):
            raise SchemaError(
                "<image>", f"channels must be None, 1, 2, 3 or 4; got {self.channels}")
        if not self.dims and self.encoding == "raw":
            raise SchemaError("<image>", "raw pixels need their dims (height, width, channels)")
        if self.size is not None:
            size = tuple(self.size)
            if len(size) != 2 or not all(type(d) is int and d > 0 for d in size):
                raise SchemaError("<image>", f"size must be (height, width), two positive "
                                             f"ints; got {self.size!r}")
            object.__setattr__(self, "size", size)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "encoding": self.encoding,
                               "channels": self.channels}
        if not self.dims:
            out["dims"] = False
        if self.size is not None:
            out["size"] = list(self.size)
        return out

    @property
    def fixed_shape(self) -> tuple[int, int, int] | None:
        """The decoded shape every image has (known size and channels), else None."""
        if self.size is None or self.channels is None:
            return None
        return (*self.size, self.channels)

    @property
    def _dim_names(self) -> tuple[str, ...]:
        return ("height", "width", "channels") if self.dims else ()

    def key_specs(self, name: str) -> list[KeySpec]:
        return [KeySpec(name, "string", ())] + [
            KeySpec(f"{name}/{d}", "int64", ()) for d in self._dim_names
        ]

    def encode_array(self, name: str, pixels: np.ndarray) -> bytes:
        """Encode uint8 pixels (HW or HWC) as this feature's encoding (PNG for ``auto``)."""
        if pixels.dtype != np.uint8 or pixels.ndim not in (2, 3):
            raise SchemaError(name, f"pixels must be uint8 HW or HWC, got {pixels.dtype} "
                                    f"{pixels.shape}")
        if self.encoding == "raw":
            return np.ascontiguousarray(pixels).tobytes()
        image = _pil().fromarray(pixels[:, :, 0] if pixels.ndim == 3 and pixels.shape[2] == 1
                                 else pixels)
        buffer = io.BytesIO()
        if self.encoding == "jpeg":
            image.save(buffer, format="JPEG", quality=95)
        else:
            image.save(buffer, format="PNG")
        return buffer.getvalue()

    def entry_encoder(self, name: str) -> EntryEncoder:
        encode_bytes = _bytes_scalar_encoder(name)
        dims = [_int_scalar_encoder(f"{name}/{d}") for d in ("height", "width", "channels")]
        if not self.dims:
            dims = []

        def encode(value: Any) -> Entries:
            if isinstance(value, np.ndarray):
                pixels = value
                data = self.encode_array(name, pixels)
                shape = pixels.shape if pixels.ndim == 3 else (*pixels.shape, 1)
            elif isinstance(value, Mapping):  # from sources: bytes, height, width, channels
                data = value["bytes"]
                shape = (value["height"], value["width"], value["channels"])
                self._check_encoding(name, data)
            elif isinstance(value, bytes):
                data = value
                shape = self._probe(name, data)
            else:
                raise SchemaError(name, f"expected encoded bytes or a uint8 array, got "
                                        f"{type(value).__name__}")
            if self.size is not None and tuple(int(d) for d in shape[:2]) != self.size:
                raise SchemaError(name, f"image is {shape[0]}x{shape[1]}; the feature's "
                                        f"size is {self.size[0]}x{self.size[1]}")
            return [*encode_bytes(data),
                    *(enc(int(d)) for enc, d in zip(dims, shape[: len(dims)], strict=True))]

        return encode

    def column_encoder(self, name: str) -> ColumnEncoder | None:
        if self.encoding == "raw" or self.size is not None:
            return None  # a fixed size is checked record by record
        dims = self._dim_names

        def encode(values: list[Any]) -> list[EncColumn] | None:
            # Values from sources: {"bytes", "height", "width", "channels"} dicts.
            if not all(isinstance(v, Mapping) for v in values):
                return None
            data = [v["bytes"] for v in values]
            if not all(type(d) is bytes for d in data):
                return None
            for item in data:
                self._check_encoding(name, item)
            columns = [bytes_column(name, data)]
            for dim in dims:
                column = _int_column([v[dim] for v in values], -(2**63), 2**63 - 1)
                if column is None:
                    return None
                columns.append(int64_column(f"{name}/{dim}", column))
            return columns

        return encode

    def _check_encoding(self, name: str, data: bytes) -> str:
        found = sniff_bytes(data)
        allowed = {"auto": ("jpeg", "png"), "jpeg": ("jpeg",), "png": ("png",)}[self.encoding]
        if found not in allowed:
            raise SchemaError(name, f"bytes are {found}, feature expects {self.encoding}")
        if found == "png" and png_bit_depth(data) == 16:
            raise SchemaError(name, "a 16-bit PNG: readers give 8-bit pixels, so its values "
                                    "would be cut to their high byte; store an 8-bit "
                                    "reduction (ImageFolder(reduce_16bit=True) does, and "
                                    "records it) or the pixels as a Tensor")
        return found

    def _probe(self, name: str, data: bytes) -> tuple[int, int, int]:
        if self.encoding == "raw":
            raise SchemaError(name, "raw images need an array (or a dict with their shape)")
        self._check_encoding(name, data)
        header = image_header(data)
        if header is not None:
            return header
        try:
            with _pil().open(io.BytesIO(data)) as image:
                width, height = image.size
                channels = PIL_MODE_CHANNELS.get(image.mode, len(image.getbands()))
        except OSError as err:
            raise SchemaError(name, f"unreadable image: {err}") from None
        return height, width, channels

    def decode(self, name: str, features: Mapping[str, Any],
               min_size: tuple[int, int] | None = None) -> np.ndarray:
        """The pixels, uint8 ``[h, w, c]``; ``min_size`` lets JPEGs decode at 1/2, 1/4 or 1/8
        scale while staying at least that ``(height, width)``."""
        data = _scalar(features, name)
        if self.encoding == "raw":
            shape = tuple(int(_scalar(features, f"{name}/{d}")) for d in ("height", "width",
                                                                            "channels"))
            if min(shape) < 0 or int(np.prod(shape)) != len(data):
                raise SchemaError(name, f"{len(data)} raw bytes do not fit shape {shape}")
            return convert_channels(np.frombuffer(data, np.uint8).reshape(shape), self.channels)
        return decode_image_bytes(data, self.channels, min_size=min_size)




def decode_image_bytes(data: bytes, channels: int | None = None, *,
                       min_size: tuple[int, int] | None = None) -> np.ndarray:
    """Decode JPEG/PNG (or any Pillow format) bytes to uint8 ``[h, w, c]`` pixels.

    The pixels equal ``tf.io.decode_jpeg(data, channels, dct_method="INTEGER_ACCURATE")`` and
    ``tf.io.decode_png(data, channels)``: accurate integer DCT, fancy upsampling, grey taken
    from the JPEG's luma channel, channels converted as TensorFlow converts them.
    ``channels=None`` keeps the image's own. JPEGs go through libjpeg-turbo without the GIL
    (``simplejpeg``) where it is installed, else Pillow; both give the same pixels.
    ``min_size=(h, w)`` decodes a JPEG at 1/2, 1/4 or 1/8 scale (libjpeg's DCT scaling) when
    the result stays at least that size: faster, and close to but not equal to a full
    decode followed by a resize.

    Raises:
        OSError, ValueError: the bytes are not a decodable image.
    """
    if data[:3] == b"\xff\xd8\xff":
        pixels = _decode_jpeg_turbo(data, channels, min_size)
        if pixels is not None:
            return convert_channels(pixels, channels)
    with _pil().open(io.BytesIO(data)) as opened:
        if opened.format == "JPEG":
            grey = channels in (1, 2) and opened.mode != "L"
            scale = _dct_scale(opened.size[1], opened.size[0], min_size)
            if grey or scale > 1:  # libjpeg's own colour conversion: Y, as TF takes it
                # Pillow picks the scale from size // requested size.
                opened.draft("L" if grey else opened.mode,
                             (max(1, opened.size[0] // scale), max(1, opened.size[1] // scale)))
        mode = opened.mode
        if mode.startswith("I"):  # 16-bit grey: the high byte, as libpng strips it
            pixels = (np.asarray(opened).astype(np.uint32) >> 8).clip(0, 255).astype(np.uint8)
        elif mode == "P":
            pixels = np.asarray(opened.convert("RGBA" if "transparency" in opened.info
                                               else "RGB"))
        elif mode not in ("L", "LA", "RGB", "RGBA"):
            pixels = np.asarray(opened.convert("RGB" if mode in ("CMYK", "YCbCr") else "L"))
        else:
            pixels = np.asarray(opened)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    return convert_channels(pixels, channels)


def _dct_scale(height: int, width: int, min_size: tuple[int, int] | None) -> int:
    """The largest of 8, 4, 2 (else 1) that keeps a ``height × width`` JPEG at least
    ``min_size`` when decoded at that fraction."""
    if min_size is None:
        return 1
    for scale in (8, 4, 2):
        if -(-height // scale) >= min_size[0] and -(-width // scale) >= min_size[1]:
            return scale
    return 1


_SIMPLEJPEG: Any = None


def _decode_jpeg_turbo(data: bytes, channels: int | None,
                       min_size: tuple[int, int] | None) -> np.ndarray | None:
    """Pixels through simplejpeg (GIL released), or None where Pillow must decide: not
    installed, not YCbCr/grey, or anything libjpeg warns about (Pillow then accepts or
    rejects exactly as before)."""
    global _SIMPLEJPEG  # noqa: PLW0603 - one import attempt per process
    if _SIMPLEJPEG is None:
        try:
            import simplejpeg
        except ImportError:
            simplejpeg = False
        _SIMPLEJPEG = simplejpeg
    if _SIMPLEJPEG is False:
        return None
    try:
        height, width, space, _ = _SIMPLEJPEG.decode_jpeg_header(data)
        if space not in ("Gray", "YCbCr"):
            return None
        grey = channels in (1, 2) or (channels is None and space == "Gray")
        scale = _dct_scale(height, width, min_size)
        pixels = _SIMPLEJPEG.decode_jpeg(
            data, colorspace="GRAY" if grey else "RGB", fastdct=False, fastupsample=False,
            min_height=-(-height // scale) if scale > 1 else 0,
            min_width=-(-width // scale) if scale > 1 else 0, min_factor=scale, strict=True)
    except ValueError:
        return None
    return pixels if pixels.ndim == 3 else pixels[:, :, None]  # type: ignore[no-any-return]


def convert_channels(pixels: np.ndarray, channels: int | None) -> np.ndarray:
    """``[h, w, c]`` uint8 pixels with ``channels`` channels, converted as TensorFlow's
    decoders convert them (grey replicated, alpha dropped or added opaque)."""
    have = pixels.shape[2]
    if channels is None or have == channels:
        return pixels
    colour = pixels[:, :, :-1] if have in (2, 4) else pixels  # without alpha
    if channels in (1, 2) and colour.shape[2] == 3:
        # Rec. 601 luma in libpng's 15-bit fixed point; TF's PNG decoder can differ by one
        # level here (colour to grey is the one conversion that is not exact).
        rgb = colour.astype(np.uint32)
        luma = (rgb[:, :, 0] * 9798 + rgb[:, :, 1] * 19235 + rgb[:, :, 2] * 9735) >> 15
        colour = luma.astype(np.uint8)[:, :, None]
    elif channels in (3, 4) and colour.shape[2] == 1:
        colour = np.repeat(colour, 3, axis=2)
    if channels in (2, 4):
        alpha = pixels[:, :, -1:] if have in (2, 4) else np.full_like(colour[:, :, :1], 255)
        return np.concatenate([colour, alpha], axis=2)
    return colour


def _soundfile() -> Any:
    try:
        import soundfile
    except ImportError as err:
        raise MissingDependencyError("soundfile", "audio", "encoding or decoding audio") from err
    return soundfile


def resample_audio(samples: np.ndarray, rate: int, target: int) -> np.ndarray:
    """``(frames, channels)`` float32 samples at ``rate`` Hz, resampled to ``target`` Hz
    (libsoxr, high quality); unchanged when the rates are equal."""
    if rate == target or len(samples) == 0:
        return samples
    try:
        import soxr
    except ImportError as err:
        raise MissingDependencyError("soxr", "audio", "resampling audio") from err
    out = soxr.resample(np.ascontiguousarray(samples, np.float32), rate, target, quality="HQ")
    return np.asarray(out, np.float32).reshape(-1, samples.shape[1])


@dataclass(frozen=True)
class Audio(Feature):
    """Audio: encoded ``wav``/``flac`` bytes as they came, or ``pcm`` float32 samples, with
    per-record ``sample_rate``, ``num_samples`` and ``channels``."""

    encoding: str = "wav"
    sample_rate: int | None = None
    kind: ClassVar[str] = "audio"

    _ENCODINGS: ClassVar[tuple[str, ...]] = ("wav", "flac", "pcm")

    def __post_init__(self) -> None:
        if self.encoding not in self._ENCODINGS:
            raise SchemaError("<audio>", f"encoding must be one of {self._ENCODINGS}; "
                                         f"got {self.encoding!r}")

    def key_specs(self, name: str) -> list[KeySpec]:
        main = (KeySpec(name, "float32", None) if self.encoding == "pcm"
                else KeySpec(name, "string", ()))
        return [main] + [KeySpec(f"{name}/{d}", "int64", ())
                         for d in ("sample_rate", "num_samples", "channels")]

    def entry_encoder(self, name: str) -> EntryEncoder:
        encode_bytes = _bytes_scalar_encoder(name)
        dims = [_int_scalar_encoder(f"{name}/{d}") for d in ("sample_rate", "num_samples",
                                                               "channels")]

        def encode(value: Any) -> Entries:
            if isinstance(value, Mapping) and "bytes" in value:  # from sources
                found = sniff_bytes(value["bytes"])
                if found != self.encoding:
                    raise SchemaError(name, f"bytes are {found}, feature expects {self.encoding}")
                dims_values = (value["sample_rate"], value["num_samples"], value["channels"])
                return [*encode_bytes(value["bytes"]),
                        *(enc(int(v)) for enc, v in zip(dims, dims_values, strict=True))]
            if isinstance(value, Mapping) and "samples" in value:
                samples = np.asarray(value["samples"], dtype=np.float32)
                rate = int(value.get("sample_rate") or self.sample_rate or 0)
            elif isinstance(value, np.ndarray):
                samples, rate = value.astype(np.float32, copy=False), int(self.sample_rate or 0)
            elif isinstance(value, bytes):
                samples, rate = None, 0
            else:
                raise SchemaError(name, f"expected encoded bytes or samples, got "
                                        f"{type(value).__name__}")
            if samples is not None:
                if rate <= 0:
                    raise SchemaError(name, "samples need a sample_rate")
                frames = samples.reshape(samples.shape[0], -1) if samples.ndim else samples
                num, channels = frames.shape[0], (frames.shape[1] if frames.ndim > 1 else 1)
                if self.encoding == "pcm":
                    main = [_entry(name, "float", frames.ravel())]
                else:
                    buffer = io.BytesIO()
                    _soundfile().write(buffer, frames, rate, format=self.encoding.upper(),
                                       subtype="FLOAT" if self.encoding == "wav" else "PCM_24")
                    main = [*encode_bytes(buffer.getvalue())]
            else:
                data: bytes = value
                found = sniff_bytes(data)
                if found != self.encoding:
                    raise SchemaError(name, f"bytes are {found}, feature expects {self.encoding}")
                try:
                    info = _soundfile().info(io.BytesIO(data))
                except RuntimeError as err:
                    raise SchemaError(name, f"unreadable audio: {err}") from None
                rate, num, channels = info.samplerate, info.frames, info.channels
                main = [*encode_bytes(data)]
            return [*main, *(enc(v) for enc, v in zip(dims, (rate, num, channels), strict=True))]

        return encode

    def decode(self, name: str, features: Mapping[str, Any],
               sample_rate: int | None = None) -> dict[str, Any]:
        """``{"samples": (frames, channels) float32, "sample_rate": Hz}``; resampled to
        ``sample_rate`` when given."""
        rate = int(_scalar(features, f"{name}/sample_rate"))
        channels = int(_scalar(features, f"{name}/channels"))
        if self.encoding == "pcm":
            samples = np.asarray(features.get(name, []), np.float32).reshape(-1, max(channels, 1))
        else:
            try:
                samples, rate = _soundfile().read(io.BytesIO(_scalar(features, name)),
                                                  dtype="float32", always_2d=True)
            except RuntimeError as err:  # libsndfile's errors
                raise SchemaError(name, f"unreadable audio: {err}") from None
        if sample_rate is not None and rate > 0:
            samples, rate = resample_audio(samples, rate, sample_rate), sample_rate
        return {"samples": samples, "sample_rate": rate}


@dataclass(frozen=True)
class Sequence(Feature):
    """A variable-length list of scalars, class labels or texts in one record."""

    feature: Feature = field(default_factory=Scalar)
    kind: ClassVar[str] = "sequence"

    def __post_init__(self) -> None:
        if not isinstance(self.feature, Scalar | ClassLabel | Text) or (
            isinstance(self.feature, Text) and self.feature.has_ids
        ):
            raise SchemaError("<sequence>", f"sequences of {type(self.feature).__name__} are "
                                            "not supported; use Scalar, ClassLabel or Text")

    @property
    def _list_kind(self) -> Literal["bytes", "float", "int64"]:
        if isinstance(self.feature, Scalar):
            return self.feature.list_kind
        return "int64" if isinstance(self.feature, ClassLabel) else "bytes"

    def key_specs(self, name: str) -> list[KeySpec]:
        return [KeySpec(name, _SPEC_DTYPE[self._list_kind], None)]

    def entry_encoder(self, name: str) -> EntryEncoder:
        inner = self.feature
        kind = self._list_kind

        def encode(value: Any) -> Entries:
            if value is None:
                value = []  # an empty list of the schema's type
            if isinstance(value, str | bytes) or not isinstance(
                value, collections.abc.Sequence | np.ndarray
            ):
                raise SchemaError(name, f"expected a list, got {type(value).__name__}")
            items = list(value)
            if isinstance(inner, ClassLabel):
                values: Any = [inner.index_of(name, v) for v in items]
            elif kind == "bytes":
                values = [_as_text_bytes(name, v) if isinstance(inner, Text)
                          else _as_bytes(name, v) for v in items]
            elif kind == "float":
                assert isinstance(inner, Scalar)
                values = _float32_list(name, [_as_float(name, v) for v in items],
                                       inner._float_dtype)
            else:
                assert isinstance(inner, Scalar)
                values = [inner._checked_int(name, v) for v in items]
            return [_entry(name, kind, values)]

        return encode

    def column_encoder(self, name: str) -> ColumnEncoder | None:
        inner = self.feature
        if not isinstance(inner, Scalar) or inner.dtype not in ("int64", "float32"):
            return None  # other kinds check each value's range or class: record by record
        kind = self._list_kind

        def encode(values: list[Any]) -> list[EncColumn] | None:
            ragged = _ragged_column(values, kind)
            return None if ragged is None else [ragged_column(name, kind, *ragged)]

        return encode

    def decode(self, name: str, features: Mapping[str, Any]) -> Any:
        values = features.get(name, [])
        if isinstance(self.feature, Text):
            return [v.decode("utf-8") for v in values]
        return values


_KINDS: dict[str, type[Feature]] = {
    cls.kind: cls for cls in (Scalar, ClassLabel, Text, Tensor, Image, Audio, Sequence)
}


def feature_from_json(data: Mapping[str, Any]) -> Feature:
    """Rebuild a feature from :meth:`Feature.to_json` output."""
    try:
        cls = _KINDS[data["kind"]]
    except KeyError:
        raise SchemaError("<schema>", f"unknown feature kind {data.get('kind')!r}") from None
    params = {k: v for k, v in data.items() if k != "kind"}
    if cls is Sequence:
        params["feature"] = feature_from_json(params["feature"])
    if cls is Scalar and params.get("dtype") == "float64":
        params["float32_storage"] = True  # as every dataset with one was written
    if cls is Tensor:
        params["shape"] = tuple(params.get("shape", ()))
    if cls is ClassLabel:
        params["names"] = tuple(params.get("names", ()))
    if cls is Image and isinstance(params.get("size"), list):
        params["size"] = tuple(params["size"])
    if cls is Text and isinstance(params.get("vocabulary"), Mapping):
        params["vocabulary"] = Vocabulary.from_json(params["vocabulary"])
    return cls(**params)
