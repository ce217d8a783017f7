"""GZIP and ZLIB stream wrappers, named and framed the way TensorFlow's record I/O names them."""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable
from typing import BinaryIO, Literal

from tfrecordkit.errors import OptionError

Compression = Literal["gzip", "zlib"] | None

# zlib's wbits: 15 is a zlib header (TF "ZLIB"), 31 a gzip header (TF "GZIP"), 47 detects either.
_WBITS = {"zlib": 15, "gzip": 31}
_DETECT_WBITS = 47
_GZIP_MAGIC = b"\x1f\x8b"


def normalize_compression(value: str | None, *, allow_auto: bool = False) -> str | None:
    """Return ``"gzip"``, ``"zlib"``, None (uncompressed) or ``"auto"``; reject anything else
    with a ``ValueError``."""
    if value is None:
        return None
    allowed = "None, 'gzip', 'zlib'" + (", 'auto'" if allow_auto else "")
    if not isinstance(value, str):
        raise OptionError(f"compression must be one of {allowed}; got {value!r}")
    lowered = value.lower()
    if lowered in ("", "none"):
        return None
    if lowered in ("gzip", "zlib"):
        return lowered
    if lowered == "auto" and allow_auto:
        return "auto"
    raise OptionError(f"compression must be one of {allowed}; got {value!r}")


def detect_compression(head: bytes, header_is_valid: bool) -> Compression:
    """Guess a file's compression from its first bytes.

    ``header_is_valid`` says whether the first 12 bytes already form a TFRecord header with a
    correct length CRC; if so the file is uncompressed whatever its bytes look like.
    """
    if header_is_valid or len(head) < 2:
        return None
    if head[:2] == _GZIP_MAGIC:
        return "gzip"
    # RFC 1950 header: deflate method, and the 16-bit header a multiple of 31.
    if head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0:
        return "zlib"
    return None


_TRAILER = {"gzip": 8, "zlib": 4}  # bytes after the deflate data of one member

ReadAt = Callable[[int, int], bytes]
"""``read_at(offset, size)``: up to ``size`` compressed bytes from ``offset``."""


class MemberInflater:
    """Inflating a gzip/zlib stream from compressed offset ``c``: from a stream's start, or
    (``raw``) from a full-flush point inside one, where raw deflate data begins. Members
    that follow one another are read one after another, as ``gzip`` does."""

    __slots__ = ("c", "compression", "done", "inflater", "pending", "raw", "unterminated")

    def __init__(self, compression: Compression, c: int = 0, *, raw: bool = False) -> None:
        self.compression = compression
        self.inflater = zlib.decompressobj(-15 if raw else self._wbits)
        self.c, self.raw = c, raw
        self.pending = b""  # compressed input read but not yet consumed
        self.done = False
        self.unterminated = False  # the stream ended without its end marker

    @property
    def _wbits(self) -> int:
        return _WBITS[self.compression] if self.compression else _DETECT_WBITS

    def copy_state(self, twin: MemberInflater) -> None:
        """Give ``twin`` (a new object) this inflating state."""
        twin.compression, twin.inflater = self.compression, self.inflater.copy()
        twin.c, twin.raw, twin.pending = self.c, self.raw, self.pending
        twin.done, twin.unterminated = self.done, self.unterminated

    def step(self, read_at: ReadAt, chunk: int, limit: int) -> bytes:
        """Up to ``limit`` next decompressed bytes (empty at the end of the stream)."""
        while not self.done:
            inflater = self.inflater
            if inflater.eof:  # a member ended: skip its trailer; another may follow
                # Every byte fed past the end is in unused_data (zlib may leave a copy of
                # them in unconsumed_tail too).
                rest = inflater.unused_data
                trailer = _TRAILER[self.compression] if self.raw and self.compression else 0
                while len(rest) < trailer + 1:
                    more = read_at(self.c, chunk)
                    self.c += len(more)
                    if not more:
                        self.done = True
                        return b""
                    rest += more
                self.inflater = zlib.decompressobj(self._wbits)
                self.raw, self.pending = False, rest[trailer:]
                continue
            data = self.pending
            if not data:
                data = read_at(self.c, chunk)
                self.c += len(data)
                if not data:
                    # No end-of-stream marker: a writer that flushed and is still writing
                    # (TensorFlow's and ours), or a file cut short. What inflates is
                    # returned: a record cut in the middle still fails its framing checks.
                    self.done = self.unterminated = True
                    return inflater.flush()
            out = inflater.decompress(data, limit)
            self.pending = inflater.unconsumed_tail
            if out:
                return out
        return b""


class InflatingReader(io.RawIOBase):
    """A readable stream of the decompressed bytes of a gzip or zlib stream (``compression``
    None: detected from its header). Concatenated gzip members are read one after another,
    as ``gzip`` does."""

    def __init__(self, raw: BinaryIO, compression: Compression, chunk_size: int = 1 << 20) -> None:
        super().__init__()
        self._raw = raw
        self._state = MemberInflater(compression)
        self._chunk_size = chunk_size
        self._pending = b""

    @property
    def unterminated(self) -> bool:
        """Whether the stream ended without its end marker."""
        return self._state.unterminated

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        while not self._pending and not self._state.done:
            self._pending = self._state.step(self._read, self._chunk_size,
                                             max(len(view), self._chunk_size))
        count = min(len(view), len(self._pending))
        view[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def _read(self, _at: int, size: int) -> bytes:
        return self._raw.read(size)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class DeflatingWriter(io.RawIOBase):
    """A writable stream that compresses into ``raw`` as gzip or zlib (deterministic bytes)."""

    def __init__(self, raw: BinaryIO, compression: Compression, level: int = 6) -> None:
        super().__init__()
        if compression is None:
            raise OptionError("DeflatingWriter needs 'gzip' or 'zlib'")
        self._raw = raw
        # gzip via wbits=31 writes a header with mtime 0 and no name: same bytes every run.
        self._deflater = zlib.compressobj(level, zlib.DEFLATED, _WBITS[compression])
        self._finished = False
        self.compressed_bytes = 0  # written to ``raw`` so far

    def _put(self, data: bytes) -> None:
        if data:
            self._raw.write(data)
            self.compressed_bytes += len(data)

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self._put(self._deflater.compress(data))
        return len(data)

    def flush(self) -> None:
        """Push everything written so far through the compressor (a sync flush), so a reader
        can decompress every record written up to now."""
        if not self._finished:
            self._put(self._deflater.flush(zlib.Z_SYNC_FLUSH))
            self._raw.flush()

    def restart(self) -> int:
        """End the deflate data written so far with a full flush, so that inflating can
        begin afresh (raw deflate, no history) at the returned compressed offset. The stream
        stays one valid gzip or zlib stream."""
        self._put(self._deflater.flush(zlib.Z_FULL_FLUSH))
        return self.compressed_bytes

    def close(self) -> None:
        if not self._finished:
            self._finished = True
            self._put(self._deflater.flush())
            self._raw.close()
        super().close()
