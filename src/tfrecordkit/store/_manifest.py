"""``dataset.json``: the manifest that makes a dataset directory self-describing.

It is written last and atomically; a reader trusts nothing in the directory it does not list.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from tfrecordkit.errors import DatasetError
from tfrecordkit.schema import Schema

__all__ = ["MANIFEST_NAME", "Manifest", "ShardInfo", "SplitInfo", "load_manifest"]

MANIFEST_NAME = "dataset.json"
FORMAT_NAME = "tfrecordkit-dataset"
FORMAT_VERSION = 1
Layout = Literal["mixed", "per_class"]


@dataclass(frozen=True)
class ShardInfo:
    """One shard file: its name, record count, size, checksum and per-class counts."""

    file: str
    records: int
    bytes: int
    crc32c: str
    index: str | None = None
    class_id: int | None = None
    class_counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SplitInfo:
    """A split: its shards and totals."""

    shards: tuple[ShardInfo, ...]
    records: int
    bytes: int
    class_counts: dict[str, int] = field(default_factory=dict)

    def shards_of_class(self, class_id: int) -> tuple[ShardInfo, ...]:
        """The shards holding ``class_id`` (per-class layout: its own; mixed: any with it)."""
        key = str(class_id)
        return tuple(s for s in self.shards if s.class_counts.get(key))


@dataclass(frozen=True)
class Manifest:
    """Everything a reader needs to know about a dataset, without scanning it."""

    schema: Schema
    splits: dict[str, SplitInfo]
    layout: Layout = "mixed"
    compression: str | None = None
    label_feature: str | None = None
    skipped: tuple[dict[str, str], ...] = ()
    skipped_count: int = 0
    created_by: dict[str, Any] = field(default_factory=dict)

    @property
    def class_names(self) -> tuple[str, ...]:
        """Names of the classes of the label feature (empty without one)."""
        if self.label_feature is None:
            return ()
        return self.schema[self.label_feature].names  # type: ignore[attr-defined, no-any-return]

    def num_records(self, split: str) -> int:
        """Records in ``split``."""
        return self.split(split).records

    def split(self, name: str) -> SplitInfo:
        """The named split, or a :class:`DatasetError` listing the ones there are."""
        try:
            return self.splits[name]
        except KeyError:
            raise DatasetError(
                f"no split {name!r}; the dataset has {sorted(self.splits)}"
            ) from None

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to ``dataset.json``."""
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "schema": self.schema.to_json(),
            "layout": self.layout,
            "compression": self.compression,
            "label_feature": self.label_feature,
            "splits": {
                name: {
                    "records": split.records,
                    "bytes": split.bytes,
                    "class_counts": split.class_counts,
                    "shards": [
                        {k: v for k, v in asdict(shard).items() if v is not None}
                        for shard in split.shards
                    ],
                }
                for name, split in self.splits.items()
            },
            "skipped_count": self.skipped_count,
            "skipped": list(self.skipped),
            "created_by": self.created_by,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], source: str = MANIFEST_NAME) -> Manifest:
        """Parse a manifest; a :class:`DatasetError` names what is wrong."""
        if data.get("format") != FORMAT_NAME:
            raise DatasetError(f"{source}: not a tfrecordkit manifest")
        if data.get("format_version", 0) > FORMAT_VERSION:
            raise DatasetError(
                f"{source}: format version {data['format_version']} is newer than this "
                f"tfrecordkit understands ({FORMAT_VERSION}); upgrade tfrecordkit"
            )
        try:
            splits = {
                name: SplitInfo(
                    shards=tuple(ShardInfo(**shard) for shard in split["shards"]),
                    records=split["records"],
                    bytes=split["bytes"],
                    class_counts=split.get("class_counts", {}),
                )
                for name, split in data["splits"].items()
            }
            return cls(
                schema=Schema.from_json(data["schema"]),
                splits=splits,
                layout=data.get("layout", "mixed"),
                compression=data.get("compression"),
                label_feature=data.get("label_feature"),
                skipped=tuple(data.get("skipped", ())),
                skipped_count=data.get("skipped_count", 0),
                created_by=data.get("created_by", {}),
            )
        except (KeyError, TypeError) as err:
            raise DatasetError(f"{source}: malformed manifest ({err!r})") from None

    def write(self, directory: str | os.PathLike[str]) -> Path:
        """Write ``dataset.json`` into ``directory`` atomically (temp file, fsync, rename)."""
        target = Path(directory) / MANIFEST_NAME
        tmp = target.with_name(f".{MANIFEST_NAME}.tmp-{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        return target


def load_manifest(directory: str | os.PathLike[str]) -> Manifest:
    """Read the manifest of a dataset directory."""
    path = Path(directory) / MANIFEST_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(
            f"{directory}: no {MANIFEST_NAME} (not a dataset, or its conversion did not finish)"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise DatasetError(f"{path}: invalid JSON ({err})") from None
    return Manifest.from_json(data, str(path))
