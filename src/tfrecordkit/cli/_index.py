"""``tfrecordkit index``: write the ``<file>.index`` offset sidecar of record files."""

from __future__ import annotations

import argparse
import json

from tfrecordkit.format import Storage, build_index, index_path_for
from tfrecordkit.store import expand_record_paths


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "index", help="write <file>.index (one 'offset length' line per record)"
    )
    parser.add_argument("paths", nargs="+", help="uncompressed record files, globs or directories")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    results = []
    for path in expand_record_paths(args.paths, args.storage_options):
        records = build_index(path, storage=Storage.of(path, args.storage_options))
        results.append({"path": path, "index": index_path_for(path), "records": records})
    if args.json:
        print(json.dumps({"files": results}, indent=2))
    else:
        for r in results:
            print(f"{r['index']}: {r['records']} records")
    return 0
