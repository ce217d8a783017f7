"""``tfrecordkit stats``: splits, class counts (with a histogram), shards and features, from the
manifest alone."""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from tfrecordkit.store import Manifest, load_manifest

_BAR = 30


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("stats", help="summarise a dataset from its manifest")
    parser.add_argument("dataset", help="dataset directory (holding dataset.json)")
    parser.add_argument("-k", "--examples-per-class", type=int, default=None, metavar="K",
                        help="warn about classes with fewer than K records (P×K sampling)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def dataset_stats(manifest: Manifest, k: int | None = None) -> dict[str, Any]:
    """The numbers ``stats`` shows, JSON-ready."""
    names = manifest.class_names
    splits = {}
    for name, split in manifest.splits.items():
        sizes = [s.bytes for s in split.shards]
        counts = {(names[int(c)] if names else c): n for c, n in split.class_counts.items()}
        entry: dict[str, Any] = {
            "records": split.records,
            "bytes": split.bytes,
            "shards": len(split.shards),
            "shard_bytes": {"min": min(sizes), "median": int(statistics.median(sizes)),
                            "max": max(sizes)} if sizes else None,
            "class_counts": counts,
        }
        if names:
            entry["classes_present"] = len(split.class_counts)
            entry["classes_missing"] = len(names) - len(split.class_counts)
        if k is not None and names:
            entry["classes_below_k"] = {c: n for c, n in counts.items() if n < k}
        splits[name] = entry
    return {
        "layout": manifest.layout,
        "compression": manifest.compression,
        "label_feature": manifest.label_feature,
        "num_classes": len(names),
        "features": manifest.schema.to_json()["features"],
        "splits": splits,
        "skipped_count": manifest.skipped_count,
        "created_by": manifest.created_by,
    }


def _print_text(stats: dict[str, Any], k: int | None) -> None:
    print(f"layout {stats['layout']}, compression {stats['compression'] or 'none'}, "
          f"{stats['num_classes']} classes" if stats["num_classes"] else
          f"layout {stats['layout']}, compression {stats['compression'] or 'none'}")
    print("features:")
    for name, feature in stats["features"].items():
        params = ", ".join(f"{k}={v}" for k, v in feature.items()
                           if k not in {"kind", "names"})
        print(f"  {name}: {feature['kind']}" + (f" ({params})" if params else ""))
    for name, split in stats["splits"].items():
        shard = split["shard_bytes"]
        print(f"{name}: {split['records']} records, {split['bytes'] / 1e6:.1f} MB in "
              f"{split['shards']} shard(s)" + (
                  f" (min {shard['min'] / 1e6:.1f} / median {shard['median'] / 1e6:.1f} / "
                  f"max {shard['max'] / 1e6:.1f} MB)" if shard else ""))
        counts = split["class_counts"]
        if counts:
            top = max(counts.values())
            shown = list(counts.items())
            if len(shown) > 40:
                print(f"  {len(shown)} classes; records per class min {min(counts.values())}, "
                      f"median {statistics.median(counts.values()):g}, max {top}")
            else:
                width = max(len(str(c)) for c in counts)
                for cls, n in shown:
                    bar = "█" * max(1, round(_BAR * n / top))
                    print(f"  {str(cls).ljust(width)} {n:>7}  {bar}")
        if split.get("classes_missing"):
            print(f"  warning: {split['classes_missing']} classes have no records in {name}")
        if split.get("classes_below_k"):
            below = split["classes_below_k"]
            listed = ", ".join(f"{c} ({n})" for c, n in list(below.items())[:10])
            print(f"  warning: {len(below)} classes have fewer than K={k} records and will be "
                  f"sampled with replacement: {listed}" + (" ..." if len(below) > 10 else ""))
    if stats["skipped_count"]:
        print(f"skipped inputs: {stats['skipped_count']} (listed in dataset.json)")


def run(args: argparse.Namespace) -> int:
    manifest = load_manifest(args.dataset, storage_options=args.storage_options)
    stats = dataset_stats(manifest, args.examples_per_class)
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        _print_text(stats, args.examples_per_class)
    return 0
