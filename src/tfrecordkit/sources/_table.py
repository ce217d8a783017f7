"""Tables (CSV, JSONL, Parquet): one record per row; path columns load the files they name.

A column holding file paths (resolved relative to the table) whose files are images or audio
becomes an Image or Audio feature, so an ``image_path, caption, label, audio_path`` table
gives multi-modal records.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping
from itertools import islice
from typing import Any

from tfrecordkit.errors import MissingDependencyError, SchemaError, SourceError
from tfrecordkit.schema import (
    Audio,
    ClassLabel,
    Feature,
    Image,
    Scalar,
    Schema,
    Sequence,
    Text,
    number_of,
)
from tfrecordkit.sources._media import (
    DEFAULT_MAX_IMAGE_PIXELS,
    ImageCheck,
    ImageOptions,
    Resize,
    load_audio,
    media_kind,
)
from tfrecordkit.sources._protocol import SourceItem
from tfrecordkit.store import text_of_name

logger = logging.getLogger(__name__)

__all__ = ["KEEP_ROWS", "Table"]

_SAMPLE_ROWS = 1000
_LEADING_ZERO = re.compile(r"[+-]?0\d")
#: Said of an empty cell the column's kind has no value for: how to keep the row (never
#: "skip it": ``on_error="skip"``'s hint is left out of such errors).
KEEP_ROWS = "to keep the rows, fill the cells or give the column's kind: features="
_PATH_SUFFIXES = ("path", "file", "filename", "_uri")


def _read_rows(path: str) -> Iterator[dict[str, Any]]:
    lowered = path.lower()
    if lowered.endswith((".jsonl", ".ndjson")):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as err:
                        raise SourceError(f"{path}:{number}", f"invalid JSON ({err})") from None
    elif lowered.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq
        except ImportError as err:
            raise MissingDependencyError("pyarrow", "table", "reading Parquet") from err
        for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
            yield from batch.to_pylist()
    else:
        with open(path, encoding="utf-8", newline="") as f:
            yield from _csv_rows(path, f)


def _csv_rows(path: str, f: Any) -> Iterator[dict[str, str]]:
    """A CSV file's rows by its header; a row of more or fewer fields than the header is
    refused (a value is never shifted into another column, or a missing one made empty).

    Raises:
        SourceError: naming the file, the line and both field counts.
    """
    reader = csv.reader(f)
    header = next(reader, None)
    if header is None:
        return
    for fields in reader:
        if not fields:  # a blank line
            continue
        if len(fields) != len(header):
            more = len(fields) > len(header)
            raise SourceError(f"{path}:{reader.line_num}", (
                f"{len(fields)} fields where the header has {len(header)} "
                f"({', '.join(header)})" + ("; a comma inside a cell needs the cell quoted"
                                            if more else "; an empty cell still needs its "
                                            "comma")))
        yield dict(zip(header, fields, strict=True))


def _media_feature(present: list[Any]) -> Feature | None:
    """A path column's feature when every value names an image (or every one audio)."""
    if not all(isinstance(v, str) for v in present):
        return None
    kinds = {media_kind(v) for v in present}
    if kinds == {"image"}:
        return Image()
    if kinds == {"audio"}:
        exts = {os.path.splitext(v)[1].lower() for v in present}
        return Audio(encoding="wav" if exts == {".wav"} else "flac")
    return None


def _list_feature(present: list[list[Any]]) -> Feature:
    """A column of lists: of whole numbers, of numbers, else of text."""
    flat = [x for v in present for x in v]
    if all(isinstance(x, int) for x in flat):
        return Sequence(Scalar("int64"))
    if all(isinstance(x, int | float) for x in flat):
        return Sequence(Scalar("float32"))
    return Sequence(Text())


def _value_feature(present: list[Any], *, gaps: bool) -> Feature:
    """A column of single values: whole numbers (float32 with gaps: NaN where empty),
    numbers, else text (codes with leading zeros too)."""
    if any(isinstance(v, str) and _LEADING_ZERO.match(v) for v in present):
        return Text()  # codes such as ZIP "02134": numbers would lose the zero
    numbers = [v if isinstance(v, int | float) else number_of(str(v)) for v in present]
    if all(isinstance(n, int) for n in numbers) and not gaps:
        return Scalar("int64")
    if all(isinstance(n, int | float) for n in numbers):
        return Scalar("float32")
    return Text()


