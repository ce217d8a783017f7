"""Sources over data already in Python: iterables of dicts, NumPy arrays, text lines."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from tfrecordkit.errors import SourceError
from tfrecordkit.schema import ClassLabel, Feature, Scalar, Schema, Tensor, Text
from tfrecordkit.sources._protocol import SourceItem

__all__ = ["NumpyArrays", "Records", "TextLines", "infer_value_feature"]

LABEL_NAMES = ("label", "labels", "y", "class", "target")


class Records:
    """Any iterable of ``{feature: value}`` dicts (or a mapping of split name to iterable).

    ``key`` names the feature that identifies each record (an id that stays the record's when
    more records come): its split and an append's duplicate check go by it. Default: the
    record's position, which only the same iterable gives again.
    """

    in_process = True
    resumable = False  # nothing identifies an arbitrary iterable's data across runs

    def __init__(
        self,
        records: Iterable[Mapping[str, Any]] | Mapping[str, Iterable[Mapping[str, Any]]],
        schema: Schema,
        description: str = "records",
        *,
        key: str | None = None,
    ) -> None:
        if key is not None and key not in schema:
            raise SourceError(description, f"key {key!r} is not a feature of the schema "
                                           f"({sorted(schema)})")
        self._records = records
        self._schema = schema
        self.description = description
        self.key = key

    def schema(self) -> Schema:
        return self._schema

    @property
    def reiterable(self) -> bool:
        """Whether the records can be read more than once (not a generator)."""
        parts = (self._records.values() if isinstance(self._records, Mapping)
                 else [self._records])
        return not any(isinstance(p, Iterator) for p in parts)

    def items(self) -> Iterator[SourceItem]:
        seen: dict[str, int] = {}
        if isinstance(self._records, Mapping):
            for split, records in self._records.items():
                for i, record in enumerate(records):
                    yield SourceItem(self._key_of(record, f"{split}/{i}", seen), record, split)
        else:
            for i, record in enumerate(self._records):
                yield SourceItem(self._key_of(record, str(i), seen), record)

    def _key_of(self, record: Any, position: str, seen: dict[str, int]) -> str:
        """The record's key: its ``key`` feature's value (present, unique), else its
        position."""
        if self.key is None:
            return position
        value = record.get(self.key) if isinstance(record, Mapping) else None
        if isinstance(value, bytes):
            value = value.decode("utf-8", "surrogateescape")
        if value is None or value == "" or isinstance(value, Mapping | list | np.ndarray):
            raise SourceError(f"record {position}", f"its key feature {self.key!r} is "
                                                    f"missing or not one value ({value!r:.40})")
        key = str(value)
        if key in seen:
            raise SourceError(f"record {position}", f"key {key!r} ({self.key!r}) is record "
                                                    f"{seen[key]}'s too: keys must be unique")
        seen[key] = len(seen)
        return key

    def load(self, item: Any) -> Mapping[str, Any]:
        if not isinstance(item, Mapping):
            raise SourceError("record", f"expected a dict, got {type(item).__name__}")
        return item

    def __getstate__(self) -> dict[str, Any]:
        # Workers only load items, and each item carries its record: the records (perhaps
        # a generator, perhaps the whole dataset) stay here.
        return {**self.__dict__, "_records": ()}

    def describe(self, item: SourceItem) -> str:
        return f"record {item.key}"


def infer_value_feature(name: str, column: np.ndarray) -> Feature:
    """A feature for one array column (axis 0 is records)."""
    if column.dtype.kind in "iu" and name.lower() in LABEL_NAMES and (
            column.ndim == 1 or column.shape[1:] == (1,)):
        # (N,) or Keras' (N, 1) integer labels: class ids (size-1 values encode as ids).
        top = int(column.max()) if len(column) else 0
        if len(column) and int(column.min()) < 0:
            raise SourceError(name, f"class labels must be >= 0; found {int(column.min())}")
        return ClassLabel([str(i) for i in range(top + 1)])
    if column.ndim == 1:
        if column.dtype.kind in "iub":
            return Scalar("bool" if column.dtype.kind == "b" else "int64")
        if column.dtype.kind == "f":
            return Scalar("float32")
        if column.dtype.kind in "US":
            return Text()
    if column.dtype.kind not in "biuf":
        raise SourceError(name, f"cannot store arrays of dtype {column.dtype}")
    return Tensor(tuple(column.shape[1:]), column.dtype.name)


class NumpyArrays:
    """Records along axis 0 of named arrays: in memory, a ``.npy`` (memory-mapped) or ``.npz``."""

    in_process = False
    resumable = True
    reorderable = True  # items are indices: any record read in any order

    def __init__(self, arrays: Mapping[str, np.ndarray] | str | os.PathLike[str]) -> None:
        if isinstance(arrays, str | os.PathLike):
            path = os.fspath(arrays)
            self.description = f"numpy:{os.path.abspath(path)}"
            try:
                if path.endswith(".npz"):
                    with np.load(path) as npz:
                        arrays = {k: npz[k] for k in npz.files}
                else:
                    arrays = {"data": np.load(path, mmap_mode="r")}
            except ValueError as err:  # object arrays (pickles) are never loaded
                raise SourceError(path, f"cannot be read as plain arrays ({err}); object "
                                  "arrays need pickle, which is not loaded from files: "
                                  "save numbers, strings or bytes") from None
        else:
            self.description = "numpy:arrays"
            self.resumable = False  # in-memory arrays: nothing identifies them across runs
        self.arrays = dict(arrays)
        for name, array in self.arrays.items():
            if np.ndim(array) == 0:
                raise SourceError(self.description, f"array {name!r} is 0-d (a single value); "
                                  "give one row per record (at least 1-d)")
        lengths = {k: len(v) for k, v in self.arrays.items()}
        if len(set(lengths.values())) != 1:
            raise SourceError(self.description, f"arrays differ in length: {lengths}")
        self._length = next(iter(lengths.values()))

    def schema(self) -> Schema:
        return Schema({k: infer_value_feature(k, v) for k, v in self.arrays.items()})

    def items(self) -> Iterator[SourceItem]:
        for i in range(self._length):
            yield SourceItem(str(i), i)

    def load(self, item: Any) -> Mapping[str, Any]:
        return {k: np.asarray(v[item]) for k, v in self.arrays.items()}

    def describe(self, item: SourceItem) -> str:
        return f"{self.description}[{item.key}]"


class TextLines:
    """One record per line of a text file: ``{"text": line}``."""

    in_process = True

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.description = f"text:{os.path.abspath(self.path)}"

    def schema(self) -> Schema:
        return Schema({"text": Text()})

    def items(self) -> Iterator[SourceItem]:
        with open(self.path, "rb") as f:
            for number, line in enumerate(f, start=1):
                yield SourceItem(f"{number}", line.rstrip(b"\r\n"))

    def load(self, item: Any) -> Mapping[str, Any]:
        try:
            return {"text": item.decode("utf-8")}
        except UnicodeDecodeError as err:
            raise SourceError("line", f"not valid UTF-8 (byte {err.start})") from None

    def describe(self, item: SourceItem) -> str:
        return f"{self.path}:{item.key}"
