"""``ShardedWriter``: encoded records in, a finished dataset directory out.

The protocol (shared by every engine):

1. *Plan* — each record's stable key is hashed with the seed into a uniform 64-bit ``h``.
   ``h`` orders the records (the write-time shuffle) and so decides their shard.
2. *Spill* — records are held in memory up to a budget (:func:`hold_budget`); past it, they
   are appended to a bounded number of bucket files in a staging folder (by ``h`` for the
   mixed layout, by class for per-class), each with a small binary index.
3. *Write shards* — once totals are known, the shard count follows from the target size;
   buckets are read in ``h`` order and each shard is written by :func:`write_shard` under a
   temporary name, then renamed. Past the budget, memory holds one bucket's index, never the
   records.
4. *Finalize* — ``dataset.json`` is written last, atomically.

A killed run leaves no manifest, so nothing reads a partial dataset as complete; running again
reuses a completed spill on disk (step 2) or starts cleanly.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from tfrecordkit.errors import DatasetError, OptionError
from tfrecordkit.format import (
    LOCAL,
    EncodedFrames,
    Storage,
    compiled_codec,
    frame_record,
    gather_spans,
)
from tfrecordkit.schema import SOURCE_FEATURE, Schema
from tfrecordkit.store._digests import RECORD_IDS, frame_ids
from tfrecordkit.store._lock import STAGING, OutputLock
from tfrecordkit.store._manifest import MANIFEST_NAME, Manifest, ShardInfo, check_split_name
from tfrecordkit.store._naming import is_shard_file
from tfrecordkit.store._options import DEFAULT_SHARD_SIZE, ShardOptions, record_hash
from tfrecordkit.store._shard import (
    _UNLABELLED,
    _ShardFile,
    _SplitStream,
    write_shard,
)
from tfrecordkit.store._sidecar import is_sidecar_name
from tfrecordkit.store._write_plan import (
    ShardSpec,
    Tally,
    finalize_manifest,
    plan_split,
)

__all__ = [
    "DEFAULT_SHARD_SIZE",
    "ShardOptions",
    "ShardedWriter",
    "output_lock",
    "prepare_output",
    "record_hash",
    "remove_shards",
    "write_shard",
]

logger = logging.getLogger(__name__)

_BUCKETS = 64
_BUCKET_SHIFT = 58  # top 6 bits of h pick the bucket, so buckets are in h order
_ENTRY = np.dtype([("h", "<u8"), ("label", "<i8"), ("length", "<u8"), ("key", "<u8"),
                   ("content", "V16")])
_BUCKET_IN_MEMORY = 256 << 20  # larger buckets are read from the file a run at a time
_GATHER = 4 << 20  # bytes of frames gathered per write when writing shards
HOLD_ENV = "TFRECORDKIT_SHUFFLE_MEMORY"
_HOLD_DEFAULT = 256 << 20


def hold_budget() -> int:
    """Bytes of records a conversion that must see every record before writing (a
    write-time shuffle of records given in order, fixed shard counts, per-class shards)
    holds in memory before spilling them to disk: ``TFRECORDKIT_SHUFFLE_MEMORY``, else
    256 MiB or an eighth of the machine's memory, the smaller."""
    value = os.environ.get(HOLD_ENV)
    if value is not None:
        try:
            return max(0, int(value))
        except ValueError:
            raise OptionError(f"{HOLD_ENV}={value!r}: give a number of bytes") from None
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return _HOLD_DEFAULT
    return min(_HOLD_DEFAULT, memory // 8)


class _Held:
    """Records held in memory: frames back to back in one buffer of the budget's size
    (touched as it fills; copied in without the GIL, so staging overlaps encoding), with
    each split's spill entries and frame offsets, in input order."""

    def __init__(self, budget: int) -> None:
        self.buffer = np.empty(budget, dtype=np.uint8)
        self.used = 0
        self.splits: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}

    def fits(self, nbytes: int) -> bool:
        return self.used + nbytes <= len(self.buffer)

    def add(self, split: str, frames: bytes | memoryview, entries: np.ndarray) -> None:
        n = len(frames)
        self.buffer[self.used : self.used + n] = np.frombuffer(frames, dtype=np.uint8)
        offsets = np.empty(len(entries), dtype=np.int64)
        offsets[0:1] = self.used
        np.cumsum(entries["length"][:-1], out=offsets[1:])
        offsets[1:] += self.used
        self.used += n
        held = self.splits.setdefault(split, ([], []))
        held[0].append(entries)
        held[1].append(offsets)

    def split(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """A split's spill entries and their frames' offsets in :attr:`buffer`."""
        held = self.splits.get(name)
        if held is None:
            return None
        return np.concatenate(held[0]), np.concatenate(held[1])


class ShardedWriter:
    """Writes encoded records into a dataset directory of shards plus ``dataset.json``.

    Use as a context manager: on an exception the staging folder is removed and no manifest
    is written. ``finish()`` writes the shards and the manifest and returns the manifest.

    Args:
        out_dir: the dataset directory (created if needed).
        schema: the records' schema (stored in the manifest).
        options: shard layout options.
        label_feature: the class-label feature (needed by the per-class layout).
        overwrite: replace an existing dataset; otherwise its presence is an error.
        plan_id: identifies the conversion (source, schema, options); a rerun with the same
            ``plan_id`` resumes from a completed spill.
        created_by: provenance stored in the manifest.
        storage_options: for a URL ``out_dir`` (``s3://``, ``gs://``, ...), passed to fsspec.
        presorted: records are added in the write-time shuffle's order already (a source
            read in shuffled order): they go straight into shards cut by size.
        append_to: the manifest of the dataset in ``out_dir`` to add the records to (new
            shards, named with the append's ``part`` tag, :func:`append_tag`; its shards are
            kept as they are).
        part: see ``append_to``.
        lock_held: the caller holds the output's :class:`OutputLock` (an append takes it
            before it reads the manifest) and releases it; the writer takes none.

    A URL ``out_dir`` is staged in a local folder (``TFRECORDKIT_STAGING``, else the system
    temp dir, one folder per URL, so a rerun on the same machine resumes); each shard is
    uploaded whole once complete, and ``dataset.json`` last.
    """

    def __init__(
        self,
        out_dir: str | os.PathLike[str],
        schema: Schema,
        options: ShardOptions | None = None,
        *,
        label_feature: str | None = None,
        overwrite: bool = False,
        plan_id: str = "",
        created_by: dict[str, Any] | None = None,
        storage_options: dict[str, Any] | None = None,
        presorted: bool = False,
        append_to: Manifest | None = None,
        part: str = "",
        lock_held: bool = False,
    ) -> None:
        self.storage = Storage.of(out_dir, storage_options)
        self.base = append_to
        self.part = part
        self.target = os.fspath(out_dir)  # where the dataset goes (a path or a URL)
        # Local work happens in the output folder itself, or in a local stand-in for a URL.
        self.out_dir = Path(out_dir) if self.storage.local else _local_stand_in(self.target)
        self._uploads: list[Future[None]] = []
        self._uploader = (None if self.storage.local else
                          ThreadPoolExecutor(2, thread_name_prefix="tfrecordkit-upload"))
        self.schema = schema
        self.options = options or ShardOptions()
        self.label_feature = label_feature
        self.plan_id = plan_id
        self.presorted = presorted
        self.created_by = dict(created_by or {})
        if self.options.layout == "per_class" and label_feature is None:
            raise DatasetError("the per-class layout needs a class-label feature")
        _make_folder(self.out_dir)
        self._lock = None if lock_held else OutputLock(self.out_dir)
        if self._lock is not None:
            self._lock.acquire()  # before anything in the directory is touched
        try:
            self._prepare(overwrite)
        except BaseException:
            self._release()
            raise

    def _prepare(self, overwrite: bool) -> None:
        if self.base is None:
            prepare_output(self.target, self.storage, overwrite=overwrite)
        self._split_names: set[str] = set()  # checked
        self._staging = self.out_dir / STAGING
        self._spill_dir = self._staging / "spill"
        self._done_marker = self._spill_dir / "done.json"
        self.resumed = self._can_resume()
        if not self.resumed:
            self._remove_stale_shards()
            shutil.rmtree(self._staging, ignore_errors=True)
            self._spill_dir.mkdir(parents=True)
        self._handles: dict[tuple[str, int], tuple[BinaryIO, BinaryIO]] = {}
        self._streams: dict[str, _SplitStream] = {}
        # Without a shuffle left to do (none, or records already come in shuffled order:
        # ``presorted``) or a fixed shard count, records go straight into their shards.
        self.streaming = not self.resumed and self.options.streams(self.presorted)
        # Records of a conversion that must see them all first are held in memory up to the
        # budget (no spill written and read back), then spilled.
        self._budget = hold_budget()
        self._held: _Held | None = (_Held(self._budget) if not self.resumed
                                    and not self.streaming and self._budget > 0 else None)
        self.tally = Tally()  # what is staged: totals, inputs left out
        self._sequence = 0
        if self.resumed:
            self._load_spill_summary()

    # -- phase 1: spill ---------------------------------------------------------------------

    def _can_resume(self) -> bool:
        if not self._done_marker.exists():
            return False
        try:
            summary = json.loads(self._done_marker.read_text())
        except (OSError, json.JSONDecodeError):
            return False
        # A spill from before the tally kept its image observations is not resumed: its
        # manifest would lose the schema the images described (the run starts afresh).
        return (bool(self.plan_id) and summary.get("plan_id") == self.plan_id
                and "observed" in summary)

    def add(self, key: str, data: bytes, *, split: str = "train", label: int | None = None) -> None:
        """Stage one serialized record under its stable ``key``."""
        self.add_frame(key, frame_record(data), split=split, label=label)

    def add_frame(self, key: str, frame: bytes, *, split: str = "train",
                  label: int | None = None, h: int | None = None) -> None:
        """Stage one framed record (see :func:`frame_record`), with its order hash if known."""
        self.add_frames(EncodedFrames(bytes(frame), np.array([len(frame)], dtype=np.int64)),
                        splits=split, labels=[label], keys=[key],
                        hashes=None if h is None else [h])

    def add_frames(self, frames: EncodedFrames, *, splits: str | Sequence[str] = "train",
                   labels: Sequence[int | None] | None = None,
                   hashes: Sequence[int] | None = None, keys: Sequence[str] = (),
                   ids: np.ndarray | None = None) -> None:
        """Stage a batch of framed records (see :meth:`Schema.encode_frames`), with each
        record's split, class id, order hash and :data:`RECORD_IDS` (computed from ``keys``
        when not given)."""
        if self.resumed:
            raise DatasetError("this conversion resumes from a completed spill; call finish()")
        n = len(frames)
        if n == 0:
            return
        self._check_splits(splits)
        lengths = frames.lengths
        if ids is None:
            named = list(keys) if keys else [str(self._sequence + i) for i in range(n)]
            ids = frame_ids(named, frames.buffer, frames.offsets, lengths,
                            provenance=SOURCE_FEATURE in self.schema)
        label_ids = self._label_ids(labels, keys, n)
        groups = _members(splits, n)
        view = memoryview(frames.buffer)
        if self.streaming:
            self._stream_frames(view, lengths, label_ids, groups, frames.offsets, ids)
            self._sequence += n
            return
        h = self._order_hashes(n, hashes, keys)
        self._sequence += n
        entries = np.empty(n, dtype=_ENTRY)
        entries["h"], entries["label"], entries["length"] = h, label_ids, lengths
        entries["key"], entries["content"] = ids["key"], ids["content"]
        offsets = frames.offsets
        if self._held is not None and self._held.fits(int(lengths.sum())):
            self._hold(view, offsets, entries, groups)
        else:
            self._spill_held()
            self._spill(view, offsets, entries, groups)
        for split, members in groups.items():
            rows = np.array(members, dtype=np.int64)
            self.tally.count(split, lengths[rows].astype(np.int64), label_ids[rows])

    def _hold(self, view: memoryview, offsets: np.ndarray, entries: np.ndarray,
              groups: dict[str, list[int]]) -> None:
        """Keep records in memory, split by split, in input order."""
        assert self._held is not None
        lengths = entries["length"]
        for split, members in groups.items():
            if len(members) == len(entries):
                self._held.add(split, view[: int(lengths.sum())], entries)
            else:
                rows = np.array(members, dtype=np.int64)
                self._held.add(split, b"".join([view[o : o + size] for o, size in zip(
                    offsets[rows].tolist(), lengths[rows].tolist(), strict=True)]),
                               entries[rows])

    def _spill_held(self) -> None:
        """Write the records held in memory to the spill (the budget is reached)."""
        if self._held is None:
            return
        held, self._held = self._held, None
        view = held.buffer.data
        for split in held.splits:
            entries, offsets = held.split(split)  # type: ignore[misc]
            self._spill(view, offsets, entries, {split: list(range(len(entries)))})

    def _check_splits(self, splits: str | Sequence[str]) -> None:
        for split in {splits} if isinstance(splits, str) else set(splits):
            if split not in self._split_names:
                check_split_name(split)
                self._split_names.add(split)

    def _label_ids(self, labels: Sequence[int | None] | None, keys: Sequence[str], n: int
                   ) -> np.ndarray:
        """Each record's class id, -1 for none (refused by the per-class layout)."""
        label_ids = np.full(n, _UNLABELLED, dtype=np.int64)
        if labels is not None:
            missing = [i for i, label in enumerate(labels) if label is None]
            if missing and self.options.layout == "per_class":
                key = keys[missing[0]] if keys else missing[0]
                raise DatasetError(f"record {key!r} has no class label (per-class layout)")
            label_ids[:] = [_UNLABELLED if label is None else label for label in labels]
        return label_ids

    def _order_hashes(self, n: int, hashes: Sequence[int] | None, keys: Sequence[str]
                      ) -> np.ndarray:
        """Each record's place in the write order: its hash, or its input position."""
        if not self.options.shuffle:
            return np.arange(self._sequence, self._sequence + n, dtype=np.uint64)
        if hashes is not None:
            return np.array(hashes, dtype=np.uint64)
        return np.array([record_hash(k, self.options.seed) for k in keys], dtype=np.uint64)

    def _spill(self, view: memoryview, offsets: np.ndarray, entries: np.ndarray,
               groups: dict[str, list[int]]) -> None:
        """Append records to their buckets' files (data and index), split by split."""
        h, label_ids, lengths = entries["h"], entries["label"], entries["length"]
        if self.options.layout == "per_class":
            bucket = label_ids % _BUCKETS
        elif self.options.shuffle:
            bucket = (h >> np.uint64(_BUCKET_SHIFT)).astype(np.int64)
        else:
            bucket = np.minimum(h >> np.uint64(18), _BUCKETS - 1).astype(np.int64)
        for split, members in groups.items():
            rows = np.array(members, dtype=np.int64)
            # Stable: records of one bucket keep their input order.
            rows = rows[np.argsort(bucket[rows], kind="stable")]
            cuts = np.flatnonzero(np.diff(bucket[rows])) + 1
            for run in np.split(rows, cuts):
                data_file, index_file = self._bucket(split, int(bucket[run[0]]))
                data_file.write(b"".join([view[o : o + size] for o, size in zip(
                    offsets[run].tolist(), lengths[run].tolist(), strict=True)]))
                index_file.write(entries[run].tobytes())

    def _stream_frames(self, view: memoryview, lengths: np.ndarray, label_ids: np.ndarray,  # noqa: PLR0917
                       groups: dict[str, list[int]], offsets: np.ndarray,
                       ids: np.ndarray) -> None:
        for split, members in groups.items():
            stream = self._streams.get(split)
            if stream is None:
                stream = self._streams[split] = _SplitStream(self._staging, split, self.options,
                                                             self.part)
            rows = np.array(members, dtype=np.int64)
            if len(members) == len(lengths):
                stream.write(view, lengths, label_ids, ids)
            else:  # records of several splits: gather this split's frames
                data = b"".join([view[o : o + size] for o, size in zip(
                    offsets[rows].tolist(), lengths[rows].tolist(), strict=True)])
                stream.write(memoryview(data), lengths[rows], label_ids[rows], ids[rows])
            self.tally.count(split, lengths[rows], label_ids[rows])

    def skip(self, input_name: str, reason: str) -> None:
        """Record an input that was left out, with why (listed in the manifest)."""
        self.tally.skip(input_name, reason)

    def _bucket(self, split: str, bucket: int) -> tuple[BinaryIO, BinaryIO]:
        handles = self._handles.get((split, bucket))
        if handles is None:
            folder = self._spill_dir / split
            folder.mkdir(exist_ok=True)
            handles = (
                open(folder / f"{bucket:03d}.data", "wb", buffering=1 << 20),  # noqa: SIM115
                open(folder / f"{bucket:03d}.idx", "wb", buffering=1 << 16),  # noqa: SIM115
            )
            self._handles[(split, bucket)] = handles
        return handles

    def _close_spill(self) -> None:
        for data_file, index_file in self._handles.values():
            data_file.close()
            index_file.close()
        self._handles.clear()

    def _write_spill_summary(self) -> None:
        summary = {"plan_id": self.plan_id, "schema": self.schema.to_json(),
                   **self.tally.to_json()}
        tmp = self._done_marker.with_suffix(".tmp")
        tmp.write_text(json.dumps(summary))
        os.replace(tmp, self._done_marker)

    def _check_spill(self) -> None:
        """Every spill bucket's data file holds the bytes its index lists (the index is a
        claim: a file cut short, by a full disk or a copy, is refused before any shard is
        written).

        Raises:
            DatasetError: naming the file.
        """
        for split in self.tally.totals:
            for index_path in sorted((self._spill_dir / split).glob("*.idx")):
                data_path = index_path.with_suffix(".data")
                need = int(np.fromfile(index_path, dtype=_ENTRY)["length"].sum())
                size = data_path.stat().st_size if data_path.exists() else 0
                if size < need:
                    raise DatasetError(f"{data_path}: the spill holds {size} bytes where its "
                                       f"index lists {need}; remove {self._staging} and "
                                       "convert again")

    def _load_spill_summary(self) -> None:
        summary = json.loads(self._done_marker.read_text())
        self.schema = Schema.from_json(summary["schema"])
        self.tally = Tally.from_json(summary)

    # -- phase 2: shards --------------------------------------------------------------------

    def _sorted_buckets(self, split: str
                        ) -> Iterator[tuple[int, np.ndarray, memoryview | _OpenSpill]]:
        """Yield ``(bucket, entries sorted by h (with offsets), its data)`` in bucket order
        (records held in memory: one bucket of them all)."""
        if self._held is not None:
            held = self._held.split(split)
            if held is not None:
                yield 0, _sorted_table(*held), self._held.buffer.data
            return
        folder = self._spill_dir / split
        for bucket in range(_BUCKETS):
            index_path = folder / f"{bucket:03d}.idx"
            if not index_path.exists():
                continue
            entries = np.fromfile(index_path, dtype=_ENTRY)
            offsets = np.zeros(len(entries), dtype=np.int64)
            np.cumsum(entries["length"][:-1], out=offsets[1:])
            table = _sorted_table(entries, offsets)
            data_path = folder / f"{bucket:03d}.data"
            if data_path.stat().st_size <= _BUCKET_IN_MEMORY:
                yield bucket, table, memoryview(data_path.read_bytes())
            else:
                fd = os.open(data_path, os.O_RDONLY)
                try:
                    yield bucket, table, _OpenSpill(fd, data_path)
                finally:
                    os.close(fd)

    @staticmethod
    def _gathered(rows: np.ndarray, data: memoryview | _OpenSpill
                  ) -> Iterator[tuple[memoryview, np.ndarray, np.ndarray, np.ndarray]]:
        """The frames of ``rows`` (table rows) in order, gathered into runs of a few MiB:
        ``(frames back to back, their lengths, their class ids, their RECORD_IDS)``. The
        frames lie in one buffer reused for every run: a run is valid until the next is
        asked for (the shard writer writes each at once)."""
        lengths = rows["length"]
        ends = np.cumsum(lengths)
        start = 0
        buffer = np.empty(0, dtype=np.uint8)  # reused: its pages are touched once
        while start < len(rows):
            base = int(ends[start - 1]) if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, base + _GATHER, side="right")))
            run = rows[start:stop]
            size = int(ends[stop - 1]) - base
            if len(buffer) < size:
                buffer = np.empty(max(size, _GATHER), dtype=np.uint8)
            if isinstance(data, memoryview):
                joined = gather_spans(data, run["offset"], run["length"], buffer)
            else:
                joined = _read_spans(data, run["offset"], run["length"], buffer)
            ids = np.empty(len(run), dtype=RECORD_IDS)
            ids["key"], ids["content"] = run["key"], run["content"]
            yield joined, run["length"], run["label"], ids
            start = stop

    def _write_rows(self, rows: np.ndarray, data: memoryview | _OpenSpill,
                    shard: _ShardFile) -> None:
        for frames, lengths, labels, ids in self._gathered(rows, data):
            shard.write_frames(frames, lengths, labels, ids)

    def _finish_shard(self, shard: _ShardFile, name: str) -> ShardInfo:
        """Close a shard into the output folder (and start its upload, for a URL)."""
        info = shard.finish(self.out_dir, name)
        if self._uploader is not None:
            files = [name, *(f for f in (info.index, info.restarts, info.digests) if f)]
            for file in reversed(files):  # sidecars first: a shard is never without them
                self._uploads.append(self._uploader.submit(
                    self.storage.put_file, self.out_dir / file,
                    self.storage.join(self.target, file)))
            self._check_uploads()
        return info

    def _check_uploads(self, wait: bool = False) -> None:
        """Raise the first failed upload; with ``wait``, wait for all of them."""
        pending = []
        for upload in self._uploads:
            if wait or upload.done():
                upload.result()
            else:
                pending.append(upload)
        self._uploads = pending

    def _new_shard(self, name: str) -> _ShardFile:
        return _ShardFile(self._staging, name, compression=self.options.compression,
                          index=self.options.index)

    def _plan(self, split: str) -> list[ShardSpec]:
        return plan_split(split, self.tally.totals[split], self.options, self.part)

    def _write_mixed_split(self, split: str, specs: Sequence[ShardSpec],
                           progress: Callable[[int], None]) -> list[ShardInfo]:
        shards: list[ShardInfo] = []
        shard = self._new_shard(specs[0].name)
        position = 0  # in the split's h order
        for _, table, data in self._sorted_buckets(split):
            at = 0
            while at < len(table):
                while position == specs[len(shards)].stop:  # the current shard is full
                    shards.append(self._finish_shard(shard, specs[len(shards)].name))
                    shard = self._new_shard(specs[len(shards)].name)
                take = min(len(table) - at, specs[len(shards)].stop - position)
                self._write_rows(table[at : at + take], data, shard)
                at += take
                position += take
                progress(take)
        shards.append(self._finish_shard(shard, specs[len(shards)].name))
        while len(shards) < len(specs):  # shards left empty by rounding
            name = specs[len(shards)].name
            shards.append(self._finish_shard(self._new_shard(name), name))
        return shards

    def _write_per_class_split(
        self, split: str, specs: Sequence[ShardSpec], progress: Callable[[int], None]
    ) -> list[ShardInfo]:
        by_class: dict[int, list[ShardSpec]] = {}
        for spec in specs:
            by_class.setdefault(spec.class_id or 0, []).append(spec)
        shards = []
        for _, table, data in self._sorted_buckets(split):
            # Group by class keeping the h order inside each class (stable sort).
            grouped = table[np.argsort(table["label"], kind="stable")]
            labels, starts = np.unique(grouped["label"], return_index=True)
            ends = [*starts[1:].tolist(), len(grouped)]
            for label, first, last in zip(labels.tolist(), starts.tolist(), ends, strict=True):
                rows = grouped[first:last]
                specs = by_class[label]
                origin = specs[0].start  # the class's first position in the split's order
                for spec in specs:
                    shard = self._new_shard(spec.name)
                    self._write_rows(rows[spec.start - origin : spec.stop - origin], data, shard)
                    info = self._finish_shard(shard, spec.name)
                    shards.append(ShardInfo(**{**info.__dict__, "class_id": label}))
                    progress(spec.stop - spec.start)
        return sorted(shards, key=lambda s: (s.class_id, s.file))

    def plan(self) -> dict[str, list[ShardSpec] | None]:
        """Each split's shards as :func:`plan_split` cuts them from the tally (``None`` for a
        split whose records went into shards cut by size as they came: :attr:`streaming`)."""
        return {split: None if self.streaming else self._plan(split)
                for split in sorted(self.tally.totals)}

    def write_shards(self, plans: Mapping[str, Sequence[ShardSpec] | None],
                     progress: Callable[[int], None] | None = None
                     ) -> dict[str, list[ShardInfo]]:
        """Write each split's shards as ``plans`` (see :meth:`plan`) lays them out, and wait
        for their uploads; the manifest is the caller's (:meth:`finish` writes it)."""
        tick = progress or (lambda n: None)
        if not self.resumed and not self.streaming and self._held is None:
            self._close_spill()
            self._write_spill_summary()
        if not self.streaming and self._held is None:
            self._check_spill()
        written: dict[str, list[ShardInfo]] = {}
        for split, specs in sorted(plans.items()):
            if specs is None:
                written[split] = self._streams[split].finish(self._finish_shard)
                tick(self.tally.totals[split].records)
            elif self.options.layout == "per_class":
                written[split] = self._write_per_class_split(split, specs, tick)
            else:
                written[split] = self._write_mixed_split(split, specs, tick)
        self._check_uploads(wait=True)
        if self._uploader is not None:
            self._uploader.shutdown(wait=True)
        return written

    def finish(self, progress: Callable[[int], None] | None = None) -> Manifest:
        """Write every shard, then the manifest; return the manifest."""
        written = self.write_shards(self.plan(), progress)
        manifest = finalize_manifest(
            self.target, written, schema=self.schema, options=self.options,
            label_feature=self.label_feature, skipped=self.tally.skipped,
            skipped_count=self.tally.skipped_count, created_by=self.created_by,
            expected=self.tally.expected, storage=self.storage, base=self.base)
        self.close()
        return manifest

    def close(self) -> None:
        """Remove the staging folder and release the output (after the manifest is written)."""
        shutil.rmtree(self._staging, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.release()

    def abort(self) -> None:
        """Drop staged work (no manifest is written)."""
        self._close_spill()
        for stream in self._streams.values():
            for shard in [*stream.done, *([stream.current] if stream.current else [])]:
                shard.close()
        self._streams.clear()
        if self._uploader is not None:
            for upload in self._uploads:
                upload.cancel()
            self._uploader.shutdown(wait=True)
        shutil.rmtree(self._staging, ignore_errors=True)
        self._release()

    def __enter__(self) -> ShardedWriter:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is not None:
            self.abort()
        self._release()

    # -- housekeeping -----------------------------------------------------------------------

    def _remove_stale_shards(self) -> None:
        """Remove shard files (and indexes) a killed or previous run left, and nothing else
        (when appending, nothing the dataset lists). Under the lock nobody else writes the
        local folder; in a bucket, where no lock spans machines, an append removes nothing:
        an unlisted shard there may be another machine's append under way."""
        listed = listed_files(self.base) if self.base is not None else set()
        remove_shards(os.fspath(self.out_dir), LOCAL, keep=listed,
                      sidecars=self.base is None)
        if not self.storage.local and self.base is None:
            remove_shards(self.target, self.storage)



def _sorted_table(entries: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Spill entries in input order and their frames' offsets, as a table sorted by h; ties
    in h (equal keys) keep their input order."""
    order = np.argsort(entries["h"], kind="stable")
    table = np.empty(len(entries), dtype=[("label", "<i8"), ("offset", "<i8"),
                                          ("length", "<i8"), ("key", "<u8"),
                                          ("content", "V16")])
    table["label"] = entries["label"][order]
    table["key"] = entries["key"][order]
    table["content"] = entries["content"][order]
    table["offset"] = offsets[order]
    table["length"] = entries["length"][order]
    return table


def _members(splits: str | Sequence[str], n: int) -> dict[str, list[int]]:
    """The positions of each split's records among ``n``."""
    if isinstance(splits, str):
        return {splits: list(range(n))}
    groups: dict[str, list[int]] = {}
    for i, split in enumerate(splits):
        groups.setdefault(split, []).append(i)
    return groups


def output_lock(target: str, storage: Storage) -> OutputLock:
    """The one-writer lock of the dataset at ``target`` (not yet taken): on its folder, or
    for a URL on its local stand-in (which orders the writers of one machine; writers on
    several machines are ordered by the manifest's conditional write alone)."""
    folder = Path(target) if storage.local else _local_stand_in(target)
    _make_folder(folder)
    return OutputLock(folder)


def _local_stand_in(url: str) -> Path:
    """The local folder where a conversion to ``url`` stages its work (stable per URL)."""
    root = os.environ.get("TFRECORDKIT_STAGING") or tempfile.gettempdir()
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return Path(root) / f"tfrecordkit-{digest}"


class _OpenSpill(NamedTuple):
    """A spill bucket's data file, open for reading."""

    fd: int
    path: Path


def _read_spans(file: _OpenSpill, offsets: np.ndarray, lengths: np.ndarray, out: np.ndarray
                ) -> memoryview:
    """The spans ``[offsets[i], offsets[i] + lengths[i])`` of ``file`` read back to back into
    ``out`` (in one compiled call without the GIL, else a ``pread`` each): the part of ``out``
    they fill.

    Raises:
        DatasetError: the file ends before a span does (naming it).
    """
    fd = file.fd
    offsets = np.ascontiguousarray(offsets, np.int64)
    lengths = np.ascontiguousarray(lengths, np.int64)
    total = int(lengths.sum())
    read = getattr(compiled_codec(), "read_spans", None)
    if read is not None:
        bases = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=bases[1:])
        short = read(np.full(len(lengths), fd, np.int64), offsets, lengths, bases, out)
    else:
        view, at, short = out.data, 0, -1
        for i, (o, n) in enumerate(zip(offsets.tolist(), lengths.tolist(), strict=True)):
            part = os.pread(fd, n, o)
            if len(part) < n:
                short = i
                break
            view[at : at + n] = part
            at += n
    if short >= 0:
        raise DatasetError(f"{file.path}: the spill file ends inside the record at byte "
                           f"{int(offsets[short])}; remove the staging folder and convert "
                           "again")
    return out.data[:total]


def _make_folder(path: Path) -> None:
    """``path`` made a folder (with its parents), or a one-line error saying why not.

    Raises:
        DatasetError: it, or a parent, is a file.
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise DatasetError(f"{path}: the output must be a folder, and it or a folder above it "
                           "is a file") from None


def prepare_output(target: str, storage: Storage, *, overwrite: bool) -> None:
    """Make ``target`` ready for a new dataset, for every engine: writable (checked now, not
    at the first upload); a dataset there refused, or with ``overwrite`` its manifest removed
    first (no reader ever sees it pointing at missing shards), then its shards and sidecars."""
    if not storage.local:
        storage.check_writable_root(target)
    else:
        _make_folder(Path(target))
    if storage.exists(storage.join(target, MANIFEST_NAME)):
        if not overwrite:
            raise DatasetError(f"{target} already holds a dataset; pass overwrite=True "
                               "(--overwrite) to replace it")
        storage.remove(storage.join(target, MANIFEST_NAME))
        remove_shards(target, storage)


def remove_shards(folder: str, storage: Storage, keep: set[str] | frozenset[str] = frozenset(),
                  *, sidecars: bool = True) -> None:
    """Remove the shard files and their sidecars (indexes, restart points, digests) in
    ``folder`` that a killed or previous run left, and the manifest's sidecars (unless
    ``sidecars`` is False), and nothing else (nor any file in ``keep``)."""
    for name in storage.listdir(folder):
        if name not in keep and (is_shard_file(name) or (sidecars and is_sidecar_name(name))):
            storage.remove(storage.join(folder, name))


def listed_files(manifest: Manifest) -> set[str]:
    """Every file a manifest lists: shards and their sidecars (and the manifest's own)."""
    files = {MANIFEST_NAME}
    for split in manifest.splits.values():
        for shard in split.shards:
            files.update(f for f in (shard.file, shard.index, shard.restarts, shard.digests)
                         if f)
    return files
