"""Shared by every feature kind: the base class, and how values become framed map entries
and encoded columns."""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from tfrecordkit.errors import SchemaError
from tfrecordkit.format import (
    Column,
    EncColumn,
    KeySpec,
    SpecDtype,
    feature_wire,
    frame_entry,
    map_entry_prefix,
    varint,
)
from tfrecordkit.schema._layout import FeatureLayout, LayoutOptions

__all__ = ["ColumnEncoder", "DecodeContext", "Entries", "EntryEncoder", "Feature", "hf_list",
           "hf_value", "number_of"]

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


def hf_value(dtype: str) -> dict[str, Any]:
    """A Hugging Face ``Value`` entry of a NumPy dtype (or ``"string"``)."""
    return {"_type": "Value", "dtype": dtype}


def hf_list(feature: dict[str, Any], length: int | None = None) -> dict[str, Any]:
    """A Hugging Face ``Sequence`` entry of ``feature`` (``length``: a fixed one)."""
    return {"_type": "Sequence", "feature": feature, "length": -1 if length is None else length}


def number_of(text: str) -> int | float | None:
    """``text`` (a table cell) as an int, else a float, else None."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


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
class DecodeContext:
    """What a batch's decoding asks of the kinds, each reading its own part: images their
    reduced-scale floor (``min_size``), the arrays to decode into (``out``) or a function
    finishing each record's pixels on the decoding thread (``finish``), by feature name;
    audio the rate to resample to (``sample_rate``); a label taken from the shard the
    records' shard classes (``shard_classes``); ``strict``: records read by a schema inferred
    from a sample (every image's header checked against the channels decoded to);
    ``threads``: at most this many threads parse a large batch (the reader's plan)."""

    min_size: tuple[int, int] | None = None
    sample_rate: int | None = None
    shard_classes: Any = None
    out: Mapping[str, np.ndarray] = field(default_factory=dict)
    finish: Mapping[str, Callable[[int, np.ndarray], Any]] = field(default_factory=dict)
    strict: bool = False
    threads: int | None = None


@dataclass(frozen=True)
class Feature:
    """Base of all features; subclasses are frozen dataclasses that validate on construction."""

    kind: ClassVar[str] = ""
    #: Whether values are positions in an image of the record (boxes): they move with the
    #: image when a reader crops, resizes or flips it.
    in_image: ClassVar[bool] = False
    #: Every kind by its ``kind`` name, filled as kinds are defined: a subclass naming a kind
    #: of its own registers itself (what :func:`feature_from_json` rebuilds from).
    registry: ClassVar[dict[str, type[Feature]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("kind"):  # its own kind, not one inherited
            Feature.registry[cls.kind] = cls

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description, inverse of :func:`feature_from_json`."""
        out: dict[str, Any] = {"kind": self.kind}
        for name, value in self.__dict__.items():
            out[name] = value.to_json() if isinstance(value, Feature) else (
                list(value) if isinstance(value, tuple) else value)
        return out

    @classmethod
    def from_json(cls, params: dict[str, Any], rebuild: Callable[[Any], Feature]) -> Feature:
        """The feature :meth:`to_json` described (its ``"kind"`` taken out); ``rebuild``
        rebuilds a nested feature's description."""
        return cls(**params)

    def key_specs(self, name: str) -> list[KeySpec]:
        """Parsing specs of every Example key this feature writes."""
        raise NotImplementedError

    def layout(self, name: str, options: LayoutOptions) -> FeatureLayout:
        """How this feature's decoded values look in a batch read with ``options``."""
        raise NotImplementedError

    def from_text(self, name: str, text: str) -> Any:
        """The value a table cell's ``text`` stands for (a number, a list, ...).

        Raises:
            SchemaError: ``text`` does not read as this kind's value.
        """
        return text

    def missing(self, name: str) -> Any:
        """The value an empty table cell (or a JSON ``null``) stands for: empty text, an
        empty list, NaN for a float; kinds with no such value refuse it.

        Raises:
            SchemaError: this kind has no value for "missing" (ints, classes, media).
        """
        raise SchemaError(name, f"a {self.kind} has no missing value")

    def export_extension(self, data: bytes) -> str | None:
        """The file extension of this feature's stored bytes ``data`` when an export writes
        them as they are (encoded images and audio: ``"jpg"``, ``"png"``, ``"wav"``...); None:
        the decoded value is exported."""
        return None

    def hf_feature(self) -> dict[str, Any] | None:
        """This kind as a Hugging Face ``Features`` entry (its JSON form, as
        ``datasets.Features.from_dict`` reads it); None: inferred from the values."""
        return None

    @property
    def format_need(self) -> tuple[int, str] | None:
        """The ``dataset.json`` format version a manifest holding this feature needs, and
        what needs it (None: any version)."""
        return None

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

    #: tf.data's in-graph decoding of this kind, ``"module:function"``, imported when a
    #: pipeline first needs it (schema/ imports no TensorFlow); None: the values as
    #: TensorFlow parses them (a kind with nothing to decode needs nothing there).
    tf_decoder: ClassVar[str | None] = None

    def decodes_per_example(self) -> bool:
        """Whether records' values differ in shape, so that tf.data decodes them one example
        at a time rather than a batch at once."""
        return False

    def decode_in(self, name: str, features: Mapping[str, Any], context: DecodeContext,
                  row: int) -> Any:
        """Record ``row``'s value in a batch decoded with ``context`` (:meth:`decode`, unless
        the kind takes part of the context)."""
        return self.decode(name, features)

    def decode_column(self, name: str, columns: Mapping[str, Column], n: int,
                      where: Callable[[int], Any], context: DecodeContext) -> Any:
        """Every record's value from the batch's columns (a sequence of ``n`` values); this
        default decodes record by record (:meth:`decode_in`), kinds with a vectorised form
        override it."""
        keys = [spec.key for spec in self.key_specs(name)]
        out = []
        for i in range(n):
            record = {k: columns[k].row(i) for k in keys if not columns[k].missing[i]}
            try:
                out.append(self.decode_in(name, record, context, i))
            except SchemaError as err:
                raise SchemaError(err.feature, err.reason, record=where(i)) from None
            except (OSError, ValueError, RuntimeError, KeyError, IndexError) as err:
                raise SchemaError(name, f"cannot decode: {err}", record=where(i)) from None
        return out


_SCALAR_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "bool",
                  "float32", "float64", "float16", "string")
