"""GZIP and ZLIB stream wrappers, named and framed the way TensorFlow's record I/O names them."""

from __future__ import annotations

import io
import zlib
from typing import BinaryIO, Literal

from tfrecordkit.errors import OptionError

Compression = Literal["gzip", "zlib"] | None
CompressionArg = Literal["gzip", "zlib", "GZIP", "ZLIB", "none", "", "auto"] | None

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


class InflatingReader(io.RawIOBase):
    """A readable stream of the decompressed bytes of a gzip or zlib stream.

    Concatenated gzip members are read one after another, as ``gzip`` does.
    """

    def __init__(self, raw: BinaryIO, compression: Compression, chunk_size: int = 1 << 20) -> None:
        super().__init__()
        self._raw = raw
        self._wbits = _WBITS[compression] if compression else _DETECT_WBITS
        self._inflater = zlib.decompressobj(self._wbits)
        self._chunk_size = chunk_size
        self._pending = b""
        self._eof = False
        self.unterminated = False  # the stream ended without its end marker

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        while not self._pending and not self._eof:
            self._pending = self._inflate_some(len(view))
        count = min(len(view), len(self._pending))
        view[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def _inflate_some(self, wanted: int) -> bytes:
        inflater = self._inflater
        if inflater.unconsumed_tail:
            return inflater.decompress(inflater.unconsumed_tail, max(wanted, self._chunk_size))
        if inflater.eof:
            rest = inflater.unused_data
            if not rest:
                rest = self._raw.read(self._chunk_size)
            if not rest:
                self._eof = True
                return b""
            # Another gzip member follows.
            self._inflater = inflater = zlib.decompressobj(self._wbits)
            return inflater.decompress(rest, max(wanted, self._chunk_size))
        data = self._raw.read(self._chunk_size)
        if not data:
            # No end-of-stream marker: a writer that flushed and is still writing (TensorFlow's
            # and ours), or a file cut short. What inflates is returned: a record cut in the
            # middle still fails its framing checks, and the reader reports the missing end.
            self._eof = True
            self.unterminated = True
            return inflater.flush()
        return inflater.decompress(data, max(wanted, self._chunk_size))

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
