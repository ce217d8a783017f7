"""``tfrecordkit verify``: check every CRC of every record; one line per problem."""

from __future__ import annotations

import argparse
import json

from tfrecordkit.cli._progress import progress
from tfrecordkit.format import Storage
from tfrecordkit.store import find_duplicates, is_dataset_dir, verify_paths


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "verify", help="check both CRCs of every record; exit 1 if any record is corrupt"
    )
    parser.add_argument("paths", nargs="+", help="record files, globs or dataset directories")
    parser.add_argument("--duplicates", action="store_true",
                        help="also list records whose content appears more than once in a "
                             "dataset, within a split or across splits (train/test leakage)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = verify_paths(args.paths, args.storage_options,
                          lambda records, name: progress(records, quiet=args.quiet, desc=name))
    files, manifest_problems = result.files, result.manifest_problems
    ok = not any(f["problems"] for f in files) and not manifest_problems
    duplicates = ({path: find_duplicates(path, storage_options=args.storage_options)
                   for path in args.paths if is_dataset_dir(path, Storage.of(
                       path, args.storage_options))} if args.duplicates else {})
    if args.json:
        print(json.dumps({"ok": ok, "files": files, "manifest_problems": manifest_problems,
                          **({"duplicates": {path: found.to_json()
                                             for path, found in duplicates.items()}}
                             if args.duplicates else {})}, indent=2))
    else:
        for problem in manifest_problems:
            print(problem)
        for f in files:
            if f["problems"]:
                for problem in f["problems"]:
                    print(problem["message"])
            else:
                print(f"{f['path']}: OK, {f['records']} records")
        for path, found in duplicates.items():
            for line in found.lines():
                print(f"{path}: {line}")
    return 0 if ok else 1
