"""The write plan every engine follows, as pure functions.

Records are ordered by their seeded hash ``h`` (:func:`record_hash`; input order when there is
no write-time shuffle, ties in input order). A split's shards are contiguous runs of that order
(class by class, ascending, for the per-class layout); :func:`plan_split` gives their names and
bounds from the split's totals alone. So any engine that can sort and count writes the same
shards, and a retried task rewrites the same shard. :func:`finalize_manifest` turns the shards'
stats, from whatever engine wrote them, into ``dataset.json``, written last.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfrecordkit.errors import DatasetError
from tfrecordkit.format import Storage
from tfrecordkit.schema import ImageObservations, Schema
from tfrecordkit.store._manifest import Manifest, ShardInfo, SplitInfo
from tfrecordkit.store._naming import shard_name
from tfrecordkit.store._options import ShardOptions

__all__ = ["SKIPPED_LISTED", "ShardSpec", "SplitTotals", "StreamCut", "Tally", "finalize_manifest",
           "plan_split"]


@dataclass
class SplitTotals:
    """What a split holds: records and framed bytes, overall and per class id (counted up
    as records are written, by either engine)."""

    records: int = 0
    bytes: int = 0
    class_records: Counter[int] = field(default_factory=Counter)
    class_bytes: Counter[int] = field(default_factory=Counter)


#: Skipped inputs a manifest names (all are counted).
SKIPPED_LISTED = 1000


@dataclass
class Tally:
    """What a conversion staged, counted by whichever engine staged it: each split's totals,
    the inputs left out (the first :data:`SKIPPED_LISTED` named, all counted) and what its
    images turned out to be. The write plan and the manifest are made from it alone."""

    totals: dict[str, SplitTotals] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)
    skipped_count: int = 0
    observed: ImageObservations = field(default_factory=ImageObservations)

    def count(self, split: str, lengths: np.ndarray, label_ids: np.ndarray) -> None:
        """Add records of ``split``: their frame lengths and class ids (-1: none)."""
        totals = self.totals.setdefault(split, SplitTotals())
        totals.records += len(lengths)
        totals.bytes += int(lengths.sum())
        labelled = label_ids >= 0
        if labelled.any():
            ids, inverse = np.unique(label_ids[labelled], return_inverse=True)
            records = np.bincount(inverse)
            nbytes = np.bincount(inverse, weights=lengths[labelled])
            for label, r, b in zip(ids.tolist(), records.tolist(), nbytes.tolist(), strict=True):
                totals.class_records[label] += r
                totals.class_bytes[label] += int(b)

    def add(self, split: str, label: int, records: int, nbytes: int) -> None:
        """Add ``records`` records of ``nbytes`` framed bytes of class ``label`` (-1: none)."""
        totals = self.totals.setdefault(split, SplitTotals())
        totals.records += records
        totals.bytes += nbytes
        if label >= 0:
            totals.class_records[label] += records
            totals.class_bytes[label] += nbytes

    def skip(self, input_name: str, reason: str) -> None:
        """An input left out, with why."""
        self.skipped_count += 1
        if len(self.skipped) < SKIPPED_LISTED:
            self.skipped.append({"input": input_name, "reason": reason})

    @property
    def expected(self) -> dict[str, int]:
        """Records staged per split (what the shards must hold)."""
        return {split: t.records for split, t in self.totals.items()}

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (what a resumable spill keeps)."""
        return {
            "skipped": self.skipped, "skipped_count": self.skipped_count,
            "observed": sorted(self.observed.as_set()),
            "totals": {split: {"records": t.records, "bytes": t.bytes,
                               "class_records": dict(t.class_records),
                               "class_bytes": dict(t.class_bytes)}
                       for split, t in self.totals.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tally:
        """The tally :meth:`to_json` gave."""
        tally = cls(skipped=list(data["skipped"]), skipped_count=int(data["skipped_count"]))
        tally.observed.add(data.get("observed", ()))
        for split, t in data["totals"].items():
            tally.totals[split] = SplitTotals(
                t["records"], t["bytes"],
                Counter({int(k): v for k, v in t["class_records"].items()}),
                Counter({int(k): v for k, v in t["class_bytes"].items()}))
        return tally


@dataclass(frozen=True)
class ShardSpec:
    """One shard: records ``start .. stop - 1`` of the split in write order."""

    name: str
    start: int
    stop: int
    class_id: int | None = None


def _cut(records: int, nbytes: int, options: ShardOptions) -> list[int]:
    """Shard bounds (exclusive ends) over ``records`` records of ``nbytes`` bytes."""
    count = min(options.shard_count(nbytes), max(1, records))
    return [round(records * (i + 1) / count) for i in range(count)]


class StreamCut:
    """Cuts records, in write order, into shards of at most ``shard_size`` framed bytes as they
    come (a shard holds at least one record): the one-pass cut used without a write-time
    shuffle or a fixed shard count. Fed the records' frame lengths a batch at a time."""

    def __init__(self, shard_size: int) -> None:
        self.limit = shard_size
        self.filled = 0  # framed bytes in the current shard
        self.records = 0  # records in the current shard

    def pieces(self, lengths: np.ndarray) -> list[tuple[int, int]]:
        """Runs ``(start, stop)`` of this batch's records that go, in turn, to the current
        shard; an empty run ``(i, i)`` closes the current shard before record ``i``."""
        ends = np.cumsum(lengths, dtype=np.int64)
        out: list[tuple[int, int]] = []
        start, base = 0, 0
        while start < len(lengths):
            stop = int(np.searchsorted(ends, base + self.limit - self.filled, side="right"))
            if stop <= start and self.records:
                out.append((start, start))
                self.filled = self.records = 0
                continue
            stop = max(stop, start + 1)
            end = int(ends[stop - 1])
            out.append((start, stop))
            self.filled += end - base
            self.records += stop - start
            start, base = stop, end
        return out


def plan_split(split: str, totals: SplitTotals, options: ShardOptions, part: str = ""
               ) -> list[ShardSpec]:
    """The shards of ``split``: names and bounds in write order (for the per-class layout,
    class by class in ascending id, each class in ``h`` order); named for the append
    ``part`` tags (:func:`append_tag`) when not empty."""
    if options.layout != "per_class":
        bounds = _cut(totals.records, totals.bytes, options)
        starts = [0, *bounds[:-1]]
        return [ShardSpec(shard_name(split, i, len(bounds), options.compression, part=part),
                          a, b)
                for i, (a, b) in enumerate(zip(starts, bounds, strict=True))]
    specs = []
    offset = 0
    for label in sorted(totals.class_records):
        records = totals.class_records[label]
        bounds = _cut(records, totals.class_bytes[label], options)
        start = 0
        for i, stop in enumerate(bounds):
            name = shard_name(split, i, len(bounds), options.compression, class_id=label,
                              part=part)
            specs.append(ShardSpec(name, offset + start, offset + stop, label))
            start = stop
        offset += records
    return specs


def finalize_manifest(
    out: str | os.PathLike[str],
    shards: Mapping[str, Sequence[ShardInfo]],
    *,
    schema: Schema,
    options: ShardOptions,
    label_feature: str | None,
    skipped: Sequence[Mapping[str, str]] = (),
    skipped_count: int = 0,
    created_by: Mapping[str, Any] | None = None,
    expected: Mapping[str, int] | None = None,
    storage: Storage | None = None,
    base: Manifest | None = None,
    base_version: str | None = None,
    part: int = 0,
) -> Manifest:
    """Write ``dataset.json`` for shards already in place (any engine's), and return it.

    ``shards`` maps each split to its shards' stats; ``expected`` (records per split), when
    given, must match them, or nothing is written. With ``base`` (an append), its shards are
    kept and the new ones added to their splits, and the manifest is replaced only if it is
    still the version ``base_version`` (see :meth:`Manifest.write`); the inputs it skipped
    are kept, and this one's (the ``part``-th append's, each saying so) listed after them, up
    to :data:`SKIPPED_LISTED` in all (``skipped_count`` counts every one).

    Raises:
        DatasetError: the shards hold another number of records than expected.
    """
    splits: dict[str, SplitInfo] = {}
    for split in sorted(shards):
        if expected is not None and sum(s.records for s in shards[split]) != expected.get(split):
            raise DatasetError(f"split {split!r}: wrote {sum(s.records for s in shards[split])}"
                               f" records, staged {expected.get(split)}")
    kept = {name: list(info.shards) for name, info in (base.splits if base else {}).items()}
    for split in sorted({*shards, *kept}):
        ordered = sorted([*kept.get(split, ()), *shards.get(split, ())],
                         key=lambda s: (s.class_id or 0, s.file))
        class_counts: Counter[str] = Counter()
        for shard in ordered:
            class_counts.update(shard.class_counts)
        info = SplitInfo(
            shards=tuple(ordered),
            records=sum(s.records for s in ordered),
            bytes=sum(s.bytes for s in ordered),
            class_counts=dict(sorted(class_counts.items(), key=lambda kv: int(kv[0]))),
        )
        splits[split] = info
    listed = [dict(s) for s in skipped]
    if base is not None:
        listed = [*(dict(s) for s in base.skipped),
                  *({**s, "append": str(part)} for s in listed)][:SKIPPED_LISTED]
        skipped_count += base.skipped_count
    manifest = Manifest(
        schema=schema, splits=splits, layout=options.layout, compression=options.compression,
        label_feature=label_feature, skipped=tuple(listed), skipped_count=skipped_count,
        created_by={**dict(created_by or {}), "seed": options.seed, "shuffle": options.shuffle},
    )
    manifest.write(out, storage=storage, replaces=base_version)  # last: the dataset is complete
    return manifest
