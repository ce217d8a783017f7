"""``tfrecordkit adopt``: make TFRecord files another tool wrote a dataset (``dataset.json``
and ``.index`` files), without rewriting them."""

from __future__ import annotations

import argparse
import json

from tfrecordkit.store import adopt


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "adopt", help="write dataset.json and .index files for existing TFRecord files")
    parser.add_argument("paths", nargs="+", help="record files, globs or a directory")
    parser.add_argument("--out", help="the dataset directory (default: the files' folder; "
                                      "files elsewhere are hard-linked or copied in)")
    parser.add_argument("--split", default="train",
                        help="the split the files form (a new split, when --out already "
                             "holds a dataset)")
    parser.add_argument("--label-feature", help="the int64 class-id feature (default: one "
                                                "named label, labels, class, target or y)")
    parser.add_argument("--class-names", help="comma-separated names of classes 0..n-1")
    parser.add_argument("--class-pattern", metavar="REGEX",
                        help="records without a label, one class per file: a regular "
                             "expression whose group (or match) in each file name is its "
                             "class, e.g. 'class_(\\d+)'; readers give every record its "
                             "file's class")
    parser.add_argument("--overwrite", action="store_true", help="replace dataset.json")
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    manifest = adopt(
        args.paths, args.out, split=args.split, label_feature=args.label_feature,
        class_names=args.class_names.split(",") if args.class_names else None,
        class_pattern=args.class_pattern,
        overwrite=args.overwrite, storage_options=args.storage_options)
    split = manifest.splits[args.split]
    if args.json:
        print(json.dumps(manifest.to_json(), indent=2))
    else:
        classes = f", {len(split.class_counts)} classes" if split.class_counts else ""
        print(f"adopted {len(split.shards)} file(s) as split {args.split!r}: {split.records} "
              f"records, {split.bytes / 1e6:.1f} MB{classes}, layout {manifest.layout}")
        for name, feature in manifest.schema.items():
            print(f"  {name}: {feature.to_json()}")
    return 0
