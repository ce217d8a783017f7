"""Random reads inside GZIP/ZLIB record files: restart points (where inflating can begin
afresh, written as full flushes and listed in a ``.restarts`` sidecar), and an inflater that
serves byte ranges of a file's decompressed stream from the nearest one.

A file without restart points (any gzip file TensorFlow or TFX wrote) can still be read at
any position: inflating starts at the file's beginning, and the decompressor's state is kept
every few MiB on the way (in memory, never on disk), so later reads start close by.
"""

from __future__ import annotations

import os
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tfrecordkit.errors import CorruptRecordError, DatasetError
from tfrecordkit.format._compression import MemberInflater, ReadAt
from tfrecordkit.format._filesystem import PathLike, Storage

__all__ = ["RESTARTS_SUFFIX", "SNAPSHOT_EVERY", "Inflater", "Restarts", "load_restarts",
           "parse_restarts", "restarts_path_for"]

RESTARTS_SUFFIX = ".restarts"

_OUT_PIECE = 1 << 20  # decompressed bytes produced per step
_AHEAD = 64 << 10  # decompressed bytes inflated ahead of a read (up to the next restart point)
SNAPSHOT_EVERY = 4 << 20  # decompressed bytes between kept states (files without points)
_SNAPSHOTS_PER_FILE = 64
_CURSORS_PER_FILE = 16
_KEEP_BYTES = 128 << 20  # decompressed bytes kept for later reads, per Inflater
_HEADER_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "zlib": zlib.MAX_WBITS}
_FLUSH_MARK = b"\x00\x00\xff\xff"



def restarts_path_for(path: PathLike) -> str:
    """The restart-point sidecar of a compressed record file: ``<path>.restarts``."""
    return os.fspath(path) + RESTARTS_SUFFIX


def parse_restarts(text: bytes, path: PathLike, *, compressed_size: int | None = None
                   ) -> np.ndarray:
    """A ``.restarts`` file's bytes (``compressed_offset decompressed_offset`` lines) as an
    ``(k, 2)`` int64 array starting with the stream's own start ``(0, 0)``.

    Raises:
        DatasetError: not such a file, offsets out of order or past the file's end.
    """
    path = os.fspath(path)
    try:
        values = np.array(text.split(), dtype=np.int64)
    except (ValueError, OverflowError) as err:
        raise DatasetError(f"{path}: not a restart-point file ({err})") from None
    if values.size % 2:
        raise DatasetError(f"{path}: odd number of values; expected 'compressed decompressed' "
                           "offset lines")
    points = np.concatenate([np.zeros((1, 2), dtype=np.int64), values.reshape(-1, 2)])
    if (np.diff(points, axis=0) <= 0).any():
        raise DatasetError(f"{path}: restart points must increase in both offsets")
    if compressed_size is not None and int(points[-1, 0]) >= max(compressed_size, 1):
        raise DatasetError(f"{path}: a restart point lies past the end of its file "
                           f"({int(points[-1, 0])} >= {compressed_size} bytes)")
    return points


def load_restarts(record_path: PathLike, storage: Storage) -> np.ndarray | None:
    """The restart points of a compressed record file from its sidecar (None if it has none)."""
    sidecar = restarts_path_for(record_path)
    text = storage.read_many([sidecar])[sidecar]
    if text is None:
        return None
    return parse_restarts(text, sidecar, compressed_size=storage.size(os.fspath(record_path)))


@dataclass(frozen=True)
class Restarts:
    """How a set of compressed files is read at random positions: their ``compression`` and,
    per file, its restart points (``(k, 2)``: compressed offset, decompressed offset; the
    first row ``(0, 0)`` is the stream's start).

    Restart points are claims of a sidecar: each is checked against the stream before it is
    first used (see :meth:`Inflater.check_point`)."""

    compression: str
    points: tuple[np.ndarray, ...]


def _inflated_length(read_at: ReadAt, start: int, end: int | None, limit: int,
                     wbits: int = -zlib.MAX_WBITS) -> int:
    """Bytes a deflate stream (raw, or with the header ``wbits`` says) gives from compressed
    offset ``start`` to ``end`` (None: to the end of its last block), counting no more than
    ``limit`` + 1.

    Raises:
        zlib.error: not a deflate stream there.
    """
    inflater = zlib.decompressobj(wbits)
    produced, at = 0, start
    while (end is None or at < end) and not inflater.eof and produced <= limit:
        size = 1 << 18 if end is None else min(1 << 18, end - at)
        data = read_at(at, size)
        if not data:
            break
        at += len(data)
        produced += len(inflater.decompress(data, limit + 1 - produced))
        while inflater.unconsumed_tail and produced <= limit:
            produced += len(inflater.decompress(inflater.unconsumed_tail, limit + 1 - produced))
    if produced <= limit and not inflater.unconsumed_tail:
        produced += len(inflater.flush())
    return produced


