"""``tfrecordkit report``: write one self-contained HTML page describing a dataset."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "report", help="write an HTML report: schema, splits, shards, class histograms, "
                       "sizes, example images per class")
    parser.add_argument("path", help="a dataset directory, record files / a glob, or a URL")
    parser.add_argument("--out", required=True, help="the HTML file to write")
    parser.add_argument("--split", default=None,
                        help="the split to sample (default: train, else the first)")
    parser.add_argument("--sample", type=int, default=256,
                        help="records sampled for sizes and examples (default 256)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the sample (default 0)")
    parser.add_argument("--verify", action="store_true",
                        help="also check every record's CRCs and the shards (reads everything)")
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tfrecordkit.look import dataset_report

    page = dataset_report(args.path, args.split, sample=args.sample, seed=args.seed,
                          verify=args.verify, storage_options=args.storage_options)
    Path(args.out).write_text(page, encoding="utf-8")
    size = len(page.encode("utf-8"))
    if args.json:
        print(json.dumps({"out": args.out, "bytes": size}))
    else:
        print(f"{args.out}: {size / 1e3:,.0f} kB; open it in a browser")
    return 0
