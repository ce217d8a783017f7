"""``tfrecordkit export``: hand a dataset to another library in its own format."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from tfrecordkit.exporters import TARGETS

    parser = subparsers.add_parser(
        "export", help="write a dataset in another library's format, every value kept: "
                       + "; ".join(f"{t.name}: {t.description}" for t in TARGETS.values()))
    parser.add_argument("path", help="a dataset directory (a path or a URL)")
    parser.add_argument("--to", required=True, choices=tuple(TARGETS),
                        help="the target format")
    parser.add_argument("out", help="the output folder: new, empty, or an earlier export "
                                    "(with --overwrite); staged beside it, moved in when done")
    parser.add_argument("--split", default=None,
                        help="one split or split expression (default: every split)")
    parser.add_argument("--rows-per-file", type=int, default=10_000,
                        help="records per tar or Parquet file (default 10000)")
    parser.add_argument("--boxes", choices=("fractions", "coco"), default="fractions",
                        help="a Boxes feature as every reader gives it (fractions, the "
                             "default) or in Hugging Face's detection layout: 'objects' of "
                             "COCO pixel [x, y, w, h] boxes and categories, image width and "
                             "height (coco)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an earlier export at OUT (never a folder of other files)")
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tfrecordkit.exporters import export

    result = export(args.path, args.out, to=args.to, split=args.split,
                    rows_per_file=args.rows_per_file, overwrite=args.overwrite,
                    progress=not args.quiet, storage_options=args.storage_options,
                    boxes=args.boxes)
    if args.json:
        print(json.dumps({"target": result.target, "out": result.out,
                          "records": result.records, "files": result.files}))
    else:
        counts = ", ".join(f"{split}: {n}" for split, n in result.records.items())
        print(f"{result.out}: {result.target}, {counts} records, {len(result.files)} files")
    return 0
