"""Fetching records by location with a bounded number of open files."""

from __future__ import annotations

import os
import struct
from collections import OrderedDict

import numpy as np

from tfrecordkit.errors import CorruptRecordError
from tfrecordkit.format._crc import masked_crc32c
from tfrecordkit.sampling._class_index import ClassIndex

__all__ = ["RecordFetcher"]

_HEADER = struct.Struct("<QI").unpack_from
_CRC = struct.Struct("<I").unpack_from


class RecordFetcher:
    """Reads records at :class:`ClassIndex` positions, both CRCs checked.

    At most ``max_open_files`` files are open at once (least recently used are closed), so
    10,000 class files never mean 10,000 descriptors. Reads within a batch go in file order.
    """

    def __init__(self, index: ClassIndex, max_open_files: int = 64) -> None:
        if max_open_files < 1:
            raise ValueError(f"max_open_files must be positive; got {max_open_files}")
        self.index = index
        self.max_open_files = max_open_files
        self._open: OrderedDict[int, int] = OrderedDict()  # shard -> fd
        self.peak_open_files = 0

    def _fd(self, shard: int) -> int:
        fd = self._open.get(shard)
        if fd is not None:
            self._open.move_to_end(shard)
            return fd
        if len(self._open) >= self.max_open_files:
            _, oldest = self._open.popitem(last=False)
            os.close(oldest)
        fd = os.open(self.index.files[shard], os.O_RDONLY)
        self._open[shard] = fd
        self.peak_open_files = max(self.peak_open_files, len(self._open))
        return fd

    def fetch(self, positions: np.ndarray) -> list[bytes]:
        """The records at ``positions`` (in that order)."""
        index = self.index
        shards, offsets = index.shard[positions], index.offset[positions]
        lengths = index.length[positions]
        order = np.lexsort((offsets, shards))
        out: list[bytes] = [b""] * len(positions)
        rows = zip(order.tolist(), shards[order].tolist(), offsets[order].tolist(),
                   lengths[order].tolist(), strict=True)
        fd, current = -1, -1
        for i, shard, offset, length in rows:
            if shard != current:
                fd, current = self._fd(shard), shard
            out[i] = self._check(os.pread(fd, length, offset), shard, offset)
        return out

    def _check(self, frame: bytes, shard: int, offset: int) -> bytes:
        length, length_crc = _HEADER(frame, 0) if len(frame) >= 16 else (-1, 0)
        data = frame[12:-4]
        if (length != len(data) or masked_crc32c(frame[:8]) != length_crc
                or masked_crc32c(data) != _CRC(frame, len(frame) - 4)[0]):
            raise self._corrupt(frame, shard, offset)
        return data

    def _corrupt(self, frame: bytes, shard: int, offset: int) -> CorruptRecordError:
        path = self.index.files[shard]
        if len(frame) < 16:
            return CorruptRecordError(path, offset, -1, "truncated data", "at the indexed offset")
        if masked_crc32c(frame[:8]) != _CRC(frame, 8)[0]:
            return CorruptRecordError(path, offset, -1, "length crc", "at the indexed offset")
        return CorruptRecordError(path, offset, -1, "data crc", f"{len(frame) - 16} data bytes")

    def close(self) -> None:
        """Close every open file."""
        for fd in self._open.values():
            os.close(fd)
        self._open.clear()

    def __enter__(self) -> RecordFetcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()
