"""The offset index: a text sidecar with one ``offset length`` line per record.

``length`` is the whole frame (header, data and footer), the layout DALI's ``tfrecord2idx``
and other readers' index tools use, so their indexes and ours are interchangeable.
"""

from __future__ import annotations

import os
import stat

import numpy as np

from tfrecordkit.errors import DatasetError, IndexUnavailableError
from tfrecordkit.format._crc import masked_crc32c
from tfrecordkit.format._filesystem import PathLike, Storage, is_remote

FRAME_OVERHEAD = 16  # length (8) + length CRC (4) + data CRC (4)

__all__ = ["INDEX_SUFFIX", "check_index_frames", "index_path_for", "load_index", "parse_index",
           "require_regular_file", "write_index"]

INDEX_SUFFIX = ".index"


def index_path_for(path: PathLike) -> str:
    """Return the conventional index path of a record file: ``<path>.index``."""
    return os.fspath(path) + INDEX_SUFFIX


def require_regular_file(path: PathLike) -> None:
    """Refuse random access (and index sidecars) for anything but a regular local file.

    Raises:
        IndexUnavailableError: ``path`` is a pipe, FIFO, device or directory.
    """
    text = os.fspath(path)
    if is_remote(text):
        return
    try:
        mode = os.stat(text).st_mode
    except OSError:
        return  # opening it reports the problem
    if not stat.S_ISREG(mode):
        raise IndexUnavailableError(f"{text}: not a regular file (a pipe or device?); it can "
                                    "only be read from start to end, not indexed")






def write_index(offsets: np.ndarray, index_path: PathLike, storage: Storage) -> None:
    """Write ``(n, 2)`` frame offsets and lengths as an index file (``offset length`` lines)."""
    text = "".join(f"{offset} {length}\n" for offset, length in offsets.tolist())
    storage.write_bytes(os.fspath(index_path), text.encode("ascii"))


def load_index(index_path: PathLike, *, record_path: PathLike | None = None,
               storage: Storage | None = None) -> np.ndarray:
    """Read an index file into an ``(n, 2)`` int64 array, checked against ``record_path``
    (coverage of its bytes and the frame headers at a few offsets)."""
    index_path = os.fspath(index_path)
    storage = storage or Storage.of(index_path)
    text = storage.read_bytes(index_path)
    size = storage.size(record_path) if record_path is not None else None
    offsets = parse_index(text, index_path, record_path=record_path, record_size=size)
    if record_path is not None:
        check_index_frames(offsets, index_path, record_path, storage)
    return offsets


def _stale(index_path: str, record_path: PathLike | None, why: str) -> DatasetError:
    file = os.fspath(record_path) if record_path is not None else "its record file"
    return DatasetError(f"{index_path}: index does not match {file} ({why}); rebuild it with "
                        f"`tfrecordkit index {file}`")


def parse_index(text: bytes, index_path: PathLike, *, record_path: PathLike | None = None,
                record_size: int | None = None, stream: bool = False) -> np.ndarray:
    """An index file's bytes as an ``(n, 2)`` int64 array, checked to cover the record file
    of ``record_size`` bytes exactly, frame after frame (when given): an empty index of a
    non-empty file, a missing line or a foreign index is refused, never read as fewer records.
    ``stream=True`` (a compressed file's index, whose offsets are in the decompressed stream
    of unknown length): frames checked to follow each other from 0 (a swapped, repeated,
    negative or shifted line is refused); each frame is checked where it is read.

    Raises:
        DatasetError: the text is not an index, or it does not cover the file exactly.
    """
    index_path = os.fspath(index_path)
    try:
        values = np.array(text.split(), dtype=np.int64)
    except (ValueError, OverflowError) as err:
        raise DatasetError(f"{index_path}: not an offset index ({err}); rebuild it with "
                           "`tfrecordkit index`") from None
    if values.size % 2:
        raise DatasetError(f"{index_path}: odd number of values; expected 'offset length' lines")
    offsets = values.reshape(-1, 2)
    if record_size is None:
        if stream:
            check_contiguous(offsets, index_path, record_path)
        return offsets
    if not len(offsets):
        if record_size:
            raise _stale(index_path, record_path,
                         f"the index lists no records, the file has {record_size} bytes")
        return offsets
    if int(offsets[:, 1].min()) < FRAME_OVERHEAD or int(offsets[:, 0].min()) < 0:
        raise _stale(index_path, record_path, "an offset or frame length is impossible")
    ends = offsets[:, 0] + offsets[:, 1]
    contiguous = bool(np.all(offsets[1:, 0] == ends[:-1])) and offsets[0, 0] == 0
    if not contiguous or int(ends[-1]) != record_size:
        raise _stale(index_path, record_path,
                     f"covers {int(ends[-1])} of {record_size} bytes, contiguous={contiguous}")
    return offsets


def check_contiguous(offsets: np.ndarray, index_path: PathLike,
                     record_path: PathLike | None) -> None:
    """Frames of at least 16 bytes, each starting where the one before it ends, the first at
    0.

    Raises:
        DatasetError: naming the index, the first line at fault and ``tfrecordkit index``.
    """
    if not len(offsets):
        return
    ends = offsets[:, 0] + offsets[:, 1]
    starts = np.concatenate([[0], ends[:-1]])
    bad = np.flatnonzero((offsets[:, 0] != starts) | (offsets[:, 1] < FRAME_OVERHEAD))
    if bad.size:
        line = int(bad[0])
        raise _stale(os.fspath(index_path), record_path,
                     f"line {line + 1} says a frame of {int(offsets[line, 1])} bytes at offset "
                     f"{int(offsets[line, 0])}; frames follow each other from 0, so it must "
                     f"start at {int(starts[line])}")


def check_index_frames(offsets: np.ndarray, index_path: PathLike, record_path: PathLike,
                       storage: Storage) -> None:
    """Check that frames start where the index says: a valid length header at the first,
    middle and last offsets gives the index's frame length (a header failing its CRC is
    left to the record's own read, which reports the corruption).

    Raises:
        DatasetError: a header disagrees (the index of another file, or a stale one).
    """
    if not len(offsets):
        return
    path = os.fspath(record_path)
    rows = sorted({0, len(offsets) // 2, len(offsets) - 1})
    starts = [int(offsets[r, 0]) for r in rows]
    heads = storage.read_spans([(path, start, start + 12) for start in starts])
    for row, head in zip(rows, heads, strict=True):
        if len(head) < 12 or masked_crc32c(head[:8]) != int.from_bytes(head[8:12], "little"):
            continue  # not a frame header: corruption (or an offset mid-frame), which the
            # read of that record reports with its CRC check
        length = int.from_bytes(head[:8], "little")
        if length + FRAME_OVERHEAD != int(offsets[row, 1]):
            raise _stale(os.fspath(index_path), path,
                         f"no frame of {int(offsets[row, 1])} bytes at offset "
                         f"{int(offsets[row, 0])}, line {row + 1}")
