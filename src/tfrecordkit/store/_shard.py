"""One shard being written (frames, index, checksums, renamed into place when complete), and a
split's records streamed into shards cut by size."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import crc32c
import numpy as np

from tfrecordkit.format import (
    INDEX_SUFFIX,
    RESTARTS_SUFFIX,
    RecordWriter,
    file_checksums,
    head_crc32c,
)
from tfrecordkit.store._digests import DIGESTS_SUFFIX, RECORD_IDS
from tfrecordkit.store._manifest import ShardInfo
from tfrecordkit.store._naming import shard_name
from tfrecordkit.store._options import ShardOptions
from tfrecordkit.store._write_plan import (
    StreamCut,
)

__all__ = ["write_shard"]

_UNLABELLED = -1


class _ShardFile:
    """One shard being written under a temporary name in the staging folder."""

    def __init__(self, staging: Path, tmp_name: str, *, compression: str | None,
                 index: bool) -> None:
        self.tmp = staging / tmp_name
        self.index_tmp = staging / (tmp_name + INDEX_SUFFIX) if index else None
        # Compressed shards: restart points, so that readers can start anywhere (with the
        # index of decompressed offsets, random access).
        self.restarts_tmp = (staging / (tmp_name + RESTARTS_SUFFIX)
                             if index and compression is not None else None)
        self.compression = compression
        self.writer = RecordWriter(self.tmp, compression, index_path=self.index_tmp,
                                   restarts_path=self.restarts_tmp)
        # Each record's key hash and content digest, in the shard's order.
        self.digests_tmp = staging / (tmp_name + DIGESTS_SUFFIX)
        self.digests = open(self.digests_tmp, "wb", buffering=1 << 16)  # noqa: SIM115
        self.counts: Counter[int] = Counter()
        self.crc = 0

    @property
    def bytes_written(self) -> int:
        return self.writer.bytes_written

    def write_frame(self, frame: bytes | memoryview, label: int, ids: bytes) -> None:
        """One framed record with its class id (or -1) and :data:`RECORD_IDS` bytes."""
        self.writer.write_frame(frame)
        self.digests.write(ids)
        if self.compression is None:
            self.crc = crc32c.crc32c(frame, self.crc)
        self.counts[label] += 1

    def write_frames(self, frames: memoryview, lengths: np.ndarray, labels: np.ndarray,
                     ids: np.ndarray) -> None:
        """Frames lying back to back in ``frames``, with their class ids (or -1) and
        :data:`RECORD_IDS`."""
        self.writer.write_frames(frames, lengths.tolist())
        self.digests.write(np.ascontiguousarray(ids, dtype=RECORD_IDS).tobytes())
        if self.compression is None:
            self.crc = crc32c.crc32c(frames, self.crc)
        ids, counts = np.unique(labels, return_counts=True)
        self.counts.update(dict(zip(ids.tolist(), counts.tolist(), strict=True)))

    def finish(self, directory: Path, name: str) -> ShardInfo:
        """Close the file and rename it (and its index) to ``name`` in ``directory``."""
        self.writer.close()
        self.digests.close()
        # The checksum is of the file's bytes: the frames as written, or the compressed stream.
        if self.compression is None:  # the frames' CRC was kept while writing
            checksum, head_checksum = f"{self.crc:08x}", head_crc32c(self.tmp)
        else:
            checksum, head_checksum = file_checksums(self.tmp)
        size = self.tmp.stat().st_size
        if self.restarts_tmp is not None:
            os.replace(self.restarts_tmp, directory / (name + RESTARTS_SUFFIX))
        if self.index_tmp is not None:
            os.replace(self.index_tmp, directory / (name + INDEX_SUFFIX))
        os.replace(self.digests_tmp, directory / (name + DIGESTS_SUFFIX))
        os.replace(self.tmp, directory / name)
        return ShardInfo(
            file=name, records=self.writer.records_written, bytes=size, crc32c=checksum,
            index=name + INDEX_SUFFIX if self.index_tmp is not None else None,
            restarts=name + RESTARTS_SUFFIX if self.restarts_tmp is not None else None,
            class_counts={str(k): v for k, v in sorted(self.counts.items()) if k != _UNLABELLED},
            head_crc32c=head_checksum, digests=name + DIGESTS_SUFFIX,
        )

    def close(self) -> None:
        """Close the files without finishing (a run that stops)."""
        self.writer.close()
        self.digests.close()


def write_shard(
    frames: Iterable[tuple[bytes | memoryview, int, bytes]],
    directory: Path,
    name: str,
    *,
    staging: Path,
    compression: str | None,
    index: bool,
) -> ShardInfo:
    """Write one whole shard under a temporary name, then rename it into ``directory``.

    ``frames`` are ``(framed record, class id or -1, its RECORD_IDS bytes)``, records already
    framed by :func:`~tfrecordkit.format.frame_record`. Returns the shard's stats.
    """
    shard = _ShardFile(staging, name, compression=compression, index=index)
    for frame, label, ids in frames:
        shard.write_frame(frame, label, ids)
    return shard.finish(directory, name)


class _SplitStream:
    """A split written in input order straight into shards of about ``shard_size`` bytes
    (one pass; used when there is no write-time shuffle and no fixed shard count)."""

    def __init__(self, staging: Path, split: str, options: ShardOptions, part: str = "") -> None:
        self.staging = staging
        self.part = part
        self.split = split
        self.options = options
        self.done: list[_ShardFile] = []
        self.current: _ShardFile | None = None
        self.cut = StreamCut(options.shard_size)

    def _open(self) -> _ShardFile:
        return _ShardFile(self.staging, f"{self.split}.{len(self.done):06d}.stream",
                          compression=self.options.compression, index=self.options.index)

    def write(self, frames: memoryview, lengths: np.ndarray, labels: np.ndarray,
              ids: np.ndarray) -> None:
        offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).tolist()
        for start, stop in self.cut.pieces(lengths):
            if start == stop:
                assert self.current is not None
                self.done.append(self.current)
                self.current = None
                continue
            if self.current is None:
                self.current = self._open()
            self.current.write_frames(frames[offsets[start] : offsets[stop]],
                                      lengths[start:stop], labels[start:stop],
                                      ids[start:stop])

    def finish(self, finish_shard: Callable[[_ShardFile, str], ShardInfo]) -> list[ShardInfo]:
        files = [*self.done, *([self.current] if self.current is not None else [])]
        count = len(files)
        return [finish_shard(shard, shard_name(self.split, i, count, self.options.compression,
                                               part=self.part))
                for i, shard in enumerate(files)]


