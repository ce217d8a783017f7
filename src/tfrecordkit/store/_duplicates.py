"""Records whose content appears more than once in a dataset, within a split or across splits
(train/test leakage), from the shards' ``.digests`` sidecars, or from the records themselves
for shards without one (adopted files, older datasets)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfrecordkit.format import RecordReader, Storage
from tfrecordkit.schema import SOURCE_FEATURE
from tfrecordkit.store._digests import content_digest, read_digests
from tfrecordkit.store._load import load_manifest
from tfrecordkit.store._manifest import Manifest

__all__ = ["Duplicates", "find_duplicates"]

#: Groups listed in full (all are counted).
MAX_LISTED = 1000


@dataclass
class Duplicates:
    """What :func:`find_duplicates` found.

    Attributes:
        records: records compared.
        groups: records with one content, each ``[{"split", "file", "record"}, ...]`` (the
            first :data:`MAX_LISTED` groups), across splits first; with ``"source"``, the
            input each came from, where the dataset stores it (``__source``).
        group_count: every such group; ``across_count`` those spanning more than one split.
        extra_records: records beyond the first of each group (what removing them would save).
        computed: shards without a ``.digests`` sidecar, whose records were read to digest.
    """

    records: int = 0
    groups: list[list[dict[str, Any]]] = field(default_factory=list)
    group_count: int = 0
    across_count: int = 0
    extra_records: int = 0
    computed: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {"records": self.records, "groups": self.group_count,
                "across_splits": self.across_count, "extra_records": self.extra_records,
                "listed": self.groups, "digested_from_records": self.computed}

    @staticmethod
    def where(member: dict[str, Any]) -> str:
        """A listed record as a user finds it: the input it came from, else
        ``shard#index``."""
        return member.get("source") or f"{member['file']}#{member['record']}"

    def lines(self) -> list[str]:
        """One line per group listed, then the totals."""
        out = []
        for group in self.groups:
            splits = sorted({r["split"] for r in group})
            kind = "across splits " + "/".join(splits) if len(splits) > 1 else f"in {splits[0]}"
            places = ", ".join(self.where(r) for r in group[:6])
            more = f" and {len(group) - 6} more" if len(group) > 6 else ""
            out.append(f"same content {kind}: {places}{more}")
        out.append(f"{self.group_count} group(s) of equal records ({self.across_count} across "
                   f"splits, {self.extra_records} record(s) beyond the first of each) among "
                   f"{self.records} records")
        return out


def _digests_of_records(path: str, storage: Storage) -> np.ndarray:
    reader = RecordReader(path, storage=storage)
    return np.array([content_digest(record) for record in reader], dtype="V16")


def find_duplicates(directory: str, *, storage_options: dict[str, Any] | None = None,
                    wrap: Callable[[Iterable[Any], str], Iterable[Any]] | None = None
                    ) -> Duplicates:
    """The groups of records with equal content in the dataset at ``directory``.

    Raises:
        DatasetError: no dataset there, or a ``.digests`` sidecar disagrees with its shard.
    """
    storage = Storage.of(directory, storage_options)
    manifest = load_manifest(directory, storage=storage)
    result = Duplicates()
    contents, shard_of, record_of = [], [], []
    places: list[tuple[str, str]] = []  # (split, file) per shard
    shards = [(name, shard) for name, split in manifest.splits.items() for shard in split.shards]
    for name, shard in (wrap or (lambda items, _: items))(shards, "digests"):
        if shard.digests:
            found = read_digests(storage, storage.join(directory, shard.digests),
                                 shard.records)["content"]
        else:
            found = _digests_of_records(storage.join(directory, shard.file), storage)
            result.computed.append(shard.file)
        shard_of.append(np.full(len(found), len(places), dtype=np.int32))
        record_of.append(np.arange(len(found), dtype=np.int64))
        contents.append(np.ascontiguousarray(found))
        places.append((name, shard.file))
    if not contents:
        return result
    content = np.concatenate(contents)
    shard_ids, records = np.concatenate(shard_of), np.concatenate(record_of)
    result.records = len(content)
    order = np.argsort(content.view(np.dtype((np.void, 16))), kind="stable")
    ordered = content[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    ends = np.append(starts[1:], len(ordered))
    repeated = np.flatnonzero(ends - starts > 1)
    split_index = {name: i for i, name in enumerate(manifest.splits)}
    split_of_shard = np.array([split_index[s] for s, _ in places], dtype=np.int32)
    groups = []
    for g in repeated.tolist():
        members = order[starts[g] : ends[g]]
        across = len(np.unique(split_of_shard[shard_ids[members]])) > 1
        result.group_count += 1
        result.across_count += across
        result.extra_records += len(members) - 1
        groups.append((not across, members))
    groups.sort(key=lambda g: g[0])  # across splits first, stable otherwise
    result.groups = [[{"split": places[shard_ids[m]][0], "file": places[shard_ids[m]][1],
                       "record": int(records[m])} for m in members.tolist()]
                     for _, members in groups[:MAX_LISTED]]
    if SOURCE_FEATURE in manifest.schema:
        _name_sources(directory, manifest, storage, result.groups)
    return result


def _name_sources(directory: str, manifest: Manifest, storage: Storage,
                  groups: list[list[dict[str, Any]]]) -> None:
    """Give each listed record the input it came from (its ``__source``), read from its
    shard, so a leaked or repeated image can be found."""
    from tfrecordkit.store._split import SplitRecords

    starts: dict[str, dict[str, int]] = {}
    for name, split in manifest.splits.items():
        first, at = {}, 0
        for shard in split.shards:
            first[shard.file] = at
            at += shard.records
        starts[name] = first
    opened: dict[str, SplitRecords] = {}
    for group in groups:
        for member in group:
            split = member["split"]
            records = opened.get(split)
            if records is None:
                records = opened[split] = SplitRecords(directory, split, manifest=manifest,
                                                       storage=storage)
            record = records[starts[split][member["file"]] + member["record"]]
            value = manifest.schema.decode(record, features=[SOURCE_FEATURE])[SOURCE_FEATURE]
            member["source"] = (value.decode("utf-8", "surrogateescape")
                                if isinstance(value, bytes) else str(value))