class Table:
    """Rows of a CSV, JSONL or Parquet file as records.

    Args:
        path: the table file.
        features: features for some or all columns (the rest are inferred from a sample).
        label_column: the class-label column (default: one named label/labels/y/class/target).
        path_columns: columns holding file paths (default: names ending in path/file/filename
            whose values name image or audio files).
        provenance: store each row's origin (``table.csv:row``, rows counted from 1) with its
            record (``"__source"``; readers return it with ``DecodeOptions(provenance=True)``).
        key: the column that identifies each row (an id that survives re-exports), which its
            split and an append's duplicate check go by; default: the row number, which moves
            when rows are inserted or reordered. Its values must be present and unique.
        encoding, channels, resize, check, max_image_pixels, reduce_16bit, exif_transpose:
            how the image files of path columns are read, as :class:`ImageFolder` reads its
            files (:class:`~tfrecordkit.sources.ImageOptions`).

    Empty cells (and JSON ``null``) are missing values: text reads as ``""``, a list as
    ``[]``, a float as NaN. A column of whole numbers with empty cells among the rows
    inferred from is float32 (NaN where empty), as pandas reads it; ints, booleans, class
    labels and media files have no missing value: a row with such an empty cell is refused,
    naming the cell and how to keep the row. A column whose values have leading zeros
    (``02134``) is text, not a number.
    """

    in_process = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        features: Mapping[str, Feature] | None = None,
        label_column: str | None = None,
        path_columns: list[str] | None = None,
        provenance: bool = True,
        key: str | None = None,
        encoding: str | None = None,
        channels: int | None = None,
        resize: Resize = None,
        check: ImageCheck = "structure",
        max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
        reduce_16bit: bool = False,
        exif_transpose: bool = False,
    ) -> None:
        self.image = ImageOptions(encoding, channels, resize, check, max_image_pixels,
                                  reduce_16bit, exif_transpose)
        self.path = os.fspath(path)
        self.key = key
        self.provenance = provenance
        self.base = os.path.dirname(os.path.abspath(self.path))
        self.description = (f"table:{os.path.abspath(self.path)}"
                            + (f"#key={key}" if key is not None else "") + self.image.described)
        if not os.path.isfile(self.path):
            raise SourceError(self.path, "no such file")
        self._given = dict(features or {})
        self._label_column = label_column
        self._path_columns = path_columns
        self._schema: Schema | None = None
        self._media_columns: dict[str, Image | Audio] | None = None

    def resolve(self, value: str) -> str:
        """A path from the table, relative to the table's folder."""
        return value if os.path.isabs(value) else os.path.join(self.base, value)

    def schema(self) -> Schema:
        if self._schema is None:
            self._schema = self._schema_from_profile()
        return self._schema

    def _schema_from_profile(self) -> Schema:
        sample = list(islice(_read_rows(self.path), _SAMPLE_ROWS))
        if not sample:
            raise SourceError(self.path, "table has no rows")
        columns = list(sample[0])
        label = self._label_column or _label_column(self.path, columns)
        features: dict[str, Feature] = {}
        for column in columns:
            if column in self._given:
                features[column] = self._given[column]
            elif column == label:
                features[column] = self._label_feature(column)
            else:
                features[column] = self._infer_column(column, [r.get(column) for r in sample])
                if features[column].kind == "image" and not self.image.keeps_bytes:
                    features[column] = Image(encoding=self.image.encoding or "auto",
                                             channels=self.image.channels)
        return Schema(features)

    def _label_feature(self, column: str) -> ClassLabel:
        # Class names need every value of the column: one pass reading the table (not media).
        values = {row.get(column) for row in _read_rows(self.path)} - {None, ""}
        numbers = [number_of(str(v)) for v in values]
        ints = [n for n in numbers if isinstance(n, int) and n >= 0]
        if values and len(ints) == len(numbers):
            return ClassLabel([str(i) for i in range(max(ints) + 1)])
        return ClassLabel(sorted(str(v) for v in values))

    def _infer_column(self, column: str, values: list[Any]) -> Feature:
        present = [v for v in values if v not in (None, "")]
        if not present:
            raise SourceError(self.path, f"column {column!r} is empty in the first "
                                         f"{len(values)} rows: give its kind, e.g. "
                                         f"features={{{column!r}: tk.Text()}}")
        is_path_column = (
            column in self._path_columns if self._path_columns is not None
            else column.lower().endswith(_PATH_SUFFIXES)
        )
        media = _media_feature(present) if is_path_column else None
        if media is not None:
            return media
        if all(isinstance(v, bool) for v in present):
            return Scalar("bool")
        if all(isinstance(v, list) for v in present):
            return _list_feature(present)
        return _value_feature(present, gaps=len(present) < len(values))

    def items(self) -> Iterator[SourceItem]:
        if self.key is None:
            for number, row in enumerate(_read_rows(self.path), start=1):
                yield SourceItem(str(number), (number, row))
            return
        seen: dict[str, int] = {}
        for number, row in enumerate(_read_rows(self.path), start=1):
            if number == 1 and self.key not in row:
                raise SourceError(self.path, f"no key column {self.key!r}; the columns are "
                                             f"{list(row)}")
            value = row.get(self.key)
            if value is None or value == "":
                raise SourceError(f"{self.path}:{number}", f"the key column {self.key!r} is "
                                                           "empty: every row needs its key")
            key = str(value)
            if (first := seen.setdefault(key, number)) != number:
                raise SourceError(f"{self.path}:{number}", f"key {key!r} (column {self.key!r}) "
                                                           f"is row {first}'s key too: keys "
                                                           "must be unique")
            yield SourceItem(key, (number, row))

    def describe(self, item: SourceItem) -> str:
        if isinstance(item.item, tuple):
            return f"{self.path}:{item.item[0]}"
        if self.key is None:
            return f"{self.path}:{item.key}"
        return f"{self.path} ({self.key}={item.key})"

    def origin(self, item: SourceItem) -> str:
        """Where the record came from, as stored with it: ``file name:row``."""
        return f"{text_of_name(os.path.basename(self.path))}:{item.item[0]}"

    def load(self, item: Any) -> Mapping[str, Any]:
        number, row = item
        record: dict[str, Any] = {}
        schema = self.schema()
        media = self._media(schema)
        for name, feature in schema.items():
            value = row.get(name)
            if value is None or value == "":
                record[name] = self._missing(feature, name, number)
                continue
            record[name] = (self._load_media(media[name], value) if name in media
                            and isinstance(value, str) else self._convert(feature, value,
                                                                          number, name))
        return record

    def _missing(self, feature: Feature, name: str, number: int) -> Any:
        """An empty cell's value (see :meth:`~tfrecordkit.schema.Feature.missing`), else a
        SourceError saying how to keep the row."""
        try:
            return feature.missing(name)
        except SchemaError as err:
            raise SourceError(f"{self.path}:{number}", f"column {name!r} is empty and "
                                                       f"{err.reason}; {KEEP_ROWS}"
                                                       f"{{{name!r}: ...}}") from None

    def _media(self, schema: Schema) -> dict[str, Image | Audio]:
        """The columns holding media files, by name (looked up once, not once per row)."""
        if self._media_columns is None:
            self._media_columns = {**schema.of_kind(Image), **schema.of_kind(Audio)}
        return self._media_columns

    def _load_media(self, feature: Image | Audio, path: str) -> Any:
        """A media column's file, loaded (its path relative to the table's folder)."""
        if feature.kind == "audio":
            return load_audio(self.resolve(path), encoding=feature.encoding)
        return self.image.load(self.resolve(path))

    def _convert(self, feature: Feature, value: Any, number: int, name: str) -> Any:
        """A cell's value: a text cell read as its kind reads text (numbers, JSON lists,
        class names or ids), other values as they are."""
        if not isinstance(value, str):
            return value
        try:
            return feature.from_text(name, value)
        except SchemaError as err:
            where = f"{self.path}:{number}"
            raise SourceError(where, f"column {name!r}: {err.reason}") from None


#: Columns taken as the class label when none is named, in this order of preference.
TABLE_LABEL_NAMES = ("label", "labels", "class", "target", "y")


def _label_column(path: str, columns: list[str]) -> str | None:
    """The column taken as the class label (the first of :data:`TABLE_LABEL_NAMES` present);
    when others could be, say so (which was taken and how to choose)."""
    candidates = sorted((c for c in columns if c.lower() in TABLE_LABEL_NAMES),
                        key=lambda c: TABLE_LABEL_NAMES.index(c.lower()))
    if len(candidates) > 1:
        logger.warning("%s: %r is taken as the class label; %s could be too (give "
                       "tk.open_source(path, label_column=...) to choose)", path, candidates[0],
                       ", ".join(repr(c) for c in candidates[1:]))
    return candidates[0] if candidates else None
