"""What a reader reads, for every framework: the files of a split (a dataset directory, or
TFRecord files / globs someone else wrote), their record counts, their schema (the manifest's,
or parsing specs inferred from a sample), checked against the disk before training starts."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfrecordkit.errors import DatasetError, SchemaError
from tfrecordkit.format import (
    FRAME_OVERHEAD,
    LOCAL,
    RecordReader,
    Restarts,
    Storage,
    check_frame,
    decode_example,
    index_path_for,
    load_index,
    load_restarts,
    scan_offsets,
)
from tfrecordkit.readers._mix import Mix, MixPlan, refuse_mix
from tfrecordkit.readers._partition import Partition
from tfrecordkit.sampling import fingerprint
from tfrecordkit.schema import (
    Schema,
    schema_from_profile,
)
from tfrecordkit.store import (
    MANIFEST_NAME,
    Manifest,
    SplitArg,
    SplitLocations,
    is_dataset_dir,
    is_expression,
    load_manifest,
    profile_files,
    record_files,
    shard_paths,
    split_locations,
    split_parts,
    split_text,
)

__all__ = ["FilesArg", "PathArg", "ReadPlan", "plan_read"]

FilesArg = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
PathArg = FilesArg | Mix
"""What a loader reads: a dataset directory, TFRecord files or globs, or a :class:`Mix`."""


@dataclass(frozen=True)
class ReadPlan:
    """One split to read.

    ``counts`` are records per file (-1: unknown until scanned, for foreign files), and
    ``classes`` each file's class (per-class layout; -1 for none).
    ``schema`` is the manifest's, the caller's, or for files someone else wrote, inferred
    from ``inferred_from`` sampled records (0: not inferred) by the rule ``adopt`` uses: every
    file is read through its schema.
    """

    path: str
    split: str
    files: tuple[str, ...]
    counts: tuple[int, ...]
    compression: str | None
    manifest: Manifest | None
    schema: Schema
    inferred_from: int = 0
    bytes_per_record: float = 1024.0
    storage: Storage = LOCAL
    classes: tuple[int, ...] = ()
    taken: int | None = None  # a split expression: the records its parts take of the files
    mix: MixPlan | None = None  # several datasets joined (tk.Mix)
    mix_locations: SplitLocations | None = None

    @property
    def records(self) -> int:
        """Records in the split (-1 if some file's count is unknown)."""
        if self.taken is not None:
            return self.taken
        return sum(self.counts) if all(n >= 0 for n in self.counts) else -1

    @property
    def whole_files(self) -> bool:
        """Whether the split reads its files whole (not a split expression's parts)."""
        return self.taken is None

    @property
    def fingerprint(self) -> str:
        """A short stable hash of what the records are (what a reading order depends on)."""
        if self.mix is not None:
            return self.mix.fingerprint
        if self.manifest is not None:
            return fingerprint(self.manifest.to_json(), self.split)
        data = json.dumps([[f.rsplit("/", 1)[-1], self.storage.size(f)] for f in self.files])
        return hashlib.sha256(data.encode()).hexdigest()[:16]

    def for_rank(self, partition: Partition
                 ) -> tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...], bool]:
        """The files rank ``partition.rank`` reads in a file-sharded pipeline (tf.data), their
        counts and classes: every ``world_size``-th file when there are at least as many
        files as ranks (last value False); else all files, to be sharded record by record
        (True)."""
        world, rank = partition.world_size, partition.rank
        classes = self.classes or (-1,) * len(self.files)
        if world > 1 and len(self.files) >= world:
            return (self.files[rank::world], self.counts[rank::world], classes[rank::world],
                    False)
        return self.files, self.counts, classes, world > 1

    def locations(self) -> SplitLocations:
        """Every record's file, offset and length (from ``.index`` files, or one scan; one
        inflate pass for compressed files, whose offsets are in the decompressed streams).

        Raises:
            DatasetError: a dataset's shards disagree with its manifest, or the files mix
                compressions.
        """
        if self.mix_locations is not None:
            return self.mix_locations
        if self.manifest is not None:  # its shards were checked when the plan was made
            return split_locations(self.path, self.manifest, self.split, storage=self.storage,
                                   checked=True)
        shard_ids, offsets, lengths, points = [], [], [], []
        for number, file in enumerate(self.files):
            if self.compression is not None:
                # One inflate pass finds the records (an index beside a compressed file
                # someone else wrote may count other offsets); restart points if listed.
                found = RecordReader(file, storage=self.storage).compression
                if found != self.compression:
                    raise DatasetError(f"{file}: {found or 'not'} compressed, unlike "
                                       f"{self.files[0]} ({self.compression}); read them apart")
                table = scan_offsets(file, storage=self.storage)
                listed = load_restarts(file, self.storage)
                points.append(np.zeros((1, 2), np.int64) if listed is None else listed)
            else:
                index_file = index_path_for(file)
                table = (load_index(index_file, record_path=file, storage=self.storage)
                         if self.storage.exists(index_file)
                         else scan_offsets(file, storage=self.storage))
            shard_ids.append(np.full(len(table), number, dtype=np.int32))
            offsets.append(table[:, 0])
            lengths.append(table[:, 1])
        return SplitLocations(self.files, np.concatenate(shard_ids), np.concatenate(offsets),
                              np.concatenate(lengths), (),
                              Restarts(self.compression, tuple(points))
                              if self.compression is not None else None)


