"""``tfrecordkit convert``: a folder, table, text or array file into a sharded dataset."""

from __future__ import annotations

import argparse
import json
import os
import re

from tfrecordkit.convert import SOURCE_KINDS, convert, infer_kind, open_source
from tfrecordkit.errors import OptionError
from tfrecordkit.sources import IMAGE_OPTIONS, Source
from tfrecordkit.store import ShardOptions

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "B": 1, "K": 1e3, "KB": 1e3, "KIB": 2**10, "M": 1e6, "MB": 1e6, "MIB": 2**20,
          "G": 1e9, "GB": 1e9, "GIB": 2**30, "T": 1e12, "TB": 1e12, "TIB": 2**40}


def parse_size(text: str) -> int:
    """``"256MiB"`` → 268435456; accepts B, KB/KiB, MB/MiB, GB/GiB, TB/TiB."""
    match = _SIZE.fullmatch(text)
    unit = (match.group(2) or "").upper() if match else None
    if match is None or unit not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 256MiB, 1GB)")
    return int(float(match.group(1)) * _UNITS[unit])


_WITH_PROVENANCE = ("image-folder", "audio-folder", "table", "coco")


def parse_split(text: str) -> str | dict[str, float]:
    """``"train"`` or ``"train=0.9,val=0.1"``."""
    if "=" not in text:
        return text
    ratios = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        try:
            ratios[name.strip()] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad split ratio {part!r}") from None
    return ratios


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("convert", help="convert a dataset into TFRecord shards")
    parser.add_argument("src", help="image/audio class folder, table, .txt, .npy/.npz, COCO "
                                    "instances .json or a folder in COCO's layout; or splits "
                                    "and their sources: train=a.json,val=b.json")
    parser.add_argument("out", help="output dataset directory, or a URL (s3://bucket/ds)")
    parser.add_argument("--source", choices=SOURCE_KINDS, help="source type (default: inferred)")
    parser.add_argument("--layout", choices=("mixed", "per-class"), default="mixed")
    parser.add_argument("--split", type=parse_split, default="train",
                        help="split name, or ratios like train=0.9,val=0.1 (default: train)")
    sizing = parser.add_mutually_exclusive_group()
    sizing.add_argument("--shard-size", type=parse_size, default=None,
                        help="target shard size, e.g. 256MiB (default 192MiB)")
    sizing.add_argument("--num-shards", type=int, default=None, help="shards per split (class)")
    parser.add_argument("--min-shards", type=int, default=1,
                        help="at least this many shards per split, e.g. reader workers")
    parser.add_argument("--compression", choices=("none", "gzip", "zlib"), default="none")
    parser.add_argument("--workers", type=int, default=None,
                        help="encoding processes (default: all cores)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine", choices=["local", "ray"], default="local",
                        help="local processes (default) or a Ray cluster (extra 'ray')")
    parser.add_argument("--ray-address", default=None, metavar="ADDR",
                        help="the Ray cluster to join (default: RAY_ADDRESS, else a local one)")
    parser.add_argument("--no-shuffle", action="store_true", help="keep input order")
    stratifying = parser.add_mutually_exclusive_group()
    stratifying.add_argument("--stratify", action="store_true",
                             help="exact per-class split counts (counted in input order: "
                                  "inputs move between splits when the data grows)")
    stratifying.add_argument("--no-stratify", action="store_true",
                             help="each input's split from its key and the seed alone "
                                  "(the default; stable as the data grows)")
    parser.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                        help="stop at the first bad input, or skip and list it (default raise)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(func=run)


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of how a source is read (``convert`` and ``append``)."""
    for option in IMAGE_OPTIONS:  # every image source takes them (ImageOptions)
        parser.add_argument(option.flag, dest=option.name, default=None, help=option.help,
                            **option.argparse)
    folders = parser.add_mutually_exclusive_group()
    folders.add_argument("--split-folders", dest="split_folders", action="store_const",
                         const=True, default=None,
                         help="the top folders are splits: root/<split>/<class>/<file> "
                              "(default: when every top folder is a split name such as "
                              "train, val, test)")
    folders.add_argument("--no-split-folders", dest="split_folders", action="store_const",
                         const=False, help="every top folder is a class, even one named "
                                           "train, val or test")
    parser.add_argument("--key", default=None, metavar="COLUMN",
                        help="a table's column identifying each row (splits and appends "
                             "go by it; default: the row number)")
    parser.add_argument("--no-provenance", action="store_true",
                        help="don't store each record's input (its path under a folder, or "
                             "table:row) as __source")
    parser.add_argument("--images", default=None, metavar="DIR",
                        help="COCO: the folder the annotations' file names are relative to "
                             "(default: COCO's layout, <split>/ beside the annotations' "
                             "folder for annotations/instances_<split>.json, when it exists; "
                             "else the .json file's folder)")


#: ``SRC`` naming splits and their sources: ``train=a.json,val=b.json``.
_SPLITS_ARG = re.compile(r"[A-Za-z0-9_.-]+=[^,]+(,[A-Za-z0-9_.-]+=[^,]+)*")


def source_paths(src: str) -> str | dict[str, str]:
    """``src`` as a path, or as splits and their paths (``train=a.json,val=b.json``, when no
    file of that name exists)."""
    if os.path.exists(src) or not _SPLITS_ARG.fullmatch(src):
        return src
    return dict(part.split("=", 1) for part in src.split(","))


def source_from(args: argparse.Namespace) -> Source:
    """The source ``args`` describe (see :func:`add_source_arguments`)."""
    kind = args.source
    src = source_paths(args.src)
    first = src if isinstance(src, str) else next(iter(src.values()))
    options = _image_options(args, kind, first)
    if args.no_provenance and (kind or infer_kind(first)) in _WITH_PROVENANCE:
        options["provenance"] = False
    given = {"splits": args.split_folders, "images": args.images, "key": args.key}
    options.update({name: value for name, value in given.items() if value is not None})
    return open_source(src, kind, **options)


#: Sources that read images, and so take the image options.
_IMAGE_SOURCES = ("image-folder", "table", "coco")


def _image_options(args: argparse.Namespace, kind: str | None, src: str) -> dict[str, object]:
    """The image options given on the command line, for a source that reads images.

    Raises:
        OptionError: one given for a source without images (naming the flag and the source).
    """
    given = {o.name: o.value(getattr(args, o.name)) for o in IMAGE_OPTIONS
             if getattr(args, o.name) is not None}
    if not given:
        return {}
    kind = kind or infer_kind(src)
    if kind == "text" and src.lower().endswith((".csv", ".jsonl", ".ndjson", ".parquet")):
        kind = "table"
    if kind not in _IMAGE_SOURCES:
        flag = next(o.flag for o in IMAGE_OPTIONS if o.name in given)
        raise OptionError(f"{flag} is an image option: it applies to image folders, tables' "
                          f"image columns and COCO, and {src} is read as {kind}")
    return given


def run(args: argparse.Namespace) -> int:
    source = source_from(args)
    if args.engine == "ray":
        import ray

        ray.init(address=args.ray_address, log_to_driver=False, ignore_reinit_error=True)
    extra = {"shard_size": args.shard_size} if args.shard_size else {}
    shards = ShardOptions(
        layout="per_class" if args.layout == "per-class" else "mixed",
        num_shards=args.num_shards, min_shards=args.min_shards,
        compression=None if args.compression == "none" else args.compression,
        seed=args.seed, shuffle=not args.no_shuffle, **extra)
    result = convert(
        source, args.out, split=args.split, shards=shards, stratify=args.stratify,
        workers=args.workers, on_error=args.on_error, overwrite=args.overwrite,
        progress=not args.quiet, storage_options=args.storage_options, engine=args.engine,
    )
    print(json.dumps(result.to_json(), indent=2) if args.json else result.summary())
    return 0
