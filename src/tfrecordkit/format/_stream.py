"""Bytes under a record reader: windows over a file (buffered or memory-mapped), streams of
unknown length, compression sniffing, and finding the next valid frame after damage."""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import stat
import zlib
from typing import BinaryIO

import numpy as np

from tfrecordkit.errors import (
    OptionError,
)
from tfrecordkit.format._compression import (
    Compression,
    detect_compression,
)
from tfrecordkit.format._crc import masked_crc32c
from tfrecordkit.format._framing import (
    _CRC,
    _LENGTH,
    _MAX_READ,
    FRAME_OVERHEAD,
    HEADER_SIZE,
)

__all__ = ["DEFAULT_MAX_RECORD_BYTES", "sniff_compression"]


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
