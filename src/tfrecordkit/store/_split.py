"""Random access to every record of a split, by its position in the split."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfrecordkit.errors import DatasetError, OutOfRangeError
from tfrecordkit.format import (
    SNAPSHOT_EVERY,
    RecordSlices,
    Restarts,
    Storage,
    check_index_frames,
    index_path_for,
    parse_index,
    parse_restarts,
    restarts_path_for,
    scan_offsets,
)
from tfrecordkit.schema import Schema
from tfrecordkit.store._expression import (
    SplitArg,
    SplitPart,
    is_expression,
    resolve_split,
    split_text,
)
from tfrecordkit.store._fetch import RecordFetcher
from tfrecordkit.store._load import load_manifest
from tfrecordkit.store._manifest import (
    MANIFEST_NAME,
    Manifest,
    ShardInfo,
    shard_paths,
)

__all__ = ["SplitLocations", "SplitRecords", "joined_locations", "open_split", "split_locations",
           "split_parts"]


_INDEXES_AT_ONCE = 64
_BLOCK = 64  # EpochOrder's default block


@dataclass(frozen=True)
class SplitLocations:
    """Where every record of a split is: ``files``, and per record (in shard order) its
    file's number, frame offset and frame length; plus each shard's manifest entry and
    ``shard_class``, each file's class (per-class layout; -1 for none). For compressed
    files, offsets are in the decompressed stream and ``restarts`` says where inflating
    can begin."""

    files: tuple[str, ...]
    shard: np.ndarray  # int32
    offset: np.ndarray  # int64
    length: np.ndarray  # int64
    shards: tuple[ShardInfo, ...]
    restarts: Restarts | None = None
    shard_class: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        classes = [-1 if s.class_id is None else s.class_id for s in self.shards]
        object.__setattr__(self, "shard_class", np.array(
            classes or [-1] * len(self.files), dtype=np.int64))


def split_locations(path: str | os.PathLike[str], manifest: Manifest,
                    split: str, *, storage: Storage | None = None,
                    checked: bool = False) -> SplitLocations:
    """The record locations of a split, from each shard's ``.index`` (or one scan), after
    checking the shards against the manifest: present, the right size, the right count
    (``checked``: present and sized as the manifest says was checked just now, by
    :func:`shard_paths`; an object store is then not listed again).
    Compressed shards also get their restart points (``.restarts``; else only the start:
    reads then inflate from the start, or from a state kept by an earlier read).

    ``split`` may be an expression (``"train[:10%]+val"``, see :func:`resolve_split`): its
    parts' records, in order.

    Raises:
        DatasetError: a shard is missing, resized, or holds another number of records; an
            expression names an unknown split or a slice beyond one.
    """
    storage = storage or Storage.of(path)
    split = split_text(split)
    if is_expression(split, manifest.splits):
        parts = split_parts(manifest, split)
        # Each split located once, however many parts take from it (train[:10%]+train[-5:]).
        located = {name: split_locations(path, manifest, name, storage=storage,
                                         checked=checked)
                   for name in dict.fromkeys(part.split for part in parts)}
        return joined_locations([(part, located[part.split]) for part in parts],
                                manifest.compression)
    compressed = manifest.compression is not None
    files, infos, shard_ids, offsets, lengths = [], [], [], [], []
    points: list[np.ndarray] = []
    shards = ([(storage.join(path, info.file), info) for info in manifest.split(split).shards]
              if checked else shard_paths(path, manifest, split, storage=storage))
    sidecars: dict[str, bytes | None] = {}
    for number, (file, info) in enumerate(shards):
        if index_path_for(file) not in sidecars:
            # The next indexes (and restart points) in one go (concurrent requests on object
            # stores).
            group = 1 if storage.local else _INDEXES_AT_ONCE
            sidecars = storage.read_many([
                name for f, i in shards[number : number + group]
                for name in (index_path_for(f), *([restarts_path_for(f)] if i.restarts
                                                  else []))])
        table = _shard_table(file, info, sidecars, storage, compressed)
        if compressed:
            points.append(_restart_points(file, info, sidecars))
        files.append(file)
        infos.append(info)
        shard_ids.append(np.full(len(table), number, dtype=np.int32))
        offsets.append(table[:, 0])
        lengths.append(table[:, 1])
    if not files:
        raise DatasetError(f"{os.fspath(path)}: split {split!r} has no shards")
    return SplitLocations(tuple(files), np.concatenate(shard_ids), np.concatenate(offsets),
                          np.concatenate(lengths), tuple(infos),
                          Restarts(manifest.compression, tuple(points))
                          if manifest.compression is not None else None)


def _shard_table(file: str, info: ShardInfo, sidecars: dict[str, bytes | None],
                 storage: Storage, compressed: bool) -> np.ndarray:
    """A shard's ``(offset, length)`` per record, from its index among ``sidecars`` (or one
    scan), checked against the file and the manifest's count.

    Raises:
        DatasetError: the shard holds another number of records than the manifest says.
    """
    index_file = index_path_for(file)
    text = sidecars[index_file] if info.index or not compressed else None
    # A compressed shard's index holds decompressed offsets: no file size to check.
    table = (parse_index(text, index_file, record_path=file,
                         record_size=None if compressed else info.bytes, stream=compressed)
             if text is not None else scan_offsets(file, storage=storage))
    if not compressed and text is not None and storage.local:  # remotely, reads check frames
        check_index_frames(table, index_file, file, storage)
    if len(table) != info.records:
        raise DatasetError(f"{file}: {len(table)} records on disk (by "
                           f"{'its index' if text is not None else 'a scan'}), "
                           f"{MANIFEST_NAME} says {info.records}")
    return table


def split_parts(manifest: Manifest, split: SplitArg) -> tuple[SplitPart, ...]:
    """The parts a split expression reads in a dataset (see :func:`resolve_split`)."""
    return resolve_split(split, {name: info.records for name, info in manifest.splits.items()})


def joined_locations(parts: Sequence[tuple[SplitPart, SplitLocations]],
                     compression: str | None) -> SplitLocations:
    """Each part's records of its split's locations, one after another (a split named twice
    lists its files twice: positions stay distinct)."""
    files: list[str] = []
    infos: list[ShardInfo] = []
    shard_ids, offsets, lengths = [], [], []
    points: list[np.ndarray] = []
    for part, where in parts:
        cut = slice(part.start, part.stop)
        shard_ids.append(where.shard[cut].astype(np.int32) + len(files))
        offsets.append(where.offset[cut])
        lengths.append(where.length[cut])
        files.extend(where.files)
        infos.extend(where.shards)
        if where.restarts is not None:
            points.extend(where.restarts.points)
    return SplitLocations(tuple(files), np.concatenate(shard_ids), np.concatenate(offsets),
                          np.concatenate(lengths), tuple(infos),
                          Restarts(compression, tuple(points)) if compression is not None
                          else None)


def _restart_points(file: str, info: ShardInfo, sidecars: dict[str, bytes | None]
                    ) -> np.ndarray:
    """A compressed shard's restart points (only its start when it lists none), from the
    sidecars read."""
    if info.restarts is None:
        return np.zeros((1, 2), dtype=np.int64)
    sidecar = restarts_path_for(file)
    text = sidecars.get(sidecar)
    if text is None:
        raise DatasetError(f"{sidecar}: missing ({MANIFEST_NAME} lists it)")
    return parse_restarts(text, sidecar, compressed_size=info.bytes)


class SplitRecords(Sequence[bytes]):
    """The serialized records of one split, addressable by position ``0 .. len - 1``.

    Position ``i`` is the ``i``-th record of the split's shards in manifest order. Reads are
    CRC-checked, at most ``max_open_files`` files are open at once, any number of threads may
    read at the same time, and the object pickles (files reopen in the new process).
    Locations cost 20 bytes per record; records are never held.
    """

    def __init__(self, path: str | os.PathLike[str], split: SplitArg = "train", *,
                 max_open_files: int | None = None, manifest: Manifest | None = None,
                 locations: SplitLocations | None = None,
                 storage_options: dict[str, Any] | None = None,
                 storage: Storage | None = None) -> None:
        self.path = os.fspath(path)
        self.split = split = split_text(split)
        self.storage = storage or Storage.of(self.path, storage_options)
        if locations is None:
            self.manifest: Manifest | None = manifest or load_manifest(
                self.path, storage=self.storage)
            where = split_locations(self.path, self.manifest, split, storage=self.storage)
        else:  # files without a manifest (located by the caller)
            self.manifest, where = manifest, locations
        self.files: tuple[str, ...] = where.files
        self.shard, self.offset, self.length = where.shard, where.offset, where.length
        self.restarts = where.restarts
        self._shard_class = where.shard_class
        self.max_open_files = max_open_files
        # The fetcher holds the locations, not this object: no cycle keeps a dropped split's
        # files open until the garbage collector runs.
        self._fetcher = RecordFetcher(where, max_open_files, storage=self.storage)

    @property
    def stamps(self) -> np.ndarray | None:
        """The local files' identities when the split was opened (see
        :func:`~tfrecordkit.store._fetch.file_stamps`; None: remote files)."""
        return self._fetcher.stamps

    @property
    def schema(self) -> Schema:
        """The dataset's schema (to decode what this returns).

        Raises:
            DatasetError: these are files without a manifest, so without a schema.
        """
        if self.manifest is None:
            raise DatasetError(f"{self.path}: files without {MANIFEST_NAME} have no schema")
        return self.manifest.schema

    def __len__(self) -> int:
        return len(self.shard)

    def __getitem__(self, i: int) -> bytes:  # type: ignore[override]
        if not isinstance(i, int | np.integer):
            raise TypeError(f"record positions are ints; got {type(i).__name__}")
        n = len(self)
        if not -n <= i < n:
            raise OutOfRangeError(f"{self.path} [{self.split}]: record {i} out of range ({n})")
        self._check_open()
        return self._fetcher.fetch_one(int(i) % n)

    def get_many(self, ids: Iterable[int] | np.ndarray) -> list[bytes]:
        """The records at positions ``ids`` (in that order; read in file order)."""
        positions = self._positions(ids)
        self._check_open()
        return self._fetcher.fetch(positions)

    def get_slices(self, ids: Iterable[int] | np.ndarray) -> RecordSlices | list[bytes]:
        """:meth:`get_many`, as ``RecordSlices`` of one buffer when the shards are local and
        uncompressed (``Schema.decode_batch`` and the columnar codec read those in place)."""
        positions = self._positions(ids)
        self._check_open()
        return self._fetcher.fetch_slices(positions)

    def _positions(self, ids: Iterable[int] | np.ndarray) -> np.ndarray:
        """``ids`` as positions in ``0 .. len - 1`` (negative ones count from the end).

        Raises:
            TypeError: an id that is not an integer (a float, a string, a bool).
            OutOfRangeError: an id outside ``-len .. len - 1``.
        """
        given = ids if isinstance(ids, np.ndarray) else np.asarray(
            ids if isinstance(ids, list | tuple | range) else list(ids))
        n = len(self)
        if given.dtype.kind not in "i" and given.size:
            self._check_unusual(given, n)
        positions = given.astype(np.int64).reshape(-1)
        if positions.size and (positions.min() < -n or positions.max() >= n):
            bad = positions[(positions < -n) | (positions >= n)][0]
            raise OutOfRangeError(f"{self.path} [{self.split}]: record {bad} out of range ({n})")
        return positions % n if n else positions

    def _check_unusual(self, given: np.ndarray, n: int) -> None:
        """Refuse ids that are not integers, and unsigned or Python ints beyond int64 or
        outside ``-n .. n - 1`` (before a cast to int64 would wrap them)."""
        if given.dtype.kind != "u":
            values = given.reshape(-1).tolist()
            bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int)]
            if bad or given.dtype.kind != "O":
                shown = bad[0] if bad else values[0]
                raise TypeError(f"record positions are ints; got {shown!r} "
                                f"({type(shown).__name__})")
        too_big = ([int(given.max())] if given.dtype.kind == "u" and given.max() >= n
                   else [] if given.dtype.kind == "u"
                   else [v for v in given.reshape(-1).tolist() if not -n <= v < n])
        if too_big:
            raise OutOfRangeError(f"{self.path} [{self.split}]: record {too_big[0]} out "
                                  f"of range ({n})")

    @property
    def read_block(self) -> int:
        """How many consecutive records are best read together: the block a block shuffle
        moves (64); for compressed shards, about the records between two restart points
        (or between the inflater states kept every few MiB), so that a shuffled epoch
        inflates each part of a file about once."""
        if self.restarts is None or not len(self):
            return _BLOCK
        intervals = 0
        ends = np.zeros(len(self.files), dtype=np.int64)
        np.maximum.at(ends, self.shard, self.offset + self.length)
        for points, end in zip(self.restarts.points, ends.tolist(), strict=True):
            intervals += len(points) if len(points) > 1 else -(-end // SNAPSHOT_EVERY)
        return int(np.clip(len(self) // max(1, intervals), _BLOCK, 1 << 16))

    def shard_classes(self, ids: Iterable[int] | np.ndarray) -> np.ndarray:
        """The class of the shard holding each record at positions ``ids`` (per-class
        layout; -1 where a shard has no class): the value of a label taken from the shard
        (``ClassLabel(from_shard=True)``), e.g. for ``schema.decode(record, shard_class=...)``.
        """
        positions = np.asarray(ids, dtype=np.int64).reshape(-1)
        return self._shard_class[self.shard[positions]]  # type: ignore[no-any-return]

    def where(self, i: int) -> str:
        """Record ``i`` named for error messages: its position, file and byte offset."""
        return (f"{i} [{self.split}] (byte {int(self.offset[i])} of "
                f"{self.files[int(self.shard[i])]})")

    def __iter__(self) -> Iterator[bytes]:
        for start in range(0, len(self), 256):
            yield from self.get_many(range(start, min(start + 256, len(self))))

    def close(self) -> None:
        """Close the files kept open; a read after this raises (a read under way when it is
        called finishes on its own file first)."""
        self._closed = True
        self._fetcher.close()

    def _check_open(self) -> None:
        if self.__dict__.get("_closed"):
            raise DatasetError(f"{self.path} [{self.split}]: read after close()")

    def __repr__(self) -> str:
        return f"SplitRecords({self.path!r}, split={self.split!r}, records={len(self)})"


def open_split(path: str | os.PathLike[str], split: SplitArg = "train", *,
               max_open_files: int | None = None,
               storage_options: dict[str, Any] | None = None) -> SplitRecords:
    """Random access to the serialized records of one split of a dataset directory:
    ``len()``, ``[i]`` and ``get_many(ids)``; decode them with ``.schema.decode``. ``split``
    may be an expression: ``"train+val"``, ``"train[:10%]"``, ``"train[-1000:]"``, or a
    list of them (see :func:`~tfrecordkit.store.resolve_split`).

    Raises:
        DatasetError: the manifest disagrees with the files (missing, resized, wrong count).
    """
    return SplitRecords(path, split, max_open_files=max_open_files,
                        storage_options=storage_options)
