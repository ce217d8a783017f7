"""Text: UTF-8 bytes, optionally with token ids."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tfrecordkit.errors import SchemaError
from tfrecordkit.format import (
    Column,
    EncColumn,
    KeySpec,
    bytes_column,
    ragged_column,
)
from tfrecordkit.schema._base import (
    ColumnEncoder,
    DecodeContext,
    Entries,
    EntryEncoder,
    Feature,
    _as_text_bytes,
    _bytes_scalar_encoder,
    _entry,
    _row_splits,
    _scalar,
    _str_column,
    hf_value,
)
from tfrecordkit.schema._layout import FeatureLayout, LayoutOptions
from tfrecordkit.schema._vocab import Vocabulary

__all__ = ["Text"]


@dataclass(frozen=True)
class Text(Feature):
    """UTF-8 text (one string per record), optionally with its token ids (``<name>/ids``):
    given with each record (``token_ids=True``), or computed by a :class:`Vocabulary`
    (``vocabulary=Vocabulary(max_size=20000)`` builds one from the training split at
    conversion and stores it in the schema)."""

    token_ids: bool = False
    vocabulary: Vocabulary | None = None
    kind: ClassVar[str] = "text"
    tf_decoder: ClassVar[str | None] = "tfrecordkit.readers.tf_data._ops:decode_text"

    def missing(self, name: str) -> Any:
        return ""

    @property
    def has_ids(self) -> bool:
        """Whether records store token ids next to the text."""
        return self.token_ids or self.vocabulary is not None

    @classmethod
    def from_json(cls, params: dict[str, Any], rebuild: Callable[[Any], Feature]) -> Feature:
        vocabulary = params.get("vocabulary")
        if isinstance(vocabulary, Mapping):
            params = {**params, "vocabulary": Vocabulary.from_json(dict(vocabulary))}
        return cls(**params)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "token_ids": self.token_ids}
        if self.vocabulary is not None:
            out["vocabulary"] = self.vocabulary.to_json()
        return out

    def layout(self, name: str, options: LayoutOptions) -> FeatureLayout:
        if self.has_ids:
            return FeatureLayout(name, "tokens", np.dtype(np.int64), (None,), ())
        return FeatureLayout(name, "text", None, ())

    def hf_feature(self) -> dict[str, Any] | None:
        return None if self.token_ids else hf_value("string")

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
                      where: Callable[[int], Any], context: DecodeContext) -> Any:
        if self.has_ids:
            return super().decode_column(name, columns, n, where, context)
        column = columns[name]
        joined = column.values.tobytes()
        if column.offsets is not None and joined.isascii():  # byte offsets are characters
            text, bounds = joined.decode("ascii"), column.offsets.tolist()
            return [text[a:b] for a, b in itertools.pairwise(bounds)]
        out = []
        for i, data in enumerate(column.to_bytes()):
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
