"""Checking stored data end to end: every CRC of every record, and a dataset's shards against
its manifest (present, record counts, file checksums)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tfrecordkit.format import RecordReader, Storage, file_crc32c
from tfrecordkit.store._inputs import expand_record_paths
from tfrecordkit.store._manifest import is_dataset_dir, load_manifest

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
                wrap: Wrap = _unwrapped) -> dict[str, Any]:
    """Read every record of ``path`` with CRC checks; its counts and problems."""
    # Read through a buffer, not a memory map: a file truncated by another process while it
    # is mapped kills the process with SIGBUS; read() just comes up short, which is reported.
    # Problems are reported by the caller, once each: the reader does not log them too.
    reader = RecordReader(path, on_error="skip", use_mmap=False, storage=storage,
                          log_skipped=False)
    for _ in wrap(reader, path.rsplit("/", 1)[-1]):
        pass
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


def _against_manifest(dataset: str, files: list[dict[str, Any]],
                      storage: Storage) -> list[str]:
    """Problems where shards disagree with the manifest: counts, checksums."""
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
            if not shard.crc32c:  # none recorded (a TFDS-prepared folder): nothing to compare
                continue
            checksum = file_crc32c(path, storage=None if storage.local else storage)
            if checksum != shard.crc32c:
                problems.append(f"{path}: file checksum {checksum} differs from the manifest's "
                                f"{shard.crc32c}")
    return problems


def verify_paths(paths: Sequence[str], storage_options: dict[str, Any] | None = None,
                 wrap: Wrap = _unwrapped) -> Verification:
    """Check record files, globs and dataset directories: every record's CRCs, and each
    dataset's shards against its manifest (missing, record counts, file checksums)."""
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
            checked = [verify_file(path, storage, wrap) for path in present]
            result.manifest_problems += _against_manifest(arg, checked, storage)
            result.files += checked
        else:
            result.files += [verify_file(path, Storage.of(path, storage_options), wrap)
                             for path in expand_record_paths([arg], storage_options)]
    return result
