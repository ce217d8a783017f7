"""``tfrecordkit head``: print the first records, decoded, with bytes summarised."""

from __future__ import annotations

import argparse
import json
from itertools import islice
from typing import Any

import numpy as np

from tfrecordkit.codecs import sniff_bytes
from tfrecordkit.format import Storage, decode_sequence_example, read_records
from tfrecordkit.store import expand_record_paths, is_dataset_dir, load_manifest

_SHOWN_VALUES = 8
_SHOWN_TEXT = 60


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("head", help="print the first records, decoded")
    parser.add_argument("paths", nargs="+", help="record files, globs or dataset directories")
    parser.add_argument("-n", type=int, default=5, help="how many records (default 5)")
    parser.add_argument("--json", action="store_true", help="print JSON lines, one per record")
    parser.set_defaults(func=run)


def summarize_bytes(value: bytes) -> Any:
    """A short, printable stand-in for a bytes value."""
    kind = sniff_bytes(value)
    if kind == "text":
        text = value.decode("utf-8")
        return text if len(text) <= _SHOWN_TEXT else text[:_SHOWN_TEXT] + "…"
    return f"<{kind}, {len(value)} bytes>"


def summarize(value: Any) -> Any:
    """A JSON-ready summary of a decoded feature value."""
    if isinstance(value, np.ndarray):
        shown = value[:_SHOWN_VALUES].tolist()
        if len(value) > _SHOWN_VALUES:
            return {"values": shown, "count": len(value), "dtype": str(value.dtype)}
        return shown[0] if len(shown) == 1 else shown
    items = [summarize_bytes(v) for v in value[:_SHOWN_VALUES]]
    if len(value) > _SHOWN_VALUES:
        return {"values": items, "count": len(value)}
    return items[0] if len(items) == 1 else items


def _class_names(args: list[str], options: dict[str, Any] | None
                 ) -> tuple[dict[str, list[str]], dict[str, tuple[str, int]]]:
    """Class names by label key, from the manifests of the datasets among ``args``; and, for
    labels taken from the shard, each shard file's (label key, class id)."""
    names: dict[str, list[str]] = {}
    from_shard: dict[str, tuple[str, int]] = {}
    for arg in args:
        storage = Storage.of(arg, options)
        if is_dataset_dir(arg, storage):
            manifest = load_manifest(arg, storage=storage)
            label = manifest.label_feature
            if label is not None and manifest.class_names:
                names[label] = list(manifest.class_names)
            if label is not None and label == manifest.schema.shard_label:
                from_shard.update({storage.join(arg, shard.file): (label, shard.class_id)
                                   for split in manifest.splits.values()
                                   for shard in split.shards if shard.class_id is not None})
    return names, from_shard


def _named(value: Any, names: list[str]) -> Any:
    """A class id shown with its name: ``"1 (dog)"``."""
    if isinstance(value, int) and 0 <= value < len(names):
        return f"{value} ({names[value]})"
    return value


def run(args: argparse.Namespace) -> int:
    paths = expand_record_paths(args.paths, args.storage_options)
    labels, from_shard = _class_names(args.paths, args.storage_options)
    records = ((path, record) for path in paths
               for record in read_records([path], storage_options=args.storage_options))
    for i, (path, record) in enumerate(islice(records, args.n)):
        try:
            context, lists = decode_sequence_example(record)
            decoded: Any = {k: summarize(v) for k, v in sorted(context.items())}
            if path in from_shard:  # a label the record doesn't hold: its file's class
                key, class_id = from_shard[path]
                decoded[key] = class_id
            for key, names in labels.items():
                if key in decoded:
                    decoded[key] = _named(decoded[key], names)
            decoded.update(
                {f"{k}[steps]": [summarize(step) for step in steps[:_SHOWN_VALUES]]
                 for k, steps in sorted(lists.items())}
            )
        except ValueError:
            decoded = {"<not an Example>": summarize_bytes(record)}
        if args.json:
            print(json.dumps({"index": i, "features": decoded}))
        else:
            print(f"record {i}:")
            for name, value in decoded.items():
                print(f"  {name}: {value}")
    return 0
