"""Checking stored data end to end: every CRC of every record, and a dataset's shards against
its manifest (present, record counts, file checksums)."""

from __future__ import annotations

import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfrecordkit.errors import TFRecordKitError
from tfrecordkit.format import (
    FRAME_OVERHEAD,
    Inflater,
    RecordReader,
    Restarts,
    Storage,
    file_crc32c,
    parse_index,
    parse_restarts,
)
from tfrecordkit.store._digests import content_digest, read_digests
from tfrecordkit.store._inputs import expand_record_paths
from tfrecordkit.store._load import is_dataset_dir, load_manifest
from tfrecordkit.store._manifest import ShardInfo

__all__ = ["Verification", "verify_file", "verify_paths"]

#: Wraps a file's record iterator (a progress bar, say): ``wrap(records, name)``.
Wrap = Callable[[Iterable[Any], str], Iterable[Any]]


@dataclass
class Verification:
    """What :func:`verify_paths` found.

    Attributes:
        files: per file read, ``{"path", "records", "skipped_records", "problems"}``; each
            problem ``{"offset", "index", "check", "detail", "message"}``.
        manifest_problems: where a dataset's shards disagree with its manifest, one line each.
    """

    files: list[dict[str, Any]] = field(default_factory=list)
    manifest_problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every record and every shard checked out."""
        return not any(f["problems"] for f in self.files) and not self.manifest_problems

    @property
    def problems(self) -> Iterator[str]:
        """Every problem, one line each: the manifest's first, then each file's."""
        yield from self.manifest_problems
        for f in self.files:
            for problem in f["problems"]:
                yield problem["message"]


def _unwrapped(records: Iterable[Any], name: str) -> Iterable[Any]:
    return records


def verify_file(path: str, storage: Storage | None = None,
                wrap: Wrap = _unwrapped, frames: array.array[int] | None = None,
                digests: list[bytes] | None = None) -> dict[str, Any]:
    """Read every record of ``path`` with CRC checks; its counts and problems (and, into
    ``frames``, each record's offset and frame length, as an index lists them; into
    ``digests``, each record's content digest)."""
    # Read through a buffer, not a memory map: a file truncated by another process while it
    # is mapped kills the process with SIGBUS; read() just comes up short, which is reported.
    # Problems are reported by the caller, once each: the reader does not log them too.
    reader = RecordReader(path, on_error="skip", use_mmap=False, storage=storage,
                          log_skipped=False)
    for offset, record in wrap(reader.iter_with_offsets(), path.rsplit("/", 1)[-1]):
        if frames is not None:  # 16 bytes a record, not a Python tuple
            frames.extend((offset, len(record) + FRAME_OVERHEAD))
        if digests is not None:
            digests.append(content_digest(record))
    stats = reader.stats
    problems = [
        {"offset": p.offset, "index": p.index, "check": p.check, "detail": p.detail,
         "message": str(p)}
        for p in stats.problems
    ]
    if stats.unterminated:
        problems.append({"offset": -1, "index": stats.records, "check": "end of stream",
                         "detail": "", "message": f"{path}: the compressed stream has no end "
                         f"marker after {stats.records} records (still being written, or "
                         "cut short)"})
    return {"path": path, "records": stats.records, "skipped_records": stats.skipped_records,
            "problems": problems}


def _against_manifest(dataset: str, files: list[dict[str, Any]], storage: Storage,
                      frames: dict[str, array.array[int]],
                      digests: dict[str, list[bytes]]) -> list[str]:
    """Problems where shards disagree with the manifest: counts, checksums, compressed
    shards' sidecars (against the ``frames`` the records' pass found in each file)."""
    manifest = load_manifest(dataset, storage=storage)
    by_path = {f["path"]: f for f in files}
    problems = []
    for split in manifest.splits.values():
        for shard in split.shards:
            path = storage.join(dataset, shard.file)
            seen = by_path.get(path)
            if seen is None:
                continue
            if not seen["problems"] and seen["records"] != shard.records:
                problems.append(f"{path}: manifest says {shard.records} records, "
                                f"file holds {seen['records']}")
            if not seen["problems"] and manifest.compression is not None:
                found = np.frombuffer(frames.get(path, array.array("q")),
                                      np.int64).reshape(-1, 2)
                problems += _sidecar_problems(dataset, path, shard, manifest.compression,
                                              storage=storage, found=found)
            if not seen["problems"] and shard.digests and path in digests:
                problems += _digest_problems(dataset, shard, storage, digests[path])
            if not shard.crc32c:  # none recorded (a TFDS-prepared folder): nothing to compare
                continue
            checksum = file_crc32c(path, storage=None if storage.local else storage)
            if checksum != shard.crc32c:
                problems.append(f"{path}: file checksum {checksum} differs from the manifest's "
                                f"{shard.crc32c}")
    return problems


def _digest_problems(dataset: str, shard: ShardInfo, storage: Storage,
                     found: list[bytes]) -> list[str]:
    """A shard's ``.digests`` sidecar against its records' contents."""
    assert shard.digests is not None
    sidecar = storage.join(dataset, shard.digests)
    try:
        listed = read_digests(storage, sidecar, len(found))["content"]
    except TFRecordKitError as err:
        return [str(err)]
    differ = np.flatnonzero(listed != np.array(found, dtype="V16"))
    if len(differ):
        return [f"{sidecar}: record {int(differ[0])}'s content digest differs from the "
                f"record's ({len(differ)} differ): the sidecar is not this shard's"]
    return []


def _sidecar_problems(dataset: str, path: str, shard: ShardInfo, compression: str, *,
                      storage: Storage, found: np.ndarray) -> list[str]:
    """A compressed shard's sidecars against its stream: the index line by line against the
    records' frames (``found``), every restart point inflated to the next."""
    problems: list[str] = []
    if shard.index:
        index_file = storage.join(dataset, shard.index)
        text = storage.read_many([index_file])[index_file]
        if text is None:
            return [f"{index_file}: missing ({path} lists it)"]
        try:
            listed = parse_index(text, index_file, record_path=path, stream=True)
        except TFRecordKitError as err:
            return [str(err)]
        if listed.shape != found.shape or not np.array_equal(listed, found):
            differ = [i for i in range(min(len(listed), len(found)))
                      if tuple(listed[i]) != tuple(found[i])]
            where = f"line {differ[0] + 1}" if differ else f"{len(listed)} lines"
            problems.append(f"{index_file}: disagrees with {path} ({where}; the file holds "
                            f"{len(found)} records); rebuild it with `tfrecordkit index`")
    if shard.restarts:
        sidecar = storage.join(dataset, shard.restarts)
        text = storage.read_many([sidecar])[sidecar]
        if text is None:
            return [*problems, f"{sidecar}: missing ({path} lists it)"]
        try:
            points = parse_restarts(text, sidecar, compressed_size=shard.bytes)
            inflater = Inflater(Restarts(compression, (points,)), [path])
            with storage.open(path) as handle:
                def read_at(at: int, n: int) -> bytes:
                    handle.seek(at)
                    return bytes(handle.read(n))

                inflater.check_point(0, len(points) - 1, read_at)
        except TFRecordKitError as err:
            problems.append(str(err))
    return problems


def verify_paths(paths: Sequence[str], storage_options: dict[str, Any] | None = None,
                 wrap: Wrap = _unwrapped) -> Verification:
    """Check record files, globs and dataset directories: every record's CRCs, and each
    dataset's shards against its manifest (missing, record counts, file checksums) and, for
    compressed shards, their index and restart-point sidecars against their streams."""
    result = Verification()
    for arg in paths:
        storage = Storage.of(arg, storage_options)
        if is_dataset_dir(arg, storage):
            manifest = load_manifest(arg, storage=storage)
            on_disk = set(storage.listdir(arg))
            missing = [storage.join(arg, s.file) for sp in manifest.splits.values()
                       for s in sp.shards if s.file not in on_disk]
            result.manifest_problems += [f"{m}: listed in the manifest but missing"
                                         for m in missing]
            present = [p for p in expand_record_paths([arg], storage_options)
                       if p not in missing]
            # Compressed shards' frames, to check their index against (one pass, not two).
            frames: dict[str, array.array[int]] = {}
            digests: dict[str, list[bytes]] = {}
            with_digests = {storage.join(arg, s.file) for sp in manifest.splits.values()
                            for s in sp.shards if s.digests}
            checked = [verify_file(path, storage, wrap, frames.setdefault(path, array.array("q"))
                                   if manifest.compression is not None else None,
                                   digests.setdefault(path, []) if path in with_digests
                                   else None)
                       for path in present]
            result.manifest_problems += _against_manifest(arg, checked, storage, frames,
                                                          digests)
            result.files += checked
        else:
            result.files += [verify_file(path, Storage.of(path, storage_options), wrap)
                             for path in expand_record_paths([arg], storage_options)]
    return result
