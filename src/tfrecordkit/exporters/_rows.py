"""Records as plain values for another library: media as their stored bytes (raw pixels as
PNG), class ids, text, numbers, lists, and binary values kept as bytes; and the names the
targets give files, made from feature and split names so that two names never become one
and no name leaves its archive or its sample."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tfrecordkit.errors import OptionError
from tfrecordkit.exporters._coco_layout import BOX_LAYOUTS, CocoBoxes
from tfrecordkit.format import KeySpec, parse_examples
from tfrecordkit.schema import SOURCE_FEATURE, DecodeContext, Image, Schema
from tfrecordkit.store import SplitRecords

__all__ = ["Chunk", "Rows", "member_name", "split_labels"]

Chunk = list[dict[str, Any]]


_KEPT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-~")


def member_name(name: str) -> str:
    """A feature name as one part of a file name: percent-encoded in lowercase hex (``/``,
    NUL, ``%``, capitals and every other character but lowercase letters, digits and
    ``_.-~``; ``urllib.parse.unquote`` gives the name back), so distinct names stay distinct,
    also once a reader lowercases them as WebDataset does, and none holds a separator."""
    return "".join(c if c in _KEPT else "".join(f"%{b:02x}" for b in c.encode(
        "utf-8", "surrogatepass")) for c in name)


def split_labels(splits: list[str]) -> dict[str, str]:
    """Each split (or expression) as a file-name part: letters, digits, ``-`` and ``_`` kept,
    anything else ``_``.

    Raises:
        OptionError: two splits would get one label (naming both): export them one at a time
            with ``split=``.
    """
    labels: dict[str, str] = {}
    seen: dict[str, str] = {}
    for split in splits:
        label = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in split)
        if label in seen:
            raise OptionError(f"splits {seen[label]!r} and {split!r} would both be written as "
                              f"{label!r}: export them one at a time (split=, --split) into "
                              "two folders")
        seen[label] = split
        labels[split] = label
    return labels


class Rows:
    """A split's records as dicts of plain values, a chunk at a time."""

    def __init__(self, schema: Schema, boxes: str = "fractions") -> None:
        if boxes not in BOX_LAYOUTS:
            raise OptionError(f"boxes must be one of {BOX_LAYOUTS}; got {boxes!r}")
        self.schema = schema
        stored = [n for n in schema if n != SOURCE_FEATURE]
        #: COCO's detection layout for the boxes (``boxes="coco"``), or None.
        self.coco = CocoBoxes(schema) if boxes == "coco" else None
        #: The exported columns (``objects``, ``width``, ``height`` in COCO's layout).
        self.names = self.coco.names(stored) if self.coco is not None else stored
        self.source = SOURCE_FEATURE in schema
        # Encoded images and audio: their stored bytes, as they are.
        self.media = [n for n in stored if schema[n].export_extension(b"") is not None]
        self.raw_images = [n for n, f in schema.of_kind(Image).items() if n not in self.media]
        self.decoded = [n for n in schema if n not in self.media]  # provenance too
        self._media_specs = [KeySpec(n, "string", ()) for n in self.media]

    def parsed(self, records: SplitRecords, ids: range) -> tuple[dict[str, Any],
                                                                 dict[str, Any]]:
        """Records ``ids`` parsed as a batch (the compiled columnar codec): the decoded
        values of the other features (a label taken from the shard included: the records'
        shard classes), and the media's stored bytes as parsed columns."""
        positions = np.arange(ids.start, ids.stop)
        found = records.get_slices(positions)

        def where(i: int) -> str:
            return records.where(ids.start + i)

        classes = records.shard_classes(positions) if self.schema.shard_label else None
        values = (self.schema.decode_batch(found, features=self.decoded, where=where,
                                           context=DecodeContext(shard_classes=classes))
                  if self.decoded else {})
        media = parse_examples(found, self._media_specs, where=where)
        if self.coco is not None:  # COCO's pixel boxes, measured on their image
            image = self.coco.image
            pixels = media[image].to_bytes() if image in media else values[image]
            values.update(self.coco.columns(values.pop(self.coco.name), pixels))
        return values, media

    def rows(self, records: SplitRecords, ids: range) -> Chunk:
        """Records ``ids`` as rows of plain values, raw-pixel images as PNG bytes."""
        values, columns = self.parsed(records, ids)
        media = {name: column.to_bytes() for name, column in columns.items()}
        plain = {name: [plain_value(v) for v in column] for name, column in values.items()}
        if SOURCE_FEATURE in plain:
            plain[SOURCE_FEATURE] = [text_of(v) for v in plain[SOURCE_FEATURE]]
        rows = [{name: media[name][i] if name in media else plain[name][i]
                 for name in (*self.names, *([SOURCE_FEATURE] if self.source else []))}
                for i in range(len(ids))]
        for row in rows:
            for name in self.raw_images:
                row[name] = self.png(name, row[name])
        return rows

    def png(self, name: str, pixels: Any) -> bytes:
        """Raw pixels encoded as PNG (lossless), the bytes other tools read."""
        return Image("png").encode_array(name, np.asarray(pixels, np.uint8))

    def extension(self, name: str, value: bytes) -> str:
        """The file extension of an image's or audio's bytes (raw pixels: encoded as PNG)."""
        return self.schema[name].export_extension(value) or "png"


def plain_value(value: Any) -> Any:
    """A decoded value as plain Python: arrays as (nested) lists; bytes stay bytes."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {k: plain_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_value(v) for v in value]
    return value


def text_of(value: Any) -> Any:
    """A record's provenance (a path) as text."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