class _Cursor(MemberInflater):
    """An inflater part way through one file: ``u`` is the decompressed offset of its next
    byte, ``c`` the compressed offset of the next byte to read, ``kept`` the decompressed
    bytes ``[kept_from, u)`` held for reads that come back to them."""

    __slots__ = ("kept", "kept_from", "u")

    def __init__(self, compression: str, c: int, u: int, *, raw: bool) -> None:
        super().__init__(compression, c, raw=raw)  # type: ignore[arg-type]
        self.u = u
        self.kept = bytearray()
        self.kept_from = u

    def copy(self) -> _Cursor:
        """The same inflating state, holding no bytes."""
        twin = _Cursor.__new__(_Cursor)
        self.copy_state(twin)
        twin.u, twin.kept, twin.kept_from = self.u, bytearray(), self.u
        return twin


class Inflater:
    """Byte ranges of compressed files' decompressed streams, read from the nearest restart
    point (or from a state kept in memory by an earlier read), with the bytes of recent
    reads kept so that reads moving through a window of the stream inflate it once.

    ``inflated`` counts the decompressed bytes produced. Safe to share between threads
    (one file is inflated by one thread at a time).
    """

    def __init__(self, restarts: Restarts, paths: Sequence[str], *,
                 keep_bytes: int = _KEEP_BYTES) -> None:
        self.restarts = restarts
        self.paths = tuple(paths)
        self.keep_bytes = keep_bytes
        self.inflated = 0
        self._locks = [threading.Lock() for _ in self.paths]
        self._cursors: list[list[_Cursor]] = [[] for _ in self.paths]
        self._snapshots: list[list[_Cursor]] = [[] for _ in self.paths]
        self._snapshot_every = [SNAPSHOT_EVERY] * len(self.paths)
        self._lru: dict[int, tuple[int, _Cursor]] = {}  # id -> (file, cursor), oldest first
        self._lru_lock = threading.Lock()
        self._confirmed = [1] * len(self.paths)  # leading restart points checked, per file

    def check_point(self, file: int, row: int, read_at: ReadAt) -> None:
        """Check restart points ``1 .. row`` of file ``file`` against the stream, each from the
        one before it (the stream's start is the first): inflating from a point's compressed
        offset to the next point's must give exactly the bytes between their decompressed
        offsets, so a point moved by as little as one record (or every point moved alike) is
        refused. Points are checked once; a read at any point costs, the first time, one
        inflate pass up to it.

        Raises:
            CorruptRecordError: check ``"restart point"``, naming the file, the point's
                decompressed offset and the sidecar (the point or the stream is damaged).
        """
        points = self.restarts.points[file]
        while self._confirmed[file] <= row:
            k = self._confirmed[file]  # confirm point k from point k - 1
            c, u = int(points[k - 1, 0]), int(points[k - 1, 1])
            end, expected = int(points[k, 0]), int(points[k, 1]) - u
            wbits = -zlib.MAX_WBITS if c else _HEADER_WBITS[self.restarts.compression]
            try:
                found = _inflated_length(read_at, c, end, expected, wbits)
                problem = None if found == expected else (
                    f"inflating from point {k - 1} up to it gives "
                    f"{'more than ' if found > expected else ''}{min(found, expected)} bytes, "
                    f"where the offsets say {expected}")
            except zlib.error as err:
                problem = f"no deflate stream between it and point {k - 1} ({err})"
            # A full flush ends with an empty stored block: its lengths 0000 FFFF end
            # right where inflating can begin afresh.
            if problem is None and read_at(end - 4, 4) != _FLUSH_MARK:
                problem = "no full flush ends there"
            if problem is not None:
                path = self.paths[file]
                raise CorruptRecordError(
                    path, int(points[k, 1]), -1, "restart point",
                    f"point {k} of {restarts_path_for(path)} (compressed {end}): {problem}; "
                    "the stream or its restart points are damaged (without the sidecar, "
                    "reads inflate from the start)")
            self._confirmed[file] = k + 1

    def read(self, file: int, ranges: Sequence[tuple[int, int]], read_at: ReadAt,
             chunk: int = 1 << 18) -> list[bytes]:
        """The decompressed bytes ``[start, end)`` of file number ``file`` for each range
        (shorter where the stream ends first).

        Raises:
            CorruptRecordError: the compressed stream is damaged.
        """
        out: list[bytes] = [b""] * len(ranges)
        with self._locks[file]:
            cursor: _Cursor | None = None
            for k in sorted(range(len(ranges)), key=lambda k: ranges[k][0]):
                start, end = ranges[k]
                if cursor is None or not cursor.kept_from <= start <= cursor.u:
                    cursor = self._cursor_for(file, start, read_at)
                if cursor.u < end:
                    # Inflate a little ahead (not past the next restart point): the next
                    # records are likely wanted next, and zlib costs per call.
                    points = self.restarts.points[file][:, 1]
                    after = int(np.searchsorted(points, start, side="right"))
                    limit = int(points[after]) if after < len(points) else end + _AHEAD
                    target = max(end, min(cursor.u + _AHEAD, limit))
                    try:
                        self._advance(file, cursor, start, target, read_at=read_at,
                                      chunk=chunk)
                    except zlib.error as err:
                        self._drop(file, cursor)
                        raise CorruptRecordError(
                            self.paths[file], start, -1, "bad compressed stream",
                            f"{self.restarts.compression} data near compressed byte "
                            f"{cursor.c}: {err}") from None
                at = start - cursor.kept_from
                out[k] = bytes(cursor.kept[at : at + end - start])
            self._trim(file, cursor)
        return out

    def _cursor_for(self, file: int, start: int, read_at: ReadAt) -> _Cursor:
        """A cursor at or before ``start`` holding it or able to reach it the soonest (a
        restart point is checked before its first use)."""
        cursors = self._cursors[file]
        for cursor in cursors:
            if cursor.kept_from <= start <= cursor.u:
                return cursor
        points = self.restarts.points[file]
        row = int(np.searchsorted(points[:, 1], start, side="right")) - 1
        best_u = int(points[row, 1])
        snapshot = None
        for kept in self._snapshots[file]:  # sorted by u
            if kept.u > start:
                break
            if kept.u > best_u:
                snapshot, best_u = kept, kept.u
        ahead = [c for c in cursors if best_u <= c.u <= start]
        if ahead:
            return max(ahead, key=lambda c: c.u)
        if snapshot is not None:
            cursor = snapshot.copy()
        else:
            self.check_point(file, row, read_at)
            c = int(points[row, 0])
            cursor = _Cursor(self.restarts.compression, c, best_u, raw=c > 0)
        cursors.append(cursor)
        if len(cursors) > _CURSORS_PER_FILE:
            self._drop(file, cursors[0])
        with self._lru_lock:
            self._lru[id(cursor)] = (file, cursor)
        return cursor

    def _advance(self, file: int, cursor: _Cursor, start: int, end: int, *,
                 read_at: ReadAt, chunk: int) -> None:
        """Inflate until ``end`` (or the stream's end); the bytes from ``start`` on stay
        kept, and as many before it as the per-file share of ``keep_bytes`` allows."""
        cap = self.keep_bytes // 4
        while cursor.u < end:
            out = cursor.step(read_at, chunk, min(_OUT_PIECE, end - cursor.u))
            if not out:
                break
            self.inflated += len(out)
            cursor.u += len(out)
            cursor.kept += out
            excess = min(len(cursor.kept) - cap, start - cursor.kept_from)
            if excess > 0:
                del cursor.kept[:excess]
                cursor.kept_from += excess
            self._maybe_snapshot(file, cursor)

    def _maybe_snapshot(self, file: int, cursor: _Cursor) -> None:
        """Keep the inflating state every few MiB where no restart point is near."""
        points = self.restarts.points[file]
        row = int(np.searchsorted(points[:, 1], cursor.u, side="right")) - 1
        last = int(points[row, 1])
        snapshots = self._snapshots[file]
        earlier = [s.u for s in snapshots if s.u <= cursor.u]
        last = max([last, *earlier])
        if cursor.u - last < self._snapshot_every[file] or cursor.done:
            return
        snapshots.append(cursor.copy())
        snapshots.sort(key=lambda s: s.u)
        if len(snapshots) > _SNAPSHOTS_PER_FILE:  # thin them out: memory stays bounded
            self._snapshots[file] = snapshots[1::2]
            self._snapshot_every[file] *= 2

    def _drop(self, file: int, cursor: _Cursor) -> None:
        cursors = self._cursors[file]
        if cursor in cursors:
            cursors.remove(cursor)
        with self._lru_lock:
            self._lru.pop(id(cursor), None)

    def _trim(self, file: int, using: _Cursor | None) -> None:
        """Forget the bytes of the least recently made cursors while more than
        ``keep_bytes`` are kept (those of files another thread is reading are left)."""
        with self._lru_lock:
            total = sum(len(c.kept) for _, c in self._lru.values())
            for other, cursor in list(self._lru.values()):
                if total <= self.keep_bytes:
                    break
                if cursor is using or (other != file
                                       and not self._locks[other].acquire(blocking=False)):
                    continue
                try:
                    total -= len(cursor.kept)
                    cursor.kept, cursor.kept_from = bytearray(), cursor.u
                finally:
                    if other != file:
                        self._locks[other].release()
