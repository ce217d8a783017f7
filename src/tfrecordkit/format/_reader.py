"""Reading TFRecord files: sequentially (CRC-checked, plain or compressed, with a resync
policy for damaged files) and by position through the offset index; scanning a file for its
offsets and writing its index."""

from __future__ import annotations

import io
import logging
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
    normalize_compression,
)
from tfrecordkit.format._crc import _MASK_DELTA
from tfrecordkit.format._filesystem import PathLike, Storage
from tfrecordkit.format._framing import (
    _CRC,
    _HEADER,
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
from tfrecordkit.format._stream import (
    _NO_LIMIT,
    _SNIFF_BYTES,
    DEFAULT_MAX_RECORD_BYTES,
    _discard,
    _is_regular,
    _lines_up,
    _MappedWindow,
    _next_header,
    _Prefixed,
    _read_up_to,
    _shrank,
    _Window,
    sniff_compression,
)

__all__ = ["RecordReader", "build_index", "read_records", "scan_offsets", "sniff_compression"]

logger = logging.getLogger(__name__)


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

    def _open_window(self, start_offset: int) -> tuple[Any, _Window | _MappedWindow]:
        """The record stream opened at ``start_offset`` (a record boundary), and the window
        the scan reads it through."""
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
        return stream, window

    def _lost_tail(self, stats: ReadStats, offset: int, index: int, *, report: bool,
                   left: int, check: CorruptionCheck, detail: str) -> None:
        """The file ends inside a frame: its ``left`` bytes are skipped (and, with
        ``report``, the frame counted as a problem)."""
        if report:
            self._problem(stats, offset, index, check, detail)
            stats.skipped_records += 1
        stats.skipped_bytes += left

    def _close_scan(self, stream: Any, stats: ReadStats) -> None:
        if getattr(stream, "unterminated", False):
            stats.unterminated = True
            logger.warning("%s: the compressed stream has no end marker (its writer is "
                           "still writing, or the file was cut at a flush point)", self.path)
        stream.close()
        if stats.problems and self.log_skipped:
            logger.warning(stats.summary(self.path))

    def _scan(
        self, start_offset: int, *, with_offsets: bool
    ) -> Iterator[bytes | tuple[int, bytes]]:
        """Parse frames from ``start_offset``; yield records (or offset/record pairs)."""
        self.stats = stats = ReadStats()
        stream, window = self._open_window(start_offset)
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
                        self._lost_tail(stats, window.offset(pos), index,
                                        report=bool(left) and resyncing_from < 0, left=left,
                                        check="truncated header",
                                        detail=f"{left} of {HEADER_SIZE} header bytes at end "
                                               f"of file{_shrank(window)}")
                        break
                length, length_crc = header_unpack(view, pos)
                if verify:
                    c = crc(view[pos : pos + 8])
                    if (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF != length_crc:
                        if resyncing_from < 0:
                            first = window.offset(pos) == 0
                            self._problem(stats, window.offset(pos), index, "length crc",
                                          _not_records(bytes(view[pos:end][:64]))
                                          if first else "the length does not match its CRC")
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
                        self._lost_tail(stats, window.offset(pos), index,
                                        report=resyncing_from < 0, left=left,
                                        check="truncated data",
                                        detail=f"header says {length} data bytes, "
                                               f"{max(0, left - HEADER_SIZE)} remain"
                                               + _shrank(window))
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
            self._close_scan(stream, stats)
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
    """Return an ``(n, 2)`` int64 array of each record's frame offset and frame length
    (in the decompressed stream, for a compressed file: one inflate pass)."""
    require_regular_file(path)
    reader = RecordReader(path, compression="auto", verify=verify, storage=storage)
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
    require_regular_file(path)  # before sniffing: opening a FIFO would wait for a writer
    compression = RecordReader(path, storage=storage).compression
    if compression is not None:
        raise IndexUnavailableError(
            f"{os.fspath(path)}: cannot index a {compression}-compressed file: record "
            "offsets inside a compressed stream cannot be seeked to by other readers "
            "(rewrite it uncompressed, or convert it with tfrecordkit, whose compressed "
            "shards carry restart points)")
    offsets = scan_offsets(path, verify=verify, storage=storage)
    write_index(offsets, index_path if index_path is not None else index_path_for(path),
                storage)
    return len(offsets)


_LOOKS_LIKE = ((b"\xff\xd8\xff", "a JPEG image"), (b"\x89PNG\r\n\x1a\n", "a PNG image"),
               (b"GIF8", "a GIF image"), (b"BM", "a BMP image"), (b"PK\x03\x04", "a zip file"),
               (b"PAR1", "a Parquet file"), (b"\x93NUMPY", "a NumPy .npy file"),
               (b"%PDF", "a PDF"), (b"fLaC", "FLAC audio"), (b"\x1f\x8b", "gzip data"),
               (b"\x28\xb5\x2f\xfd", "zstd data"), (b"BZh", "bzip2 data"))


def _not_records(head: bytes) -> str:
    """What to say when a file's very first frame header fails: it is most likely not a
    TFRecord file at all; and what it looks like, when its first bytes tell."""
    what = next((name for magic, name in _LOOKS_LIKE if head.startswith(magic)), None)
    if what is None and head[:4] == b"RIFF" and head[8:12] in (b"WAVE", b"WEBP"):
        what = "WAV audio" if head[8:12] == b"WAVE" else "a WebP image"
    if what is None and head and all(32 <= c < 127 or c in (9, 10, 13) for c in head):
        what = "text (CSV, JSON or similar)"
    looks = f"; it looks like {what}" if what else ""
    return f"not a TFRecord file: its first bytes are no record header{looks}"
