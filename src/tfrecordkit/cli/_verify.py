"""``tfrecordkit verify``: check every CRC of every record; one line per problem."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tfrecordkit.cli._progress import progress
from tfrecordkit.format import RecordReader, Storage, file_crc32c
from tfrecordkit.store import expand_record_paths, is_dataset_dir, load_manifest


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "verify", help="check both CRCs of every record; exit 1 if any record is corrupt"
    )
    parser.add_argument("paths", nargs="+", help="record files, globs or dataset directories")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def verify_file(path: str, quiet: bool, storage: Storage | None = None) -> dict[str, Any]:
    """Read every record of ``path`` with CRC checks; return counts and problems."""
    # Read through a buffer, not a memory map: a file truncated by another process while it
    # is mapped kills the process with SIGBUS; read() just comes up short, which is reported.
    # Problems are printed below, once each: the reader does not log them too.
    reader = RecordReader(path, on_error="skip", use_mmap=False, storage=storage,
                          log_skipped=False)
    for _ in progress(reader, quiet=quiet, desc=path.rsplit("/", 1)[-1]):
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


def check_against_manifest(dataset: str, files: list[dict[str, Any]],
                           storage: Storage) -> list[str]:
    """Problems where shards disagree with the manifest: missing, counts, checksums."""
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
            checksum = file_crc32c(path, storage=None if storage.local else storage)
            if checksum != shard.crc32c:
                problems.append(f"{path}: file checksum {checksum} differs from the manifest's "
                                f"{shard.crc32c}")
    return problems


def run(args: argparse.Namespace) -> int:
    files = []
    manifest_problems: list[str] = []
    options = args.storage_options
    for arg in args.paths:
        storage = Storage.of(arg, options)
        if is_dataset_dir(arg, storage):
            manifest = load_manifest(arg, storage=storage)
            on_disk = set(storage.listdir(arg))
            missing = [storage.join(arg, s.file) for sp in manifest.splits.values()
                       for s in sp.shards if s.file not in on_disk]
            manifest_problems += [f"{m}: listed in the manifest but missing" for m in missing]
            present = [p for p in expand_record_paths([arg], options) if p not in missing]
            checked = [verify_file(path, args.quiet, storage) for path in present]
            manifest_problems += check_against_manifest(arg, checked, storage)
            files += checked
        else:
            files += [verify_file(path, args.quiet, Storage.of(path, options))
                      for path in expand_record_paths([arg], options)]
    ok = not any(f["problems"] for f in files) and not manifest_problems
    if args.json:
        print(json.dumps({"ok": ok, "files": files, "manifest_problems": manifest_problems},
                         indent=2))
    else:
        for problem in manifest_problems:
            print(problem)
        for f in files:
            if f["problems"]:
                for problem in f["problems"]:
                    print(problem["message"])
            else:
                print(f"{f['path']}: OK, {f['records']} records")
    return 0 if ok else 1
