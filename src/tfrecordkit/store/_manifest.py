"""``dataset.json``: the manifest that makes a dataset directory self-describing.

It is written last and atomically; a reader trusts nothing in the directory it does not list.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

import msgspec

from tfrecordkit.errors import CorruptRecordError, DatasetError, SchemaError
from tfrecordkit.format import (
    FRAME_OVERHEAD,
    HEAD_BYTES,
    Storage,
    check_frame,
    crc32c_hex,
    masked_crc32c,
)
from tfrecordkit.schema import SOURCE_FEATURE, ClassLabel, Schema
from tfrecordkit.store._sidecar import externalize_lists

__all__ = ["MANIFEST_NAME", "MAX_MANIFEST_BYTES", "Manifest", "ShardInfo", "SplitInfo",
           "shard_paths", "text_of_name"]

MANIFEST_NAME = "dataset.json"
#: What a split may be named: it becomes part of shard file names.
SPLIT_NAME = r"^[A-Za-z0-9_.-]{1,64}$"


def check_split_name(name: str) -> None:
    """Refuse a split name readers would refuse in the manifest (it names shard files).

    Raises:
        DatasetError: naming the split and what a name may hold.
    """
    if not isinstance(name, str) or not re.fullmatch(SPLIT_NAME, name) or name in (".", ".."):
        raise DatasetError(f"split name {name!r}: 1 to 64 letters, digits, '_', '.' or '-' "
                           "(it becomes part of the shard file names)")
FORMAT_NAME = "tfrecordkit-dataset"
# 2: text features may carry a vocabulary (tfrecordkit 1 would fail on it); datasets written
# as version 1 read unchanged. 3: a class label may be the shard's class (from_shard), which
# version-2 readers would not give; written only by datasets that have one. 4: long lists
# (a vocabulary's tokens, class names) may live in sidecar files (see _sidecar.py); written
# only by datasets that have one. 5: records may carry their input ("__source", a reserved
# text feature in the schema; provenance); written only by datasets whose records do.
# 6: compressed shards may list a restart-point sidecar ("restarts") and an index of
# decompressed offsets; written only by compressed datasets that have either. 7: a Tensor may
# be stored as a serialized TensorProto or a flat list (encoding "proto", "list"); written
# only by schemas with one. 8: a schema may hold feature lists (records are SequenceExamples);
# written only by schemas with one. 9: boxes may carry their classes' source ids and
# per-object fields (COCO's crowd flags, areas, annotation ids); written only by schemas with
# such boxes.
FORMAT_VERSION = 9
Layout = Literal["mixed", "per_class"]


@dataclass(frozen=True)
class ShardInfo:
    """One shard file: its name, record count, size, checksum and per-class counts.

    Attributes:
        file: the file name inside the dataset directory.
        records: records in the file.
        bytes: the file's size.
        crc32c: the CRC32C of the whole file (8 hex digits; ``tfrecordkit verify``).
        index: the name of its ``offset length`` index, if written.
        class_id: the one class of its records (per-class layout), else None.
        class_counts: records per class id (as a string).
        head_crc32c: the CRC32C of its first 4 KiB (see below).
        restarts: the name of its restart-point sidecar (compressed shards), if written.
        digests: the name of its records' key hashes and content digests, if written.
    """

    file: str
    records: int
    bytes: int
    crc32c: str
    index: str | None = None
    class_id: int | None = None
    class_counts: dict[str, int] = field(default_factory=dict)
    #: CRC32C of the file's first 4 KiB, checked when a reader opens the shard locally
    #: (None in datasets written before it was recorded).
    head_crc32c: str | None = None
    restarts: str | None = None
    digests: str | None = None


@dataclass(frozen=True)
class SplitInfo:
    """A split: its shards and totals.

    Attributes:
        shards: its :class:`ShardInfo` entries, in reading order.
        records: records in the split (there is no ``num_records``: this is it).
        bytes: bytes of its shards.
        class_counts: records per class id (as a string).
    """

    shards: tuple[ShardInfo, ...]
    records: int
    bytes: int
    class_counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    """Everything a reader needs to know about a dataset, without scanning it.

    Attributes:
        schema: the :class:`~tfrecordkit.schema.Schema` of its records.
        splits: :class:`SplitInfo` by split name; :meth:`num_records` and :meth:`split`
            look one up.
        layout: ``"mixed"``, or ``"per_class"`` (each shard holds one class).
        compression: ``"gzip"``, ``"zlib"`` or None.
        label_feature: the class label's feature name, if any; ``class_names`` its names.
        skipped: the inputs a conversion skipped (``on_error="skip"``), with why (the first
            1,000); ``skipped_count`` all of them.
        created_by: provenance: tool and version, source, split, seed, conversion rules.
    """

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
        if not isinstance(name, str):
            raise DatasetError(f"split={name!r}: a split is named by one string; the dataset "
                               f"has {sorted(self.splits)} (the readers and open_split read "
                               "several as one: 'train+val', or a list)")
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
            "format_version": max(
                [v for v, _ in self.schema.format_needs]
                + [6 if self.compression and any(
                    shard.restarts or shard.index
                    for split in self.splits.values() for shard in split.shards) else 2,
                   5 if SOURCE_FEATURE in self.schema else 2,
                   3 if self.schema.shard_label else 2]),
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
    def from_json(cls, data: Any, source: str = MANIFEST_NAME) -> Manifest:
        """Parse and validate a manifest (untrusted input); a one-line
        :class:`DatasetError` names the key that is wrong."""
        if isinstance(data, dict) and isinstance(data.get("format_version"), int) and (
                data.get("format") == FORMAT_NAME and data["format_version"] > FORMAT_VERSION):
            raise DatasetError(
                f"{source}: format version {data['format_version']} is newer than this "
                f"tfrecordkit understands ({FORMAT_VERSION}); upgrade tfrecordkit"
            )
        try:
            spec = msgspec.convert(data, _ManifestSpec)
        except msgspec.ValidationError as err:
            raise DatasetError(f"{source}: invalid manifest: {_explain(err)}") from None
        return _from_spec(cls, spec, source)

    def write(self, directory: str | os.PathLike[str], *,
              storage: Storage | None = None, replaces: str | None = None) -> str:
        """Write ``dataset.json`` into ``directory`` atomically (locally: temp file, fsync,
        rename; object stores: one whole-object upload), after the sidecars of its long lists
        (a large vocabulary or class list). Returns its path.

        With ``replaces`` (the :meth:`Storage.version` of the manifest this one grows, read
        before it), it is written only if that manifest is still the one there: locally under
        the folder's lock, on S3 by a conditional PUT.

        Raises:
            DatasetError: the manifest would be larger than readers accept, or (``replaces``)
                another writer replaced it since it was read (nothing written).
        """
        storage = storage or Storage.of(directory)
        target = storage.join(directory, MANIFEST_NAME)
        content = _json_safe(self.to_json())
        sidecars = externalize_lists(content)
        if sidecars:
            content["format_version"] = max(content["format_version"], 4)
        data = json.dumps(content, indent=1).encode("utf-8")
        if len(data) > MAX_MANIFEST_BYTES:
            raise DatasetError(f"{target}: the manifest would be {len(data) >> 20} MiB, more "
                               f"than readers accept ({MAX_MANIFEST_BYTES >> 20} MiB); use "
                               "fewer shards (larger shard_size)")
        for file, blob in sidecars.items():
            storage.write_bytes(storage.join(directory, file), blob)
        if replaces is None:
            storage.write_bytes(target, data)
        elif not storage.replace_if(target, data, replaces):
            raise DatasetError(f"{target}: another writer replaced it while this append ran "
                               "(two appends at once); nothing of theirs was changed and this "
                               "append's shards were removed: run it again to add its records")
        return target


def shard_paths(directory: str | os.PathLike[str], manifest: Manifest,
                split: str, *, storage: Storage | None = None) -> list[tuple[str, ShardInfo]]:
    """The paths of a split's shards with their manifest entries, after checking that each
    file exists and has the size the manifest gives, and (local files) that its first 4 KiB
    have the checksum the manifest gives.

    Raises:
        DatasetError: a shard is missing, or its size or first bytes differ (replaced,
            rewritten or truncated).
    """
    storage = storage or Storage.of(directory)
    out = []
    sizes = storage.sizes(directory) if not storage.local else None
    for shard in manifest.split(split).shards:
        file = storage.join(directory, shard.file)
        try:
            size = storage.size(file) if sizes is None else sizes[shard.file]
        except (OSError, KeyError):
            raise DatasetError(f"{file}: listed in {MANIFEST_NAME} but missing") from None
        if size != shard.bytes:
            raise DatasetError(f"{file}: {size} bytes, {MANIFEST_NAME} says {shard.bytes} "
                               "(replaced or truncated?)")
        if storage.local and shard.head_crc32c is not None and _replaced(file, shard, storage):
            raise DatasetError(f"{file}: its first bytes differ from what {MANIFEST_NAME} "
                               "records (the shard was replaced or rewritten after the dataset "
                               "was written); `tfrecordkit verify` checks every shard")
        out.append((file, shard))
    return out


def _replaced(file: str, shard: ShardInfo, storage: Storage) -> bool:
    """Whether the shard's first bytes differ from the manifest's checksum while holding
    valid frames: another file put in its place. A head that fails a frame's checks is
    corruption instead, left to the per-record checks (and their ``on_error`` policy)."""
    head = storage.read_spans([(file, 0, min(HEAD_BYTES, shard.bytes))])[0]
    if crc32c_hex(head) == shard.head_crc32c:
        return False
    position = 0
    while position + FRAME_OVERHEAD <= len(head):
        end = position + FRAME_OVERHEAD + int.from_bytes(head[position : position + 8],
                                                         "little")
        frame = head[position : min(end, len(head))]
        try:
            if end <= len(head):
                check_frame(frame, path=file, offset=position)
            elif masked_crc32c(frame[:8]) != int.from_bytes(frame[8:12], "little"):
                return False  # the frame running past the head: its header alone
        except CorruptRecordError:
            return False
        position = end
    return True


def text_of_name(name: str) -> str:
    """A file or folder name as UTF-8 text: unchanged when it is valid UTF-8; otherwise the
    bytes that are not become ``\\xNN`` (Linux allows any bytes in names)."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _json_safe(value: Any) -> Any:
    if isinstance(value, str):
        return text_of_name(value)
    if isinstance(value, dict):
        return {_json_safe(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


MAX_MANIFEST_BYTES = 64 << 20
_COUNT = Annotated[int, msgspec.Meta(ge=0, le=2**53)]
_CLASS_ID = Annotated[str, msgspec.Meta(pattern=r"^(0|[1-9][0-9]{0,8})$")]
# A shard or index is a plain file name inside the dataset: no separators, not '.' or '..',
# no NUL; so no manifest can point a reader (or verify) at a file outside its directory.
_FILE_NAME = Annotated[str, msgspec.Meta(min_length=1, max_length=255,
                                         pattern=r"^(?!\.{1,2}$)[^/\\\x00]+$")]


class _ShardSpec(msgspec.Struct, frozen=True):
    file: _FILE_NAME
    records: _COUNT
    bytes: _COUNT
    crc32c: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{8}$")]
    index: _FILE_NAME | None = None
    class_id: Annotated[int, msgspec.Meta(ge=0, le=10**9)] | None = None
    class_counts: dict[_CLASS_ID, _COUNT] = {}
    head_crc32c: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{8}$")] | None = None
    restarts: _FILE_NAME | None = None
    digests: _FILE_NAME | None = None


class _SplitSpec(msgspec.Struct, frozen=True):
    shards: list[_ShardSpec]
    records: _COUNT
    bytes: _COUNT
    class_counts: dict[_CLASS_ID, _COUNT] = {}


class _ManifestSpec(msgspec.Struct, frozen=True):
    format: Literal["tfrecordkit-dataset"]
    format_version: Annotated[int, msgspec.Meta(ge=1, le=FORMAT_VERSION)]
    schema: dict[str, Any]
    splits: dict[Annotated[str, msgspec.Meta(pattern=SPLIT_NAME)], _SplitSpec]
    layout: Literal["mixed", "per_class"] = "mixed"
    compression: Literal["gzip", "zlib"] | None = None
    label_feature: str | None = None
    skipped_count: _COUNT = 0
    skipped: list[dict[str, str]] = []
    created_by: dict[str, Any] = {}


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 300 else text[:297] + "..."


def _explain(err: msgspec.ValidationError) -> str:
    """msgspec's message, with file-name rule violations said in words."""
    text = _one_line(err)
    message, _, where = text.rpartition(" - at ")
    if ("regex" in message or "length" in message) and where.rstrip("`").endswith(
            (".file", ".index", ".restarts", ".digests")):
        return ("not a plain file name inside the dataset (no '/', '\\', '.', '..' or NUL)"
                f" - at {where}")
    return text


def _from_spec(cls: type[Manifest], spec: _ManifestSpec, source: str) -> Manifest:
    """Build a manifest from a validated spec, checking what types can't say: the schema,
    the label feature, class ids within the class list, totals that add up, unique files."""
    def fail(key: str, problem: str) -> DatasetError:
        return DatasetError(f"{source}: invalid manifest: {problem} - at `$.{key}`")

    try:
        schema = Schema.from_json(spec.schema)
    except (SchemaError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise fail("schema", f"not a valid schema ({_one_line(err)})") from None
    classes = _check_schema(schema, spec, fail)
    seen: set[str] = set()
    splits = {}
    for name, split in spec.splits.items():
        for i, shard in enumerate(split.shards):
            problem = _shard_problem(shard, spec, schema, classes, seen=seen)
            if problem is not None:
                raise fail(f"splits.{name}.shards[{i}]", problem)
        split_ids = [int(k) for k in split.class_counts]
        if split_ids and (classes is None or max(split_ids) >= classes):
            raise fail(f"splits.{name}.class_counts", f"class id {max(split_ids)} outside "
                                                      f"the {classes or 0} classes")
        if sum(s.records for s in split.shards) != split.records:
            raise fail(f"splits.{name}.records", f"{split.records} records, but its shards "
                                                 f"hold {sum(s.records for s in split.shards)}")
        splits[name] = SplitInfo(
            shards=tuple(ShardInfo(file=s.file, records=s.records, bytes=s.bytes,
                                   crc32c=s.crc32c, index=s.index, class_id=s.class_id,
                                   head_crc32c=s.head_crc32c, restarts=s.restarts,
                                   digests=s.digests,
                                   class_counts=dict(s.class_counts)) for s in split.shards),
            records=split.records, bytes=split.bytes, class_counts=dict(split.class_counts))
    return cls(schema=schema, splits=splits, layout=spec.layout, compression=spec.compression,
               label_feature=spec.label_feature, skipped=tuple(spec.skipped),
               skipped_count=spec.skipped_count, created_by=dict(spec.created_by))


def _check_schema(schema: Schema, spec: _ManifestSpec,
                  fail: Callable[[str, str], DatasetError]) -> int | None:
    """The schema against the rest of the manifest (its label feature, layout and format
    version); the label's number of classes, if there is a label."""
    classes: int | None = None
    if spec.label_feature is not None:
        labels = schema.of_kind(ClassLabel)
        if spec.label_feature not in labels:
            raise fail("label_feature", f"{spec.label_feature!r} is not a class_label feature")
        classes = labels[spec.label_feature].num_classes
    if schema.shard_label is not None:
        if spec.label_feature != schema.shard_label or spec.layout != "per_class":
            raise fail("label_feature", f"{schema.shard_label!r} is the shard's class "
                                        "(from_shard), so it must be the label feature of "
                                        "a per_class dataset")
        if spec.format_version < 3:
            raise fail("format_version", "a label taken from the shard needs version 3")
    for version, what in schema.format_needs:
        if spec.format_version < version:
            raise fail("format_version", f"{what} need version {version} or later")
    if SOURCE_FEATURE in schema and spec.format_version < 5:
        raise fail("format_version", f"records that carry {SOURCE_FEATURE!r} need version 5")
    return classes


def _shard_problem(shard: _ShardSpec, spec: _ManifestSpec, schema: Schema,
                   classes: int | None, *, seen: set[str]) -> str | None:
    """What is wrong with one shard's entry, if anything: files listed once (``seen`` so
    far), restart points only on compressed shards, a class id where the label comes from the
    shard, ids in range."""
    for file in (shard.file, shard.index, shard.restarts, shard.digests):
        if file is not None and file in seen:
            return f"file {file!r} is listed twice"
        if file is not None:
            seen.add(file)
    if shard.restarts is not None and (spec.compression is None or spec.format_version < 6):
        return "restart points belong to compressed shards, and need version 6"
    if schema.shard_label is not None and shard.class_id is None:
        return f"no class_id, which {schema.shard_label!r} (from_shard) takes its value from"
    ids = [shard.class_id] if shard.class_id is not None else []
    ids += [int(k) for k in shard.class_counts]
    if ids and (classes is None or max(ids) >= classes):
        return f"class id {max(ids)} outside the {classes or 0} classes"
    return None
