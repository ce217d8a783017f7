"""Reading TFRecord files: sequentially (CRC-checked, plain or compressed, with a resync
policy for damaged files) and by position through the offset index; scanning a file for its
offsets and writing its index."""

from __future__ import annotations

import contextlib
import io
import logging
import mmap
import os
import stat
import zlib
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import crc32c as _crc32c
import numpy as np

from tfrecordkit.errors import (
    CorruptionCheck,
    CorruptRecordError,
    DatasetError,
    IndexUnavailableError,
    OptionError,
    OutOfRangeError,
)
from tfrecordkit.format._compression import (
    Compression,
    InflatingReader,
    detect_compression,
    normalize_compression,
)
from tfrecordkit.format._crc import _MASK_DELTA, masked_crc32c
from tfrecordkit.format._filesystem import PathLike, Storage
from tfrecordkit.format._framing import (
    _CRC,
    _HEADER,
    _LENGTH,
    _MAX_READ,
    FOOTER_SIZE,
    FRAME_OVERHEAD,
    HEADER_SIZE,
    ErrorPolicy,
    ReadStats,
    _check_policy,
    check_frame,
)
from tfrecordkit.format._index import (
    index_path_for,
    load_index,
    require_regular_file,
    write_index,
)

__all__ = ["RecordReader", "build_index", "read_records", "scan_offsets", "sniff_compression"]

logger = logging.getLogger(__name__)


class _Window:
    """A reusable read buffer over a stream; the caller tracks its unread span ``[pos, end)``."""

    def __init__(self, stream: BinaryIO, size: int, start_offset: int = 0) -> None:
        self._stream = stream
        self._buffer = bytearray(size)
        self.view = memoryview(self._buffer)
        self._end = 0
        self._consumed = start_offset  # stream offset of buffer[0]
        # Set when the stream is a regular uncompressed file, whose later bytes can be read
        # without disturbing the stream (see _lines_up).
        self.fd: int | None = None
        self.file_size = -1

    def offset(self, pos: int) -> int:
        """Stream offset of buffer position ``pos``."""
        return self._consumed + pos

    def refill(self, pos: int, need: int) -> tuple[bool, memoryview, int, int]:
        """Move ``[pos, end)`` to the front and read until ``need`` bytes are unread.

        Returns ``(ok, view, pos, end)``; ``ok`` is False if the stream ended first.
        """
        end = self._end - pos
        if pos:
            self._buffer[:end] = self.view[pos : self._end]  # same size: no resize
            self._consumed += pos
        while end < need:
            if end == len(self._buffer):
                # Full: grow into a new buffer (views of the old one may still be alive),
                # in bounded steps so a bogus unverified length can't allocate far more
                # than the stream holds.
                bigger = bytearray(min(need, end + _MAX_READ))
                bigger[:end] = self.view[:end]
                self._buffer, self.view = bigger, memoryview(bigger)
            got = self._stream.readinto(self.view[end:])  # type: ignore[attr-defined]
            if not got:
                break
            end += got
        self._end = end
        return end >= need, self.view, 0, end


class _MappedWindow:
    """Like :class:`_Window`, but maps the file in bounded windows instead of copying it.

    Saves the read copy for local uncompressed files; each window is unmapped once no record
    view refers to it, so resident memory stays bounded by the window size.
    """

    def __init__(self, raw: BinaryIO, start_offset: int = 0, size: int = 16 << 20) -> None:
        self.fd = raw.fileno()
        self.file_size = os.fstat(self.fd).st_size
        self._window_size = size
        self.view = memoryview(b"")
        self._consumed = start_offset

    def offset(self, pos: int) -> int:
        """File offset of window position ``pos``."""
        return self._consumed + pos

    def refill(self, pos: int, need: int) -> tuple[bool, memoryview, int, int]:
        """Map a window holding ``need`` bytes from ``pos``; see :meth:`_Window.refill`."""
        start = self._consumed + pos
        base = start - start % mmap.ALLOCATIONGRANULARITY
        # Map no further than the file's size now: had it shrunk since it was opened, touching
        # pages past its end would kill the process (SIGBUS). (A shrink while a window is in
        # use can't be caught: readers that must survive that use use_mmap=False.)
        size = min(self.file_size, os.fstat(self.fd).st_size)
        length = min(size - base, max(self._window_size, start - base + need))
        if length <= start - base:
            self.view, self._consumed = memoryview(b""), start
            return False, self.view, 0, 0
        mapped = mmap.mmap(self.fd, length, access=mmap.ACCESS_READ, offset=base)
        with contextlib.suppress(AttributeError, OSError):  # madvise is not everywhere
            mapped.madvise(mmap.MADV_SEQUENTIAL)
        self.view, self._consumed = memoryview(mapped), base
        return length - (start - base) >= need, self.view, start - base, length


