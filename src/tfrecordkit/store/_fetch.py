"""Fetching records by location with a bounded number of open files, from any thread."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from tfrecordkit.errors import CorruptRecordError, DatasetError, OptionError, StorageError
from tfrecordkit.format import (
    LOCAL,
    MERGE_GAP,
    READ_BLOCK,
    Inflater,
    RecordSlices,
    Storage,
    compiled_codec,
    frame_slices,
    split_frames,
)

#: Local reads: records this close (bytes between them) are read together, in one span.
LOCAL_MERGE_GAP = 16 << 10

__all__ = ["REPLACED", "RecordFetcher", "RecordLocations", "check_file_stamp", "file_stamps",
           "open_file_budget"]

_CACHE_BYTES = 64 << 20  # remote spans kept per fetcher
_SHARDS_AT_ONCE = 32  # files held open by one compiled call reading spans (within the budget)
#: Remote files read in order: blocks requested ahead of the one being used.
AHEAD_BLOCKS = 2
_INFLATE_CHUNK = {True: 256 << 10, False: 4 << 20}  # compressed bytes read a step: local, remote


#: What a file is when a reader finds it is not the one it was opened over (after its path;
#: tf.data's compiled frame reader says the same).
REPLACED = "replaced or rewritten since the dataset was opened"


def file_stamps(files: Sequence[str]) -> np.ndarray:
    """Each local file's identity now, ``[n, 3]`` int64: its inode, size and modification
    time in ns (a dataset written again at the same path may reuse the inode numbers and
    sizes: the time tells). A file not there gets -1s and is not checked."""
    out = np.full((len(files), 3), -1, np.int64)
    for i, path in enumerate(files):
        with contextlib.suppress(OSError):
            out[i] = _stamp(os.stat(path))
    return out


def check_file_stamp(path: str, stamp: np.ndarray) -> None:
    """Raise if the local file at ``path`` is not the one ``stamp`` (a row of
    :func:`file_stamps`) was taken of: deleted, replaced or rewritten since.

    Raises:
        DatasetError: naming the file and what changed.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DatasetError(f"{path}: deleted since the dataset was opened: open the dataset "
                           "again to read what is there now") from None
    if stamp[0] != -1 and _stamp(st) != tuple(stamp.tolist()):
        raise _replaced(path)


def _replaced(path: str) -> DatasetError:
    return DatasetError(f"{path}: {REPLACED} (another inode, size or modification time): "
                        "open the dataset again to read it")


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    ino = st.st_ino - (1 << 64) if st.st_ino >= 1 << 63 else st.st_ino  # as int64 holds it
    return ino, st.st_size, st.st_mtime_ns


class RecordLocations(Protocol):
    """Where records are: ``files`` and, per record, its file's number, offset and length."""

    @property
    def files(self) -> tuple[str, ...]: ...
    @property
    def shard(self) -> np.ndarray: ...
    @property
    def offset(self) -> np.ndarray: ...
    @property
    def length(self) -> np.ndarray: ...


def _pread(fd: int, at: int, size: int) -> bytes:
    return os.pread(fd, size, at)


def _read_remote(storage: Storage, path: str, at: int, size: int) -> bytes:
    """Like ``os.pread``: at or past the object's end, nothing (a store refuses the range)."""
    try:
        return storage.read_spans([(path, at, at + size)])[0]
    except StorageError:
        if at >= storage.size(path):
            return b""
        raise


def _where(path: str, offsets: np.ndarray) -> Callable[[int], tuple[str, int]]:
    """Names frame ``k`` of a span starting at ``offsets[0]`` for ``split_frames``."""
    return lambda k: (path, int(offsets[k]))


