"""Numbers and strings, one per record (`Scalar`), and class labels (`ClassLabel`)."""

from __future__ import annotations

import collections.abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from tfrecordkit.errors import SchemaError
from tfrecordkit.format import (
    Column,
    EncColumn,
    KeySpec,
    bytes_column,
    float_column,
    int64_column,
    varint,
)
from tfrecordkit.schema._base import (
    _SCALAR_DTYPES,
    _SPEC_DTYPE,
    ColumnEncoder,
    DecodeContext,
    Entries,
    EntryEncoder,
    Feature,
    _as_float,
    _as_int,
    _bytes_scalar_encoder,
    _float32_list,
    _float_column,
    _float_scalar_encoder,
    _int_column,
    _int_scalar_encoder,
    _scalar,
    _str_column,
    _utf8,
    hf_value,
    number_of,
)
from tfrecordkit.schema._layout import FeatureLayout, LayoutOptions

__all__ = ["ClassLabel", "Scalar"]


@dataclass(frozen=True)
class Scalar(Feature):
    """One number or string per record: int64 / float32 list of one value, or bytes."""

    dtype: str = "int64"
    #: Only for ``float64``: keep values as float32 (what datasets written before float64 was
    #: refused hold), rounding them; without it ``float64`` is refused (it would not round-trip).
    float32_storage: bool = field(default=False, repr=False)
    kind: ClassVar[str] = "scalar"
    tf_decoder: ClassVar[str | None] = "tfrecordkit.readers.tf_data._ops:decode_scalar"

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

    @classmethod
    def from_json(cls, params: dict[str, Any], rebuild: Callable[[Any], Feature]) -> Feature:
        if params.get("dtype") == "float64":
            params = {**params, "float32_storage": True}  # as every dataset with one was written
        return cls(**params)

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

    def hf_feature(self) -> dict[str, Any] | None:
        return hf_value("binary" if self.dtype == "string" else self.dtype)

    def key_specs(self, name: str) -> list[KeySpec]:
        return [KeySpec(name, _SPEC_DTYPE[self.list_kind], ())]

    def missing(self, name: str) -> Any:
        if self.dtype == "string":
            return ""
        if self.dtype.startswith("float"):
            return float("nan")
        raise SchemaError(name, f"{self.dtype} has no missing value (Scalar('float32') "
                                "reads an empty cell as NaN)")

    def from_text(self, name: str, text: str) -> Any:
        if self.dtype == "string":
            return text
        parsed = number_of(text)
        if parsed is None:
            raise SchemaError(name, f"{text!r:.40} is not a number")
        return parsed

    def layout(self, name: str, options: LayoutOptions) -> FeatureLayout:
        if self.dtype == "string":
            return FeatureLayout(name, "bytes", None, ())
        return FeatureLayout(name, "numbers", np.dtype(self.dtype), ())

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
                      where: Callable[[int], Any], context: DecodeContext) -> Any:
        column = columns[name]
        if self.dtype == "string":
            return column.to_bytes()
        values = column.values.reshape(n)
        if self.list_kind == "int64":
            if self.dtype == "int64":  # every stored value fits
                return values
            low, high = self._int_range
            bad = np.flatnonzero((values < low) | (values > high))
            if bad.size:
                raise SchemaError(name, f"{int(values[bad[0]])} does not fit {self.dtype}",
                                  record=where(int(bad[0])))
            return values != 0 if self.dtype == "bool" else values.astype(self.dtype)
        return values.astype(self.dtype, copy=False)


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

    def hf_feature(self) -> dict[str, Any] | None:
        return {"_type": "ClassLabel", "names": list(self.names)}

    def key_specs(self, name: str) -> list[KeySpec]:
        return [] if self.from_shard else [KeySpec(name, "int64", ())]

    def from_text(self, name: str, text: str) -> Any:
        number = number_of(text)
        return text if text in self.names or number is None else number

    def layout(self, name: str, options: LayoutOptions) -> FeatureLayout:
        return FeatureLayout(name, "numbers", np.dtype(np.int64), ())

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

    def decode_in(self, name: str, features: Mapping[str, Any], context: DecodeContext,
                  row: int) -> int:
        if self.from_shard:
            classes = context.shard_classes
            return int(self.shard_values(name, None if classes is None
                                         else np.asarray(classes).reshape(-1)[row : row + 1],
                                         1)[0])
        return self.decode(name, features)

    def decode_column(self, name: str, columns: Mapping[str, Column], n: int,
                      where: Callable[[int], Any], context: DecodeContext) -> Any:
        if self.from_shard:
            return self.shard_values(name, context.shard_classes, n)
        values = columns[name].values.reshape(n)
        bad = np.flatnonzero((values < 0) | (values >= len(self.names)))
        if bad.size:
            raise SchemaError(name, f"class index {int(values[bad[0]])} outside "
                                    f"0..{len(self.names) - 1}", record=where(int(bad[0])))
        return values