def _shrank(window: _Window | _MappedWindow) -> str:
    """``"; the file shrank while being read"`` when it did (another process truncated it)."""
    if window.fd is None:
        return ""
    try:
        now = os.fstat(window.fd).st_size
    except OSError:
        return ""
    return f"; the file shrank while being read ({window.file_size} -> {now} bytes)" if (
        now < window.file_size) else ""


DEFAULT_MAX_RECORD_BYTES = 1 << 30
_NO_LIMIT = 1 << 64
_SNIFF_BYTES = 1 << 16


def _is_regular(raw: BinaryIO) -> bool:
    try:
        return stat.S_ISREG(os.fstat(raw.fileno()).st_mode)
    except (OSError, AttributeError, io.UnsupportedOperation):
        return False


def _discard(stream: BinaryIO, count: int, path: str) -> None:
    """Read and drop ``count`` bytes of ``stream``.

    Raises:
        OptionError: the stream ends first (the offset lies past its end).
    """
    left = count
    while left:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            stream.close()
            raise OptionError(f"{path}: offset {count} lies past the end of its "
                              f"{count - left}-byte decompressed stream")
        left -= len(chunk)


def _read_up_to(raw: BinaryIO, size: int) -> bytes:
    """Read ``size`` bytes, or fewer at the end of the stream (pipes return short reads)."""
    parts, got = [], 0
    while got < size:
        chunk = raw.read(size - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


class _Prefixed(io.RawIOBase):
    """A stream that yields ``head`` and then the rest of ``raw`` (bytes sniffed off a pipe)."""

    def __init__(self, head: bytes, raw: BinaryIO) -> None:
        super().__init__()
        self._head = memoryview(head)
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._head:
            count = min(len(buffer), len(self._head))
            buffer[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        return self._raw.readinto(buffer)  # type: ignore[attr-defined, no-any-return]

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def sniff_compression(head: bytes) -> Compression:
    """The compression of a stream from its first bytes: a valid first frame header means
    none; gzip/zlib only if the bytes really inflate (a damaged first header that merely
    looks like a zlib header is read as an uncompressed file)."""
    valid = len(head) >= HEADER_SIZE and (
        masked_crc32c(head[:8]) == _CRC.unpack_from(head, 8)[0])
    guess = detect_compression(head[:HEADER_SIZE], valid)
    if guess is None:
        return None
    try:
        inflater = zlib.decompressobj({"gzip": 31, "zlib": 15}[guess])
        out = inflater.decompress(head, 1 << 16)
    except zlib.error:
        return None
    return guess if out or inflater.eof or not inflater.unused_data else None


_SCAN_CHUNK = 1 << 20
_STREAM_LOOKAHEAD = 16 << 20


def _header_candidates(view: memoryview, start: int, stop: int) -> np.ndarray:
    """Positions p in ``[start, stop)`` (with 12 bytes from p in ``view``) that could hold a
    header: a length below 2**40 (its top three bytes zero), and not a run of zero bytes
    (twelve zeros are never a valid header)."""
    buf = np.frombuffer(view, np.uint8, count=stop - start + HEADER_SIZE - 1, offset=start)
    n = stop - start
    zero = buf == 0
    maybe = zero[5 : 5 + n] & zero[6 : 6 + n] & zero[7 : 7 + n]
    all_zero = maybe.copy()
    for k in (0, 1, 2, 3, 4, 8, 9, 10, 11):
        all_zero &= zero[k : k + n]
    return np.flatnonzero(maybe & ~all_zero) + start


def _next_header(window: _Window | _MappedWindow, view: memoryview, pos: int,
                 end: int) -> tuple[bool, memoryview, int, int]:
    """Advance to the next position whose 12 bytes pass the length CRC; ``(False, ...)`` with
    the rest of the stream unread if there is none. Candidates are found with vectorised
    byte tests, so scanning garbage runs at C speed."""
    while True:
        while end - pos >= HEADER_SIZE:
            stop = min(end - HEADER_SIZE + 1, pos + _SCAN_CHUNK)
            for p in _header_candidates(view, pos, stop).tolist():
                length_bytes = view[p : p + 8]
                if masked_crc32c(length_bytes) == _CRC.unpack_from(view, p + 8)[0]:
                    return True, view, p, end
            pos = stop
        ok, view, pos, end = window.refill(pos, HEADER_SIZE)
        if not ok:
            return False, view, pos, end


def _lines_up(window: _Window | _MappedWindow, view: memoryview, pos: int, end: int,
              *, size: int, rejected: set[int]) -> tuple[bool, memoryview, int, int]:
    """Whether the frame at ``pos`` (``size`` bytes, CRCs good) starts a run of frames that
    ends exactly at the end of the file; for streams, a run that holds for 16 MiB or ends
    exactly at the end of the stream."""
    start = window.offset(pos)
    if start in rejected:
        return False, view, pos, end
    if window.fd is not None:
        chain = [start]
        offset, file_size = start + size, window.file_size
        while offset != file_size:
            head = os.pread(window.fd, HEADER_SIZE, offset)
            if len(head) < HEADER_SIZE or masked_crc32c(head[:8]) != _CRC.unpack_from(head, 8)[0]:
                rejected.update(chain)  # every frame of this run fails the same way
                return False, view, pos, end
            chain.append(offset)
            offset += _LENGTH.unpack_from(head)[0] + FRAME_OVERHEAD
            if offset > file_size:
                rejected.update(chain)
                return False, view, pos, end
        return True, view, pos, end
    # A stream can't be read ahead without holding what is read: follow the frames through
    # a bounded look-ahead instead (nested payloads smaller than it are caught).
    ahead = size
    while ahead <= _STREAM_LOOKAHEAD:
        ok, view, pos, end = window.refill(pos, ahead + HEADER_SIZE)
        if not ok:
            return end - pos == ahead, view, pos, end
        at = pos + ahead
        if masked_crc32c(view[at : at + 8]) != _CRC.unpack_from(view, at + 8)[0]:
            rejected.add(start)
            return False, view, pos, end
        ahead += _LENGTH.unpack_from(view, at)[0] + FRAME_OVERHEAD
    return True, view, pos, end


class RecordReader:
    """Reads the records of one TFRecord file, checking both CRCs of every record.

    Args:
        path: a local path, or a URL (``s3://``, ``gs://``, ... with the ``remote`` extra;
            ``storage_options`` go to fsspec, ``storage`` is a resolved
            :class:`~tfrecordkit.format.Storage`).
        compression: ``"auto"`` (detect from the first bytes), None, ``"gzip"`` or ``"zlib"``.
        verify: check the length and data CRCs (truncation is always detected).
        on_error: on a corrupt record, ``"raise"`` a :class:`CorruptRecordError`; ``"skip"``
            it (resynchronising on the next valid record); or ``"warn"`` (skip and log).
            What was skipped is in :attr:`stats` and logged once at the end (unless
            ``log_skipped`` is False: the caller reports it).
        index_path: offset index for random access; default ``<path>.index`` if it exists.
        use_mmap: map local uncompressed files into memory (in bounded windows) rather than
            copying them through a read buffer. Off by default: if another process truncates
            a mapped file, reading it kills this process (SIGBUS), while buffered reads turn
            that into a :class:`CorruptRecordError`; and they are as fast (bench/read_raw.py).
        max_record_bytes: a record claiming to be longer is an error rather than a buffer to
            fill, where records must be buffered (compressed files and pipes); 1 GiB by default.
            A decompression bomb therefore can't take more memory than this.

    Iterating yields each record's bytes; every iteration reads the file afresh. Offsets of
    compressed files are offsets into the decompressed stream.
    """

    def __init__(
        self,
        path: PathLike,
        compression: str | None = "auto",
        *,
        verify: bool = True,
        on_error: ErrorPolicy = "raise",
        index_path: PathLike | None = None,
        buffer_size: int = 1 << 20,
        use_mmap: bool = False,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        storage: Storage | None = None,
        storage_options: dict[str, Any] | None = None,
        log_skipped: bool = True,
    ) -> None:
        _check_policy(on_error)
        if not isinstance(buffer_size, int) or buffer_size < 0:
            raise OptionError(f"buffer_size must be a non-negative int; got {buffer_size!r}")
        buffer_size = max(buffer_size, HEADER_SIZE)  # the window grows as records need
        self.path = os.fspath(path)
        self.storage = storage or Storage.of(self.path, storage_options)
        self.log_skipped = log_skipped
        self._compression_arg = normalize_compression(compression, allow_auto=True)
        self.verify = verify
        self.on_error: ErrorPolicy = on_error
        self.buffer_size = buffer_size
        self.use_mmap = use_mmap
        self._index_path = os.fspath(index_path) if index_path is not None else None
        self._offsets: np.ndarray | None = None  # (n, 2) int64 array once loaded
        self._random_handle: BinaryIO | None = None
        self._closed = False
        self._sniffed: tuple[Compression] | None = None
        self.max_record_bytes = max_record_bytes
        self.stats = ReadStats()

    # -- sequential reading -------------------------------------------------------------

    @property
    def compression(self) -> Compression:
        """The file's compression (detected from its first bytes when ``"auto"``).

        For a pipe or FIFO this is known only once reading has begun (reading the first
        bytes to sniff would consume them); it reads as None until then.
        """
        if self._compression_arg != "auto":
            return self._compression_arg  # type: ignore[return-value]
        if self._sniffed is not None:
            return self._sniffed[0]
        if not self.storage.local:
            with self.storage.open(self.path, "rb") as raw:
                return sniff_compression(raw.read(_SNIFF_BYTES))
        with self.storage.open(self.path, "rb", buffering=0) as raw:
            if not _is_regular(raw):
                return None
            return sniff_compression(raw.read(_SNIFF_BYTES))

    def _open_stream(self) -> BinaryIO:
        raw = self.storage.open(self.path, "rb", buffering=0)
        try:
            if self.storage.local:
                mode = os.fstat(raw.fileno()).st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                    raise DatasetError(f"{self.path}: not a regular file or a pipe (a device?); "
                                     "refusing to read it as records")
            compression = self._compression_arg
            if compression == "auto":
                if _is_regular(raw):
                    compression = sniff_compression(raw.read(_SNIFF_BYTES))
                    raw.seek(0)
                else:  # a pipe: sniff without losing the bytes read
                    head = _read_up_to(raw, _SNIFF_BYTES)
                    compression = sniff_compression(head)
                    raw = _Prefixed(head, raw)  # type: ignore[assignment]
                self._sniffed = (compression,)
        except BaseException:
            raw.close()
            raise
        if compression is None:
            return raw
        return InflatingReader(raw, compression, self.buffer_size)  # type: ignore[arg-type, return-value]

    def _check_open(self) -> None:
        if self._closed:
            raise OptionError(f"{self.path}: the RecordReader is closed")

    def __iter__(self) -> Iterator[bytes]:
        self._check_open()
        return self._scan(0, with_offsets=False)  # type: ignore[return-value]

    def iter_with_offsets(self, start_offset: int = 0) -> Iterator[tuple[int, bytes]]:
        """Yield ``(byte offset, record)`` pairs, from ``start_offset`` (a record boundary)."""
        return self._scan(start_offset, with_offsets=True)  # type: ignore[return-value]

    def _problem(
        self, stats: ReadStats, offset: int, index: int, check: CorruptionCheck, detail: str
    ) -> None:
        error = CorruptRecordError(self.path, offset, index, check, detail)
        if self.on_error == "raise":
            raise error
        stats.problems.append(error)
        if self.on_error == "warn":
            logger.warning("%s", error)

    def _scan(
        self, start_offset: int, *, with_offsets: bool
    ) -> Iterator[bytes | tuple[int, bytes]]:
        """Parse frames from ``start_offset``; yield records (or offset/record pairs)."""
        self.stats = stats = ReadStats()
        stream = self._open_stream()
        if start_offset:
            if isinstance(stream, io.FileIO) and _is_regular(stream):
                stream.seek(start_offset)
            elif self.compression is not None:
                # An offset into the decompressed stream: inflate up to it (the cost of
                # random access into a compressed file without restart points).
                _discard(stream, start_offset, self.path)
            else:
                stream.close()
                raise OptionError(f"{self.path}: can start mid-stream only in a regular or "
                                  "compressed file, not a pipe")
        window: _Window | _MappedWindow
        regular = isinstance(stream, io.FileIO) and _is_regular(stream)
        if self.use_mmap and regular:
            window = _MappedWindow(stream, start_offset)
        else:
            window = _Window(stream, self.buffer_size, start_offset)
            if regular:  # uncompressed and seekable: frames can be checked ahead by pread
                window.fd, window.file_size = stream.fileno(), os.fstat(stream.fileno()).st_size
        # Only streams (compressed files, pipes) must buffer a whole record to read it; a file
        # has its size as the bound. A record claiming more than the limit is refused.
        record_limit = self.max_record_bytes if window.fd is None else _NO_LIMIT
        verify = self.verify
        header_unpack = _HEADER.unpack_from
        crc_unpack = _CRC.unpack_from
        crc = _crc32c.crc32c
        index = 0  # records seen so far, good or bad
        resyncing_from = -1  # stream offset where a damaged region began, -1 when in sync
        rejected: set[int] = set()  # offsets of frames known not to line up with the end
        # The hot loop keeps the window's state in locals and syncs it around refills;
        # the unread bytes are view[pos:end].
        view, pos, end = window.view, 0, 0
        try:
            while True:
                if end - pos < HEADER_SIZE:
                    ok, view, pos, end = window.refill(pos, HEADER_SIZE)
                    if not ok:
                        left = end - pos
                        if left and resyncing_from < 0:
                            self._problem(stats, window.offset(pos), index, "truncated header",
                                          f"{left} of {HEADER_SIZE} header bytes at end of "
                                          f"file{_shrank(window)}")
                            stats.skipped_records += 1
                        stats.skipped_bytes += left
                        break
                length, length_crc = header_unpack(view, pos)
                if verify:
                    c = crc(view[pos : pos + 8])
                    if (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF != length_crc:
                        if resyncing_from < 0:
                            self._problem(stats, window.offset(pos), index, "length crc",
                                          "the length does not match its CRC")
                            stats.skipped_records += 1
                            index += 1
                            resyncing_from = window.offset(pos)
                        # Look for the next header whose length CRC holds.
                        ok, view, pos, end = _next_header(window, view, pos + 1, end)
                        if not ok:
                            stats.skipped_bytes += end - pos
                            pos = end
                            break
                        continue
                size = HEADER_SIZE + length + FOOTER_SIZE
                if length > record_limit:
                    self._problem(stats, window.offset(pos), index, "record too large",
                                  f"{length} bytes, over max_record_bytes="
                                  f"{self.max_record_bytes}")
                    stats.skipped_records += 1
                    stats.skipped_bytes += end - pos
                    pos = end
                    break
                if end - pos < size:
                    ok, view, pos, end = window.refill(pos, size)
                    if not ok:
                        left = end - pos
                        if resyncing_from < 0:
                            self._problem(stats, window.offset(pos), index, "truncated data",
                                          f"header says {length} data bytes, "
                                          f"{max(0, left - HEADER_SIZE)} remain"
                                          + _shrank(window))
                            stats.skipped_records += 1
                        stats.skipped_bytes += left
                        break
                data_end = pos + HEADER_SIZE + length
                record = view[pos + HEADER_SIZE : data_end]
                if verify:
                    c = crc(record)
                    if (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF != crc_unpack(
                        view, data_end
                    )[0]:
                        if resyncing_from >= 0:
                            pos += 1  # a header that only looked valid: keep searching
                            continue
                        self._problem(stats, window.offset(pos), index, "data crc",
                                      f"{length} data bytes")
                        stats.skipped_records += 1
                        stats.skipped_bytes += size
                        index += 1
                        pos += size  # the length passed its CRC: the next frame is there
                        continue
                if resyncing_from >= 0:
                    # A frame that checks out may still sit inside another record's payload:
                    # take it only if the frames from it on line up with the end of the file.
                    record = None  # type: ignore[assignment]  # no view into a moving window
                    lined_up, view, pos, end = _lines_up(window, view, pos, end, size=size,
                                                         rejected=rejected)
                    if not lined_up:
                        pos += 1
                        continue
                    stats.skipped_bytes += window.offset(pos) - resyncing_from
                    resyncing_from = -1
                    record = view[pos + HEADER_SIZE : pos + HEADER_SIZE + length]
                if with_offsets:
                    yield window.offset(pos), record.tobytes()
                else:
                    yield record.tobytes()
                pos += size
                stats.records += 1
                index += 1
        except (zlib.error, EOFError) as err:
            self._problem(stats, window.offset(pos), index, "bad compressed stream", str(err))
        finally:
            if getattr(stream, "unterminated", False):
                stats.unterminated = True
                logger.warning("%s: the compressed stream has no end marker (its writer is "
                               "still writing, or the file was cut at a flush point)", self.path)
            stream.close()
            if stats.problems and self.log_skipped:
                logger.warning(stats.summary(self.path))
        if resyncing_from >= 0:
            stats.skipped_bytes += window.offset(pos) - resyncing_from

    # -- random access ------------------------------------------------------------------

    def _load_offsets(self) -> np.ndarray:
        if self._offsets is not None:
            return self._offsets
        require_regular_file(self.path)
        if self.compression is not None:

            raise IndexUnavailableError(
                f"{self.path}: random access needs an uncompressed file; offsets into a "
                f"{self.compression} stream cannot be seeked to (rewrite it uncompressed)"
            )
        index_path = self._index_path or index_path_for(self.path)
        if self.storage.exists(index_path):
            self._offsets = load_index(index_path, record_path=self.path, storage=self.storage)
        else:
            logger.info("%s: no index at %s; scanning the file for offsets", self.path, index_path)
            self._offsets = scan_offsets(self.path, storage=self.storage)
        return self._offsets

    def num_records(self) -> int:
        """Number of records, from the offset index (a scan of the file when there is none)."""
        return len(self._load_offsets())

    def read(self, i: int) -> bytes:
        """Read record ``i`` directly, using the offset index; CRCs are checked."""
        self._check_open()
        offsets = self._load_offsets()
        n = len(offsets)
        if not -n <= i < n:
            raise OutOfRangeError(f"{self.path}: record {i} out of range ({n} records)")
        i %= n
        offset, size = int(offsets[i, 0]), int(offsets[i, 1])
        if self._random_handle is None:
            self._random_handle = self.storage.open(self.path, "rb", buffering=0)
        self._random_handle.seek(offset)
        frame = self._random_handle.read(size)
        return check_frame(frame, path=self.path, offset=offset, index=i, verify=self.verify)

    def close(self) -> None:
        """Release the handle kept for random access; the reader can't be used after this."""
        self._closed = True
        if self._random_handle is not None:
            self._random_handle.close()
            self._random_handle = None

    def __enter__(self) -> RecordReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_records(
    paths: PathLike | Iterable[PathLike],
    compression: str | None = "auto",
    *,
    verify: bool = True,
    on_error: ErrorPolicy = "raise",
    storage_options: dict[str, Any] | None = None,
) -> Iterator[bytes]:
    """Yield the records of one or more TFRecord files (paths or URLs), file after file."""
    _check_policy(on_error)
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    names = [os.fspath(p) for p in paths]
    listed: set[str] = set()
    for i, path in enumerate(names):
        storage = Storage.of(path, storage_options)
        folder = path.rsplit("/", 1)[0]
        if not storage.local and folder not in listed:
            listed.add(folder)
            storage.sizes(folder)  # one listing gives every file's size
        if i + 1 < len(names) and not storage.local:
            storage.prefetch(names[i + 1])  # the next file downloads while this one is read
        yield from RecordReader(path, compression, verify=verify, on_error=on_error,
                                storage=storage)


def scan_offsets(path: PathLike, *, verify: bool = True,
                 storage: Storage | None = None) -> np.ndarray:
    """Return an ``(n, 2)`` int64 array of each record's frame offset and frame length."""
    require_regular_file(path)

    reader = RecordReader(path, compression="auto", verify=verify, storage=storage)
    if reader.compression is not None:
        raise IndexUnavailableError(
            f"{os.fspath(path)}: cannot index a {reader.compression}-compressed file: "
            "record offsets inside a compressed stream cannot be seeked to "
            "(rewrite it uncompressed to get random access)"
        )
    rows = [
        (offset, len(record) + FRAME_OVERHEAD) for offset, record in reader.iter_with_offsets()
    ]
    return np.array(rows, dtype=np.int64).reshape(-1, 2)


def build_index(path: PathLike, index_path: PathLike | None = None, *, verify: bool = True,
                storage: Storage | None = None,
                storage_options: dict[str, Any] | None = None) -> int:
    """Write the offset index of the record file ``path``; return its number of records.

    Raises:
        IndexUnavailableError: the file is compressed.
        CorruptRecordError: a record fails its checks (no index is written).
    """
    storage = storage or Storage.of(path, storage_options)
    offsets = scan_offsets(path, verify=verify, storage=storage)
    write_index(offsets, index_path if index_path is not None else index_path_for(path),
                storage)
    return len(offsets)
