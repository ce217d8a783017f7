"""TFRecord framing: length-prefixed records, each with a masked CRC32C of its length and data.

One record on disk is ``uint64 length | uint32 masked_crc(length) | data | uint32 masked_crc(data)``
(little-endian), exactly as TensorFlow's ``tf.io.TFRecordWriter`` writes it.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Literal

import numpy as np

from tfrecordkit.errors import (
    CorruptionCheck,
    CorruptRecordError,
    OptionError,
)
from tfrecordkit.format._columns import RecordSlices
from tfrecordkit.format._compiled import CODEC as _CODEC
from tfrecordkit.format._compression import (
    Compression,
    DeflatingWriter,
    normalize_compression,
)
from tfrecordkit.format._crc import masked_crc32c
from tfrecordkit.format._filesystem import PathLike, Storage

__all__ = [
    "FRAME_OVERHEAD", "ErrorPolicy", "ReadStats", "RecordWriter", "check_frame", "frame_record",
    "split_frames",
]

logger = logging.getLogger(__name__)

ErrorPolicy = Literal["raise", "skip", "warn"]
_POLICIES = ("raise", "skip", "warn")

_HEADER = struct.Struct("<QI")
_CRC = struct.Struct("<I")
_LENGTH = struct.Struct("<Q")
HEADER_SIZE = 12
FOOTER_SIZE = 4
FRAME_OVERHEAD = HEADER_SIZE + FOOTER_SIZE
# Reads past this many bytes at once are split, so a corrupt (unverified) length can't
# make us allocate far more than the file holds.
_MAX_READ = 64 << 20

#: Compressed files: a restart point (a full flush, where inflating can begin afresh) at
#: least every RESTART_EVERY records and before a record that would take the bytes since
#: the last one past RESTART_BYTES, so a random read inflates at most that much. Each costs
#: its deflate history: 512 KiB apart, +0.1% (JPEG records) to +0.4% (270-byte tabular
#: records) in file size against the same stream without them (bench/compressed.py).
RESTART_EVERY = 8192
RESTART_BYTES = 512 << 10


def _frame_header(length: int) -> bytes:
    length_bytes = _LENGTH.pack(length)
    return length_bytes + _CRC.pack(masked_crc32c(length_bytes))


def frame_record(record: bytes | bytearray | memoryview) -> bytes:
    """One record framed as it sits in a file: length, length CRC, data, data CRC."""
    return _frame_header(len(record)) + bytes(record) + _CRC.pack(masked_crc32c(record))


class RecordWriter:
    """Writes records to a TFRecord file, optionally GZIP or ZLIB compressed.

    Uncompressed output is byte-identical to ``tf.io.TFRecordWriter`` for the same records.
    With ``index_path`` the offset index (one ``offset length`` line per record) is written
    alongside, as records are written, so memory stays flat however many records there are;
    offsets of a compressed file are positions in its decompressed stream. With
    ``restarts_path`` (compressed files) a full flush is made every ``restart_every`` records
    or ``restart_bytes`` decompressed bytes (whichever comes first) and listed there, so that
    any record can be read by inflating at most that much; the file stays one valid stream
    for TensorFlow and gzip.

    Example:
        >>> with RecordWriter("data.tfrecord") as writer:  # doctest: +SKIP
        ...     writer.write(b"payload")
    """

    def __init__(
        self,
        path: PathLike,
        compression: str | None = None,
        *,
        compression_level: int = 6,
        index_path: PathLike | None = None,
        restarts_path: PathLike | None = None,
        restart_every: int = RESTART_EVERY,
        restart_bytes: int = RESTART_BYTES,
        buffer_size: int = 1 << 20,
        storage: Storage | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        storage = storage or Storage.of(self.path, storage_options)
        self.compression: Compression = normalize_compression(compression)  # type: ignore[assignment]
        if not 0 <= compression_level <= 9:
            raise OptionError(f"compression_level must be in 0..9; got {compression_level}")
        if restarts_path is not None and self.compression is None:
            raise OptionError(f"{self.path}: restart points are for compressed files only")
        for name, value in (("restart_every", restart_every), ("restart_bytes", restart_bytes)):
            if not isinstance(value, int) or value < 1:
                raise OptionError(f"{name} must be a positive int; got {value!r}")
        if not isinstance(buffer_size, int) or buffer_size < 0:
            raise OptionError(f"buffer_size must be a non-negative int; got {buffer_size!r}")
        self.records_written = 0
        self.bytes_written = 0  # uncompressed framed bytes
        # buffering=1 means line buffering, which binary files do not have: 0 or 1 is unbuffered.
        raw = storage.open(self.path, "wb", buffering=buffer_size if buffer_size > 1 else 0)
        self._stream: BinaryIO = (
            raw
            if self.compression is None
            else DeflatingWriter(raw, self.compression, compression_level)  # type: ignore[assignment]
        )
        self._index = (
            open(os.fspath(index_path), "w", encoding="ascii", buffering=1 << 16)  # noqa: SIM115
            if index_path is not None
            else None
        )
        self._restarts = (
            open(os.fspath(restarts_path), "w", encoding="ascii")  # noqa: SIM115
            if restarts_path is not None
            else None
        )
        self.restart_every, self.restart_bytes = restart_every, restart_bytes
        self._since_restart = (0, 0)  # records, bytes
        self._closed = False

    def _restart_if_due(self, length: int) -> None:
        """Before a record of ``length`` bytes: a restart point if the last one is
        ``restart_every`` records or ``restart_bytes`` behind."""
        records, size = self._since_restart
        if records and (records >= self.restart_every or size + length > self.restart_bytes):
            offset = self._stream.restart()  # type: ignore[attr-defined]
            self._restarts.write(f"{offset} {self.bytes_written}\n")  # type: ignore[union-attr]
            records, size = 0, 0
        self._since_restart = (records + 1, size + length)

    def write(self, record: bytes | bytearray | memoryview) -> None:
        """Append one record."""
        if self._closed:
            raise OptionError(f"write to closed RecordWriter for {self.path}")
        length = len(record)
        stream = self._stream
        if self._restarts is not None:
            self._restart_if_due(length + FRAME_OVERHEAD)
        stream.write(_frame_header(length))
        stream.write(record)
        stream.write(_CRC.pack(masked_crc32c(record)))
        if self._index is not None:
            self._index.write(f"{self.bytes_written} {length + FRAME_OVERHEAD}\n")
        self.records_written += 1
        self.bytes_written += length + FRAME_OVERHEAD

    def write_frame(self, frame: bytes | memoryview) -> None:
        """Append a record already framed by :func:`frame_record` (copied as is)."""
        if self._closed:
            raise OptionError(f"write to closed RecordWriter for {self.path}")
        if self._restarts is not None:
            self._restart_if_due(len(frame))
        self._stream.write(frame)
        if self._index is not None:
            self._index.write(f"{self.bytes_written} {len(frame)}\n")
        self.records_written += 1
        self.bytes_written += len(frame)

    def write_frames(self, frames: bytes | memoryview, lengths: Sequence[int]) -> None:
        """Append records already framed and lying back to back in ``frames``, whose frame
        lengths are ``lengths`` (as :meth:`Schema.encode_frames` gives them)."""
        if self._closed:
            raise OptionError(f"write to closed RecordWriter for {self.path}")
        if self._restarts is None:
            self._write_run(frames, lengths)
            return
        # Runs of records between restart points, each written in one go.
        view, at, i, count = memoryview(frames), 0, 0, len(lengths)
        while i < count:
            self._restart_if_due(lengths[i])
            records, size = self._since_restart
            j = i + 1
            while j < count and records < self.restart_every and (
                    size + lengths[j] <= self.restart_bytes):
                records, size, j = records + 1, size + lengths[j], j + 1
            self._since_restart = (records, size)
            run = sum(lengths[i:j])
            self._write_run(view[at : at + run], lengths[i:j])
            at, i = at + run, j

    def _write_run(self, frames: bytes | memoryview, lengths: Sequence[int]) -> None:
        self._stream.write(frames)
        start = self.bytes_written
        if self._index is not None:
            lines = []
            for length in lengths:
                lines.append(f"{start} {length}\n")
                start += length
            self._index.write("".join(lines))
        self.records_written += len(lengths)
        self.bytes_written += len(frames)

    def write_all(self, records: Iterable[bytes | bytearray | memoryview]) -> None:
        """Append every record of ``records``."""
        for record in records:
            self.write(record)

    def flush(self) -> None:
        """Push buffered bytes to the operating system.

        Raises:
            OptionError: the writer is closed (as TensorFlow's writer refuses it).
        """
        if self._closed:
            raise OptionError(f"flush of a closed RecordWriter for {self.path}")
        self._stream.flush()
        if self._index is not None:
            self._index.flush()
        if self._restarts is not None:
            self._restarts.flush()

    def close(self) -> None:
        """Finish the file (and the compressed stream); idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._stream.close()
        finally:
            if self._index is not None:
                self._index.close()
            if self._restarts is not None:
                self._restarts.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@dataclass
class ReadStats:
    """What a read saw: records yielded, and what was dropped under ``on_error="skip"|"warn"``."""

    records: int = 0
    skipped_records: int = 0
    skipped_bytes: int = 0
    problems: list[CorruptRecordError] = field(default_factory=list)
    unterminated: bool = False  # a compressed stream ended without its end marker

    def summary(self, path: str) -> str:
        """One line saying what was dropped from ``path``."""
        return (
            f"{path}: skipped {self.skipped_records} corrupt record(s) "
            f"({self.skipped_bytes} bytes) in {len(self.problems)} place(s); "
            f"first: {self.problems[0] if self.problems else 'none'}"
        )


def check_frame(frame: bytes, *, path: str, offset: int, index: int = -1,
                verify: bool = True) -> bytes:
    """The record inside one whole frame read at an indexed ``offset``, after its checks.

    Raises:
        CorruptRecordError: the frame is short, its length disagrees with the index, or a
            CRC fails (CRCs only with ``verify``).
    """
    def fail(check: CorruptionCheck, detail: str) -> CorruptRecordError:
        return CorruptRecordError(path, offset, index, check, detail)

    if len(frame) < FRAME_OVERHEAD:
        raise fail("truncated header", f"{len(frame)} bytes at the indexed offset")
    length, length_crc = _HEADER.unpack_from(frame)
    if verify and masked_crc32c(frame[:8]) != length_crc:
        raise fail("length crc", "at the indexed offset (stale index?)")
    if len(frame) != length + FRAME_OVERHEAD:
        raise fail("truncated data", f"index says {len(frame)} bytes, header says {length}")
    record = frame[HEADER_SIZE:-FOOTER_SIZE]
    if verify and masked_crc32c(record) != _CRC.unpack_from(frame, len(frame) - 4)[0]:
        raise fail("data crc", f"{length} data bytes")
    return record


def split_frames(buffer: bytes, starts: np.ndarray, lengths: np.ndarray, *,
                 where: Callable[[int], tuple[str, int]]) -> list[bytes]:
    """The records of the frames at ``starts`` (each ``lengths`` bytes, as indexed) in
    ``buffer`` (what reads of nearby records gave); ``where(k)`` is frame ``k``'s file and
    byte offset there. Every frame is checked as :func:`check_frame` does (by the compiled
    codec when it is built, all in one call).

    Raises:
        CorruptRecordError: a frame is short, its header disagrees with the index, or a CRC
            fails; it names that frame's file and offset.
    """
    starts = np.ascontiguousarray(starts, dtype="<i8")
    lengths = np.ascontiguousarray(lengths, dtype="<i8")
    whole = not len(starts) or int((starts + lengths).max()) <= len(buffer)
    if _CODEC is not None and whole:
        bad = _CODEC.check_frames(buffer, starts, lengths)
        if bad < 0:
            return [buffer[at + HEADER_SIZE : at + n - FOOTER_SIZE]
                    for at, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
        frames: Iterable[int] = [bad]
    else:
        frames = range(len(starts))
    out = []
    for k in frames:  # say exactly what is wrong, and where
        path, offset = where(k)
        at, n = int(starts[k]), int(lengths[k])
        out.append(check_frame(buffer[at : at + n], path=path, offset=offset))
    if _CODEC is not None and whole:  # the codec and check_frame disagree: never pass over
        path, offset = where(bad)
        raise CorruptRecordError(path, offset, -1, "data crc", "the frame failed its checks")
    return out


def frame_slices(buffer: bytes, starts: np.ndarray, lengths: np.ndarray, *,
                 where: Callable[[int], tuple[str, int]]) -> RecordSlices:
    """:func:`split_frames`, checked the same way, as a
    :class:`~tfrecordkit.format.RecordSlices` over ``buffer`` (the records are not copied
    out one by one: the columnar codec reads them where they lie).

    Raises:
        CorruptRecordError: as :func:`split_frames`.
    """
    starts = np.ascontiguousarray(starts, dtype="<i8")
    lengths = np.ascontiguousarray(lengths, dtype="<i8")
    whole = not len(starts) or int((starts + lengths).max()) <= len(buffer)
    if _CODEC is None or not whole or _CODEC.check_frames(buffer, starts, lengths) >= 0:
        raw = buffer if isinstance(buffer, bytes) else memoryview(buffer).tobytes()
        split_frames(raw, starts, lengths, where=where)  # raises, naming the frame
    return RecordSlices(buffer, starts + HEADER_SIZE, lengths - HEADER_SIZE - FOOTER_SIZE)


def _check_policy(on_error: str) -> None:
    if on_error not in _POLICIES:
        raise OptionError(f"on_error must be one of {_POLICIES}; got {on_error!r}")
