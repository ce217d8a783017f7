"""``tfrecordkit show``: write a grid of a dataset's images (or a table of its records)."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "show", help="write a PNG grid of records' images, captioned with their labels")
    parser.add_argument("path", help="a dataset directory, record files / a glob, or a URL")
    parser.add_argument("--split", default="train", help="the split (default train)")
    parser.add_argument("-n", type=int, default=16, help="how many records (default 16)")
    parser.add_argument("--seed", type=int, default=None,
                        help="a uniform sample of the split, seeded (default: the first n)")
    parser.add_argument("--image", default=None, help="the image or audio feature to show")
    parser.add_argument("--out", required=True, help="the PNG file to write")
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tfrecordkit.look import show_examples

    grid = show_examples(args.path, args.split, args.n, image=args.image, seed=args.seed,
                         storage_options=args.storage_options)
    grid.save(args.out, format="PNG")
    if args.json:
        print(json.dumps({"out": args.out, "width": grid.width, "height": grid.height}))
    else:
        print(f"{args.out}: {grid.width}x{grid.height}")
    return 0
