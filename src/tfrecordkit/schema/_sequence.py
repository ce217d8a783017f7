"""Variable-length lists of one kind of value per record."""

from __future__ import annotations

import collections.abc
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from tfrecordkit.errors import SchemaError
from tfrecordkit.format import (
    EncColumn,
    KeySpec,
    ragged_column,
)
from tfrecordkit.schema._base import (
    _SPEC_DTYPE,
    ColumnEncoder,
    Entries,
    EntryEncoder,
    Feature,
    _as_bytes,
    _as_float,
    _as_text_bytes,
    _entry,
    _float32_list,
    _ragged_column,
)
from tfrecordkit.schema._layout import FeatureLayout, LayoutOptions
from tfrecordkit.schema._scalar import ClassLabel, Scalar
from tfrecordkit.schema._text import Text

__all__ = ["Sequence"]


@dataclass(frozen=True)
class Sequence(Feature):
    """A variable-length list of scalars, class labels or texts in one record."""

    feature: Feature = field(default_factory=Scalar)
    kind: ClassVar[str] = "sequence"

    @staticmethod
    def can_hold(feature: Feature) -> bool:
        """Whether a sequence may list values of ``feature``'s kind."""
        return isinstance(feature, Scalar | ClassLabel) or (
            isinstance(feature, Text) and not feature.has_ids)

    def __post_init__(self) -> None:
        if not self.can_hold(self.feature):
            raise SchemaError("<sequence>", f"sequences of {type(self.feature).__name__} are "
                                            "not supported; use Scalar, ClassLabel or Text")

    @property
    def _list_kind(self) -> Literal["bytes", "float", "int64"]:
        if isinstance(self.feature, Scalar):
            return self.feature.list_kind
        return "int64" if isinstance(self.feature, ClassLabel) else "bytes"

    @classmethod
    def from_json(cls, params: dict[str, Any], rebuild: Callable[[Any], Feature]) -> Feature:
        return cls(**{**params, "feature": rebuild(params["feature"])})

    def key_specs(self, name: str) -> list[KeySpec]:
        return [KeySpec(name, _SPEC_DTYPE[self._list_kind], None)]

    def missing(self, name: str) -> Any:
        return []

    def from_text(self, name: str, text: str) -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise SchemaError(name, "expected a JSON list") from None

    def layout(self, name: str, options: LayoutOptions) -> FeatureLayout:
        if isinstance(self.feature, Text):
            return FeatureLayout(name, "text", None, (None,), (0,), fill="")
        if self._list_kind == "bytes":
            return FeatureLayout(name, "bytes", None, (None,), (0,), fill=b"")
        dtype = np.dtype(np.float32 if self._list_kind == "float" else np.int64)
        return FeatureLayout(name, "numbers", dtype, (None,), (0,))

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
