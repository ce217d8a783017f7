"""Fetching records by location with a bounded number of open files."""

from __future__ import annotations

import os
from collections import OrderedDict

import numpy as np

from tfrecordkit.format import check_frame
from tfrecordkit.sampling._class_index import ClassIndex

__all__ = ["RecordFetcher"]


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
            out[i] = check_frame(os.pread(fd, length, offset), path=index.files[shard],
                                 offset=offset)
        return out

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