def plan_read(path: FilesArg, split: SplitArg = "train", *, schema: Schema | None = None,
              sample: int = 1000, storage_options: dict[str, Any] | None = None,
              storage: Storage | None = None) -> ReadPlan:
    """Resolve a dataset directory (its manifest, checked against the shards; ``schema``, if
    given, reads its records instead of the manifest's) or TFRecord files / globs
    (``schema``, else one inferred from ``sample`` records, see
    :func:`~tfrecordkit.store.infer_schema`) to a plan.

    Raises:
        DatasetError: no such files, a directory without a manifest, shards that disagree with
            the manifest (missing, resized, records lacking the schema's keys), or records
            that are not ``tf.train.Example``.
    """
    refuse_mix(path)
    storage = storage or Storage.of(path, storage_options)
    split = split_text(split)
    if is_dataset_dir(path, storage):
        return _dataset_plan(os.fspath(path), split, schema, storage)  # type: ignore[arg-type]
    files = record_files(path, storage=storage)
    compression = RecordReader(files[0], storage=storage).compression
    given = (os.fspath(path) if isinstance(path, str | os.PathLike)
             else ", ".join(os.fspath(p) for p in path))
    if schema is not None:
        if schema.shard_label is not None:
            raise DatasetError(f"{given}: {schema.shard_label!r} is each file's class "
                               "(from_shard), which only a dataset's manifest gives; adopt "
                               "the files (tfrecordkit adopt --class-pattern)")
        return ReadPlan(given, split, tuple(files), (-1,) * len(files), compression,
                        None, schema, storage=storage)
    profile = profile_files(files, sample, storage=storage)
    if not profile.records:
        raise DatasetError(f"{files[0]}: cannot infer a schema (records are not "
                           f"tf.train.Example or SequenceExample)")
    try:
        inferred = schema_from_profile(profile, complete=False)
    except SchemaError as err:
        raise DatasetError(f"{files[0]}: {err}") from None
    return ReadPlan(given, split, tuple(files), (-1,) * len(files), compression,
                    None, inferred, profile.records, storage=storage)


def _dataset_plan(root: str, split: str, schema: Schema | None, storage: Storage) -> ReadPlan:
    """A dataset directory's plan for ``split`` (a split expression: its parts' files, the
    records they take)."""
    manifest = load_manifest(root, storage=storage)
    parts = split_parts(manifest, split)
    infos = [pair for part in dict.fromkeys(p.split for p in parts)
             for pair in shard_paths(root, manifest, part, storage=storage)]
    shards = [(file, info.records) for file, info in infos]
    chosen = schema if schema is not None else manifest.schema
    _check_first_record(chosen, shards, storage)
    whole = [manifest.split(p.split) for p in parts]
    taken = sum(p.records for p in parts)
    stored = sum(info.bytes * p.records / max(1, info.records)
                 for info, p in zip(whole, parts, strict=True))
    return ReadPlan(root, split, tuple(f for f, _ in shards), tuple(n for _, n in shards),
                    manifest.compression, manifest, chosen,
                    bytes_per_record=stored / max(1, taken), storage=storage,
                    classes=tuple(-1 if info.class_id is None else info.class_id
                                  for _, info in infos),
                    taken=taken if is_expression(split, manifest.splits) else None)


def _check_first_record(schema: Schema, shards: list[tuple[str, int]],
                        storage: Storage) -> None:
    """Refuse shards whose records lack keys the schema needs (a schema mismatch)."""
    first = next((f for f, n in shards if n), None)
    if first is None:
        return
    keys = set(decode_example(_first_record(first, storage)))
    missing = [s.key for s in schema.key_specs() if s.key not in keys
               and s.shape is not None and not s.sequence]
    if missing:
        raise DatasetError(f"{first}: records lack {missing} that the schema describes "
                           f"(schema mismatch with the records; the dataset's is in "
                           f"{MANIFEST_NAME})")


def _first_record(file: str, storage: Storage) -> bytes:
    """The first record of a file; remotely from one small ranged read when it fits."""
    if not storage.local:
        head = storage.read_spans([(file, 0, _PEEK)])[0]
        if len(head) >= FRAME_OVERHEAD:
            length = int.from_bytes(head[:8], "little")
            if FRAME_OVERHEAD + length <= len(head):
                return check_frame(head[: FRAME_OVERHEAD + length], path=file, offset=0)
    return next(iter(RecordReader(file, storage=storage)))


_PEEK = 1 << 16