def open_file_budget() -> int:
    """Files one reader keeps open by default: an eighth of the process's open-file limit,
    between 64 and 1,024 (P×K over hundreds of class files reopens fewer of them; DataLoader
    workers each have their own)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):  # no such limit here (Windows)
        return 64
    if soft == resource.RLIM_INFINITY:
        return 1024
    return int(min(1024, max(64, soft // 8)))


#: Every fetcher of this process, reset in a forked child (see ``RecordFetcher._forked``).
_LIVE: weakref.WeakSet[RecordFetcher] = weakref.WeakSet()


def _after_fork() -> None:
    for fetcher in list(_LIVE):
        fetcher._forked()


os.register_at_fork(after_in_child=_after_fork)


class RecordFetcher:
    """Reads records at given positions of a :class:`RecordLocations` (a
    :class:`~tfrecordkit.sampling.ClassIndex` or a split), both CRCs checked.

    At most ``max_open_files`` files are open at once (least recently used are closed; a file
    another thread is reading stays open until it is done), so 10,000 class files never mean
    10,000 descriptors (None: an eighth of the process's open-file limit, 64 to 1,024).
    Reads within a call go in file order. Safe to share between threads. Local files are
    the ones there when it was made (``stamps``, see :func:`file_stamps`): one replaced or
    rewritten since is refused when opened, with :class:`DatasetError` naming it, never read
    at the locations of the one indexed.
    """

    def __init__(self, index: RecordLocations, max_open_files: int | None = None, *,
                 storage: Storage | None = None, stamps: np.ndarray | None = None) -> None:
        if max_open_files is None:
            max_open_files = open_file_budget()
        if max_open_files < 1:
            raise OptionError(f"max_open_files must be positive; got {max_open_files}")
        self.index = index
        self.storage = storage or (Storage.of(index.files[0]) if index.files else LOCAL)
        self.max_open_files = max_open_files
        #: The local files' identities when the reader was made (None: remote files).
        self.stamps = (stamps if stamps is not None or not self.storage.local
                       else file_stamps(index.files))
        self._open: OrderedDict[int, int] = OrderedDict()  # shard -> fd, idle ones evictable
        self._users: dict[int, int] = {}  # shard -> threads reading it now
        self._closing: set[int] = set()  # closed while being read: closed on release
        self._lock = threading.Lock()
        self.peak_open_files = 0
        # Remote files: spans fetched lately, by file; bounded by _CACHE_BYTES.
        self._blocks: dict[int, list[tuple[int, bytes]]] = {}
        self._order: list[tuple[int, int, int]] = []
        self._cached_bytes = 0
        self._ends: np.ndarray | None = None
        # Compressed files: offsets are in the decompressed streams, read by inflating.
        # Made on the first read (an index being unpickled has no attributes yet).
        self._inflater: Inflater | bool | None = False
        self._read_record: Any = False  # the codec's one-record read (None: not here)
        # Remote files read in order: the next block requested on a thread while this one is
        # used. (shard, start, end) -> its request; blocks read ahead not yet used -> end.
        self._io: ThreadPoolExecutor | None = None
        self._dropped = False
        self._planning = threading.Lock()
        self._inflight: dict[tuple[int, int, int], Future[bytes]] = {}
        self._unused: dict[tuple[int, int], int] = {}
        _LIVE.add(self)

    def _forked(self) -> None:
        """In a forked child (a DataLoader worker inheriting an opened loader): the parent's
        threads are gone, so its read-ahead pool, the requests in flight on it and the locks
        they may have held are dropped; open files and fetched blocks stay usable."""
        self._lock, self._planning = threading.Lock(), threading.Lock()
        self._io, self._inflight, self._unused = None, {}, {}
        self._users, self._closing = {}, set()

    def _acquire(self, shard: int) -> int:
        with self._lock:
            fd = self._open.get(shard)
            if fd is None:
                fd = self._opened(shard)
                self._open[shard] = fd
            self._open.move_to_end(shard)
            self._closing.discard(shard)  # read again after close(): kept open again
            self._users[shard] = self._users.get(shard, 0) + 1
            while len(self._open) > self.max_open_files:  # close the idlest idle file
                old = next((s for s in self._open if not self._users.get(s)), None)
                if old is None:  # every open file is being read: over the limit a while
                    break
                os.close(self._open.pop(old))
            self.peak_open_files = max(self.peak_open_files, len(self._open))
            return fd

    def _opened(self, shard: int) -> int:
        """File ``shard`` opened, if it is the file the reader was made over."""
        path = self.index.files[shard]
        fd = os.open(path, os.O_RDONLY)
        if self.stamps is None or self.stamps[shard, 0] == -1:
            return fd
        if _stamp(os.fstat(fd)) != tuple(self.stamps[shard].tolist()):
            os.close(fd)
            raise _replaced(path)
        return fd

    def _release(self, shard: int) -> None:
        with self._lock:
            self._users[shard] -= 1
            if not self._users[shard] and shard in self._closing:
                # closed while this thread read it: closed now that nobody reads it (an fd
                # closed mid-read could be reused by another open and serve its bytes)
                self._closing.discard(shard)
                os.close(self._open.pop(shard))

    def fetch_one(self, position: int) -> bytes:
        """The record at ``position``, checked as :meth:`fetch` checks it: from a local
        uncompressed file, one read into the bytes returned (no batch machinery)."""
        read_record = self._read_record
        if read_record is False:
            read_record = self._read_record = self._one_read()
        if read_record is None:
            return self.fetch(np.array([position]))[0]
        index = self.index
        shard = index.shard.item(position)
        offset, length = index.offset.item(position), index.length.item(position)
        fd = self._acquire(shard)
        try:
            record = read_record(fd, offset, length)
        finally:
            self._release(shard)
        if record is None:  # something is wrong: the batch path says what, and where
            return self.fetch(np.array([position]))[0]
        return record  # type: ignore[no-any-return]

    def _one_read(self) -> Any:
        """The codec's single-record read, where it applies (local, uncompressed files)."""
        if not self.storage.local or getattr(self.index, "restarts", None) is not None:
            return None
        return getattr(compiled_codec(), "read_record", None)

    def fetch(self, positions: np.ndarray) -> list[bytes]:
        """The records at ``positions`` (in that order).

        Raises:
            CorruptRecordError: a record fails its checks; it names the file, the byte offset
                and the record's index in its file.
        """
        try:
            return self._fetch(positions)
        except CorruptRecordError as err:
            raise self._with_index(err) from None

    def _with_index(self, err: CorruptRecordError) -> CorruptRecordError:
        """``err`` naming the record's index in its file too (reads by offset know only the
        offset; the index is counted once something is wrong)."""
        files = self.index.files
        if err.index >= 0 or err.path not in files:
            return err
        shard = files.index(err.path)
        offsets = self.index.offset[self.index.shard == shard]
        index = int(np.count_nonzero(offsets < err.offset))
        return CorruptRecordError(err.path, err.offset, index, err.check, err.detail)

    def _fetch(self, positions: np.ndarray) -> list[bytes]:
        index = self.index
        shards, offsets = index.shard[positions], index.offset[positions]
        lengths = index.length[positions]
        if self._inflater is False:
            with self._lock:
                if self._inflater is False:
                    restarts = getattr(index, "restarts", None)
                    self._inflater = (Inflater(restarts, index.files) if restarts is not None
                                      else None)
        if self._inflater is not None:
            return self._fetch_inflated(self._inflater, shards, offsets,  # type: ignore[arg-type]
                                        lengths)
        if not self.storage.local:
            return self._fetch_remote(shards, offsets, lengths)
        order, buffer, at, lengths, shards, offsets = self._read_local(shards, offsets, lengths)
        records = split_frames(buffer, at, lengths, where=lambda k: (
            index.files[int(shards[k])], int(offsets[k])))
        out: list[bytes] = [b""] * len(positions)
        for target, record in zip(order.tolist(), records, strict=True):
            out[target] = record
        return out

    def fetch_slices(self, positions: np.ndarray) -> RecordSlices | list[bytes]:
        """The records at ``positions`` (in that order), as :meth:`fetch` reads and checks
        them; from local uncompressed files, as ``RecordSlices`` of the one buffer read (the
        columnar codec then reads them where they lie, no ``bytes`` per record)."""
        if not self.storage.local or getattr(self.index, "restarts", None) is not None:
            return self.fetch(positions)
        try:
            return self._fetch_slices(positions)
        except CorruptRecordError as err:
            raise self._with_index(err) from None

    def _fetch_slices(self, positions: np.ndarray) -> RecordSlices:
        index = self.index
        order, buffer, at, lengths, shards, offsets = self._read_local(
            index.shard[positions], index.offset[positions], index.length[positions],
            joined=False)
        found = frame_slices(buffer, at, lengths, where=lambda k: (
            index.files[int(shards[k])], int(offsets[k])))
        starts = np.empty(len(order), np.int64)
        sizes = np.empty(len(order), np.int64)
        starts[order], sizes[order] = found.offsets, found.lengths  # back in the asked order
        return RecordSlices(buffer, starts, sizes)

    def _read_local(self, shards: np.ndarray, offsets: np.ndarray, lengths: np.ndarray,
                    joined: bool = True) -> tuple[np.ndarray, Any, np.ndarray, np.ndarray,
                                                  np.ndarray, np.ndarray]:
        """Local reads in file order: records close together in one file (a shuffled
        block's) read in one span. Returns the order read (indices into the arguments), the
        bytes read back to back (``bytes``; ``joined=False``: several spans are read
        straight into one uint8 array, not joined afterwards), each frame's start there, and
        the frames' lengths, files and offsets in that order."""
        index = self.index
        order = np.lexsort((offsets, shards))
        shards, offsets, lengths = shards[order], offsets[order], lengths[order]
        gaps = offsets - np.concatenate([[0], offsets[:-1] + lengths[:-1]])
        firsts = np.flatnonzero((np.diff(shards, prepend=-1) != 0) | (gaps > LOCAL_MERGE_GAP))
        begins = offsets[firsts]
        ends = np.maximum.reduceat(offsets + lengths, firsts) if len(firsts) else begins
        members = np.diff(firsts, append=len(offsets))
        bases = np.cumsum(ends - begins) - (ends - begins)  # each span's place
        into = None if joined or len(firsts) < 2 else np.empty(int((ends - begins).sum()),
                                                                np.uint8)
        view = None if into is None else into.data
        # Into one buffer: every span in compiled calls, up to any span cut short (which
        # the loop below reads again, and names if it is still short).
        done = 0 if into is None else self._read_spans(shards[firsts], begins, ends, bases,
                                                       into)
        chunks: list[bytes] = []
        current = -1
        fd = -1
        try:
            for first, count, shard, begin, end, base in zip(
                    firsts[done:].tolist(), members[done:].tolist(),
                    shards[firsts[done:]].tolist(), begins[done:].tolist(),
                    ends[done:].tolist(), bases[done:].tolist(), strict=True):
                if shard != current:
                    if current >= 0:
                        self._release(current)
                        current = -1
                    fd, current = self._acquire(shard), shard
                if view is not None and os.preadv(fd, [view[base : base + end - begin]],
                                                  begin) == end - begin:
                    continue
                chunk = os.pread(fd, end - begin, begin)
                if len(chunk) != end - begin:  # shorter than its index says: name the frame
                    split_frames(chunk, offsets[first : first + count] - begin,
                                 lengths[first : first + count],
                                 where=_where(index.files[shard], offsets[first:]))
                if view is not None:  # a short read ahead, then a whole one: it grew
                    view[base : base + len(chunk)] = chunk
                else:
                    chunks.append(chunk)
        finally:
            if current >= 0:
                self._release(current)
        at = offsets - np.repeat(begins - bases, members)
        if into is not None:
            return order, into, at, lengths, shards, offsets
        buffer = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        return order, buffer, at, lengths, shards, offsets

    def _read_spans(self, shards: np.ndarray, begins: np.ndarray, ends: np.ndarray,
                    bases: np.ndarray, into: np.ndarray) -> int:
        """Read spans ``[begins, ends)`` of ``shards`` (sorted by shard) to ``into[bases:]``
        through the compiled codec, a few files at a time, each group in one call without
        the GIL; returns how many spans, in order, were read whole (0 without the codec)."""
        read_spans = getattr(compiled_codec(), "read_spans", None)
        if read_spans is None:
            return 0
        n = len(shards)
        starts = np.flatnonzero(np.diff(shards, prepend=-1) != 0).tolist()  # each file's first
        group = max(1, min(_SHARDS_AT_ONCE, self.max_open_files))  # files open at once
        for g in range(0, len(starts), group):
            lo = starts[g]
            hi = starts[g + group] if g + group < len(starts) else n
            files = shards[starts[g : g + group]].tolist()
            fds: list[int] = []
            try:
                for shard in files:
                    fds.append(self._acquire(shard))
                counts = np.diff([*starts[g : g + group], hi])
                short = read_spans(np.repeat(np.asarray(fds, np.int64), counts),
                                   *(np.ascontiguousarray(a, np.int64) for a in (
                                       begins[lo:hi], ends[lo:hi] - begins[lo:hi],
                                       bases[lo:hi])), into)
            finally:
                for shard in files[: len(fds)]:
                    self._release(shard)
            if short >= 0:
                return lo + int(short)
        return n

    def _fetch_inflated(self, inflater: Inflater, shards: np.ndarray, offsets: np.ndarray,
                        lengths: np.ndarray) -> list[bytes]:
        """Records of compressed files: each file's ranges inflated from the nearest restart
        point (or a kept state), in one pass per file and call."""
        files = self.index.files
        out: list[bytes] = [b""] * len(shards)
        local = self.storage.local
        for shard in np.unique(shards).tolist():
            members = np.flatnonzero(shards == shard)
            ranges = [(int(o), int(o + n)) for o, n in
                      zip(offsets[members].tolist(), lengths[members].tolist(), strict=True)]
            if local:
                fd = self._acquire(shard)
                try:
                    blobs = inflater.read(shard, ranges, functools.partial(_pread, fd),
                                          _INFLATE_CHUNK[True])
                finally:
                    self._release(shard)
            else:
                blobs = inflater.read(shard, ranges, functools.partial(
                    _read_remote, self.storage, files[shard]), _INFLATE_CHUNK[False])
            starts = np.concatenate([[0], np.cumsum([len(b) for b in blobs[:-1]])])
            found = split_frames(b"".join(blobs), starts, lengths[members],
                                 where=_where(files[shard], offsets[members]))
            for i, record in zip(members.tolist(), found, strict=True):
                out[i] = record
        return out

    def _fetch_remote(self, shards: np.ndarray, offsets: np.ndarray, lengths: np.ndarray
                      ) -> list[bytes]:
        """Ranged reads, sent together: per file, nearby records merged into one request;
        a request that is mostly records (sequential reading) reads ahead a whole block,
        kept for the next calls. Reading on from the start of a file or the end of a block
        requests the next block (or the next file's first) on a thread meanwhile. Records
        in a kept block are checked in one call per block; records another thread is
        reading are waited for, not requested twice."""
        out: list[bytes] = [b""] * len(shards)
        spans: list[tuple[int, int, int, list[int]]] = []  # (shard, start, end, members)
        awaited: list[tuple[int, np.ndarray, list[Future[bytes]]]] = []
        order = np.lexsort((offsets, shards))
        firsts = np.flatnonzero(np.diff(shards[order], prepend=-1) != 0)
        with self._planning:  # one thread at a time decides what to request
            for shard, members in zip(shards[order[firsts]].tolist(),
                                      np.split(order, firsts[1:]), strict=True):
                left = self._from_kept(shard, members, offsets, lengths, out)
                covered, futures = self._in_flight(shard, left, offsets, lengths)
                if futures:
                    awaited.append((shard, left[covered], futures))
                    left = left[~covered]
                for i in left.tolist():
                    start, end = int(offsets[i]), int(offsets[i] + lengths[i])
                    last = spans[-1] if spans else None
                    if last is not None and last[0] == shard and start - last[2] <= MERGE_GAP:
                        spans[-1] = (shard, last[1], max(last[2], end), [*last[3], i])
                    else:
                        spans.append((shard, start, end, [i]))
            ends = self._file_ends()
            requests = []
            for shard, first, stop, ids in spans:
                wanted = int(lengths[ids].sum())
                dense = wanted * 2 >= stop - first  # sequential reading: read ahead
                end = min(max(stop, first + READ_BLOCK), int(ends[shard])) if dense else stop
                size = int(ends[shard])
                start = first
                if (not dense and size <= min(READ_BLOCK, _CACHE_BYTES // 64)
                        and (stop - first) * 2 >= size):
                    start, end = 0, size  # most of a small file (a class's): all of it, kept
                requests.append((shard, start, end, ids, dense))
            # Announced while in flight: another thread needing these bytes waits for them.
            keys = [(s, a, b) for s, a, b, _, _ in requests]
            pending: list[Future[bytes]] = [Future() for _ in keys]
            with self._lock:
                self._inflight.update(zip(keys, pending, strict=True))
        if keys:
            self._request(requests, keys, pending, offsets=offsets, lengths=lengths, out=out)
        for shard, members, futures in awaited:
            for future in futures:
                future.result()  # errors reading them surface here
            left = self._from_kept(shard, members, offsets, lengths, out)
            if left.size:  # dropped from the kept blocks meanwhile: read them now
                for i, record in zip(left.tolist(), self._fetch_remote(
                        shards[left], offsets[left], lengths[left]), strict=True):
                    out[i] = record
        return out

    def _request(self, requests: list[tuple[int, int, int, list[int], bool]],
                 keys: list[tuple[int, int, int]], pending: list[Future[bytes]], *,
                 offsets: np.ndarray, lengths: np.ndarray, out: list[bytes]) -> None:
        """Send ``requests`` (announced as ``keys`` with ``pending`` futures), keep what
        they read and fill ``out`` with their records, checked."""
        files = self.index.files
        try:
            blobs = self.storage.read_spans([(files[s], a, b) for s, a, b in keys])
        except BaseException as err:
            for future in pending:
                future.set_exception(err)
            raise
        finally:
            with self._lock:
                for key in keys:
                    self._inflight.pop(key, None)
        ordered = [dense and (start == 0 or self._ended_block(shard, start))
                   for shard, start, _, _, dense in requests]
        for (shard, start, *_), blob, future in zip(requests, blobs, pending, strict=True):
            self._remember(shard, start, blob)
            future.set_result(blob)  # before any frame is checked: waiting threads go on
        for (shard, start, end, ids, _), blob, in_order in zip(requests, blobs, ordered,
                                                              strict=True):
            chosen = np.asarray(ids, dtype=np.int64)
            found = split_frames(blob, offsets[chosen] - start, lengths[chosen],
                                 where=_where(files[shard], offsets[chosen]))
            for i, record in zip(ids, found, strict=True):
                out[i] = record
            if in_order:
                self._read_on(shard, end)

    def _from_kept(self, shard: int, members: np.ndarray, offsets: np.ndarray,
                   lengths: np.ndarray, out: list[bytes]) -> np.ndarray:
        """Fill ``out`` with the records of ``members`` (indices into ``offsets``) that kept
        blocks of ``shard`` hold, checked; returns the others. The first use of a block read
        ahead requests the one after it."""
        with self._lock:
            blocks = list(self._blocks.get(shard, ()))
        left = members
        for start, blob in blocks:
            if not left.size:
                break
            first = offsets[left]
            inside = (first >= start) & (first + lengths[left] <= start + len(blob))
            if not inside.any():
                continue
            chosen = left[inside]
            found = split_frames(blob, offsets[chosen] - start, lengths[chosen],
                                 where=_where(self.index.files[shard], offsets[chosen]))
            for i, record in zip(chosen.tolist(), found, strict=True):
                out[i] = record
            left = left[~inside]
            with self._lock:
                end = self._unused.pop((shard, start), None)
            if end is not None:
                self._read_on(shard, end)
        return left

    def _in_flight(self, shard: int, members: np.ndarray, offsets: np.ndarray,
                   lengths: np.ndarray) -> tuple[np.ndarray, list[Future[bytes]]]:
        """Which of ``members`` requests in flight will bring, and those requests."""
        first, last = offsets[members], offsets[members] + lengths[members]
        covered = np.zeros(len(members), dtype=bool)
        futures = []
        with self._lock:
            for (s, a, b), future in self._inflight.items():
                if s == shard and members.size:
                    inside = (first >= a) & (last <= b)
                    if inside.any():
                        covered |= inside
                        futures.append(future)
        return covered, futures

    def _ended_block(self, shard: int, start: int) -> bool:
        """Whether a block read before ended at ``start`` (reading goes on in order)."""
        with self._lock:
            return any(a + len(blob) == start for a, blob in self._blocks.get(shard, ()))

    def _read_on(self, shard: int, end: int) -> None:
        """Request the :data:`AHEAD_BLOCKS` blocks after ``end`` of ``shard`` (going on
        into the next files at its end) on I/O threads, unless kept or requested already."""
        ends = self._file_ends()
        for _ in range(AHEAD_BLOCKS):
            if end >= int(ends[shard]):
                shard, end = shard + 1, 0
                while shard < len(ends) and not ends[shard]:
                    shard += 1
                if shard >= len(ends):
                    return
            stop = min(end + READ_BLOCK, int(ends[shard]))
            key = (shard, end, stop)
            with self._lock:
                if key not in self._inflight and not any(
                        a == end for a, _ in self._blocks.get(shard, ())):
                    if self._io is None:
                        self._io = ThreadPoolExecutor(AHEAD_BLOCKS,
                                                      thread_name_prefix="tfrecordkit-ahead")
                    self._inflight[key] = self._io.submit(self._read_block, key)
            end = stop

    def _read_block(self, key: tuple[int, int, int]) -> bytes:
        shard, start, stop = key
        try:
            blob = self.storage.read_spans([(self.index.files[shard], start, stop)])[0]
            self._remember(shard, start, blob)
            with self._lock:
                self._unused[(shard, start)] = stop
            return blob
        finally:
            with self._lock:
                self._inflight.pop(key, None)

    def _file_ends(self) -> np.ndarray:
        """Where each file's last record ends (its size, for a whole file)."""
        if self._ends is None:
            ends = np.zeros(len(self.index.files), dtype=np.int64)
            np.maximum.at(ends, self.index.shard, self.index.offset + self.index.length)
            self._ends = ends
        return self._ends

    def _remember(self, shard: int, start: int, blob: bytes) -> None:
        """Keep a fetched span for later calls (least recently fetched dropped first)."""
        with self._lock:
            self._blocks.setdefault(shard, []).append((start, blob))
            self._order.append((shard, start, len(blob)))
            self._cached_bytes += len(blob)
            while self._cached_bytes > _CACHE_BYTES and self._order:
                old_shard, old_start, size = self._order.pop(0)
                kept = self._blocks.get(old_shard, [])
                self._blocks[old_shard] = [b for b in kept if b[0] != old_start]
                self._unused.pop((old_shard, old_start), None)
                self._cached_bytes -= size

    def close(self) -> None:
        """Close every open file (and stop reading ahead)."""
        with self._lock:
            for shard in list(self._open):
                if self._users.get(shard):
                    self._closing.add(shard)  # being read: closed by its last reader
                else:
                    os.close(self._open.pop(shard))
            io, self._io = self._io, None
        if io is not None:  # not waited for when dropped: its own thread may drop it
            io.shutdown(wait=not self._dropped, cancel_futures=True)

    def __getstate__(self) -> dict[str, object]:
        # Open files and the lock don't travel; files reopen on the first read.
        # The stamps do: a worker checks the files against what the reader was made over.
        return {"index": self.index, "max_open_files": self.max_open_files,
                "storage": self.storage, "stamps": self.stamps}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["index"], state["max_open_files"],  # type: ignore[misc]
                      storage=state.get("storage"), stamps=state.get("stamps"))

    def __enter__(self) -> RecordFetcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        # At interpreter exit the process closes the files; closing them here then could
        # meet modules already torn down (a TypeError traceback printed at exit).
        if hasattr(self, "_lock") and not sys.is_finalizing():
            self._dropped = True
            self.close()
