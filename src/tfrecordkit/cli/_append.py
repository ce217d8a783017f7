"""``tfrecordkit append``: new inputs into new shards of an existing dataset."""

from __future__ import annotations

import argparse
import json

from tfrecordkit.cli._convert import add_source_arguments, source_from
from tfrecordkit.convert import SOURCE_KINDS, append


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "append", help="add inputs to a dataset as new shards (splits by key, classes by name)",
        description="Add SRC's inputs to the dataset DATASET as new shards: each goes to the "
                    "split the dataset's rule gives its key (as converting everything at once "
                    "would), known classes keep their ids and new ones get the next ids, "
                    "inputs already in the dataset (same key, same content) are left out, and "
                    "dataset.json is replaced last, so a failed or killed append leaves the "
                    "dataset as it was (run it again to finish).")
    parser.add_argument("dataset", help="the dataset directory, or a URL (s3://bucket/ds)")
    parser.add_argument("src", help="image/audio class folder, table, .txt, .npy/.npz, COCO "
                                    "instances .json or a folder in COCO's layout; or splits "
                                    "and their sources: train=a.json,val=b.json")
    parser.add_argument("--source", choices=SOURCE_KINDS, help="source type (default: inferred)")
    parser.add_argument("--split", default=None,
                        help="put every new record in this split, one the dataset has (default: "
                             "the dataset's own split rule, by key)")
    parser.add_argument("--new-split", action="store_true",
                        help="let --split name a split the dataset does not have yet")
    parser.add_argument("--no-dedupe", action="store_true",
                        help="append to a dataset whose shards keep no record digests (older "
                             "or adopted), re-adding inputs it may hold already")
    parser.add_argument("--workers", type=int, default=None,
                        help="encoding processes (default: all cores)")
    parser.add_argument("--engine", choices=["local", "ray"], default="local",
                        help="local processes (default) or a Ray cluster (extra 'ray')")
    parser.add_argument("--ray-address", default=None, metavar="ADDR",
                        help="the Ray cluster to join (default: RAY_ADDRESS, else a local one)")
    parser.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                        help="stop at the first bad input, or skip and list it (default raise)")
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    source = source_from(args)
    if args.engine == "ray":
        import ray

        ray.init(address=args.ray_address, log_to_driver=False, ignore_reinit_error=True)
    result = append(args.dataset, source, split=args.split, new_split=args.new_split,
                    dedupe=not args.no_dedupe, workers=args.workers,
                    engine=args.engine, on_error=args.on_error, progress=not args.quiet,
                    storage_options=args.storage_options)
    print(json.dumps(result.to_json(), indent=2) if args.json else result.summary())
    return 0
