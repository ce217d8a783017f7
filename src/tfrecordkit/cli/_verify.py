"""``tfrecordkit verify``: check every CRC of every record; one line per problem."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from tfrecordkit.cli._inputs import expand_record_paths
from tfrecordkit.cli._progress import progress
from tfrecordkit.format import RecordReader


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "verify", help="check both CRCs of every record; exit 1 if any record is corrupt"
    )
    parser.add_argument("paths", nargs="+", help="record files, globs or dataset directories")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def verify_file(path: str, quiet: bool) -> dict[str, Any]:
    """Read every record of ``path`` with CRC checks; return counts and problems."""
    reader = RecordReader(path, on_error="skip")
    for _ in progress(reader, quiet=quiet, desc=os.path.basename(path)):
        pass
    stats = reader.stats
    return {
        "path": path,
        "records": stats.records,
        "skipped_records": stats.skipped_records,
        "problems": [
            {"offset": p.offset, "index": p.index, "check": p.check, "detail": p.detail,
             "message": str(p)}
            for p in stats.problems
        ],
    }


def run(args: argparse.Namespace) -> int:
    files = [verify_file(path, args.quiet) for path in expand_record_paths(args.paths)]
    ok = not any(f["problems"] for f in files)
    if args.json:
        print(json.dumps({"ok": ok, "files": files}, indent=2))
    else:
        for f in files:
            if f["problems"]:
                for problem in f["problems"]:
                    print(problem["message"])
            else:
                print(f"{f['path']}: OK, {f['records']} records")
    return 0 if ok else 1
