"""``tfrecordkit stats``: splits, class counts (with a histogram), shards and features, from the
manifest; for detection datasets (a ``Boxes`` feature) also the objects per class and boxes per
image, from one pass over the box labels."""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

import numpy as np

from tfrecordkit.format import Storage
from tfrecordkit.schema import Boxes
from tfrecordkit.store import Manifest, load_manifest

_BAR = 30


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("stats", help="summarise a dataset from its manifest")
    parser.add_argument("dataset", help="dataset directory (holding dataset.json)")
    parser.add_argument("-k", "--examples-per-class", type=int, default=None, metavar="K",
                        help="warn about classes with fewer than K records (P×K sampling)")
    objects = parser.add_mutually_exclusive_group()
    objects.add_argument("--objects", dest="objects", action="store_const", const=True,
                         default=None, help="count a detection dataset's objects per category "
                                            "and boxes per image (a pass over every record; "
                                            "default: for local datasets)")
    objects.add_argument("--no-objects", dest="objects", action="store_const", const=False,
                         help="the manifest's figures only")
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


def object_stats(path: str, manifest: Manifest,
                 storage_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Per ``Boxes`` feature and split: its category names, the objects of each category, and
    the boxes per image (read from the records' box labels, one pass)."""
    from tfrecordkit.readers import DecodeOptions, InOrder, ReadOptions
    from tfrecordkit.readers.numpy_data import load_numpy_dataset

    out: dict[str, Any] = {}
    for name, feature in manifest.schema.of_kind(Boxes).items():
        splits = {}
        for split in manifest.splits:
            per_class = np.zeros(len(feature.names), np.int64)
            per_image: list[np.ndarray] = []
            for batch in load_numpy_dataset(
                    path, split, batch_size=1024, sampling=InOrder(),
                    options=DecodeOptions(features=(name,)),
                    read=ReadOptions(storage_options=storage_options)):
                labels = batch[name]["labels"]
                lengths = labels["lengths"][:, 0]
                kept = np.arange(labels["values"].shape[1]) < lengths[:, None]
                per_class += np.bincount(labels["values"][kept], minlength=len(per_class))
                per_image.append(lengths)
            counts = np.concatenate(per_image) if per_image else np.zeros(0, np.int64)
            splits[split] = {
                "objects": int(counts.sum()),
                "per_class": dict(zip(feature.names, per_class.tolist(), strict=True)),
                "boxes_per_image": {"min": int(counts.min()), "median": float(
                    np.median(counts)), "mean": round(float(counts.mean()), 3),
                    "max": int(counts.max())} if counts.size else None,
                "images_without_boxes": int((counts == 0).sum()),
            }
        out[name] = {"names": list(feature.names), "splits": splits}
    return out


def _print_objects(objects: dict[str, Any]) -> None:
    for name, described in objects.items():
        print(f"{name}: {len(described['names'])} box categories")
        for split, entry in described["splits"].items():
            each = entry["boxes_per_image"]
            print(f"  {split}: {entry['objects']} objects; boxes per image "
                  + (f"min {each['min']} / median {each['median']:g} / mean {each['mean']:g} / "
                     f"max {each['max']}" if each else "-")
                  + f"; {entry['images_without_boxes']} images without boxes")
            counts = entry["per_class"]
            top = max(counts.values(), default=0) or 1
            width = max((len(c) for c in counts), default=0)
            shown = sorted(counts.items(), key=lambda item: -item[1])
            for cls, n in shown[:40]:
                print(f"    {cls.ljust(width)} {n:>8}  {'█' * max(1, round(_BAR * n / top))}")
            if len(shown) > 40:
                print(f"    ... {len(shown) - 40} more categories")


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
    # Counting objects reads every record: by default only where that is a local read, not
    # a download of a bucket's whole dataset.
    count = args.objects if args.objects is not None else Storage.of(
        args.dataset, args.storage_options).local
    objects = object_stats(args.dataset, manifest, args.storage_options) if count else {}
    if objects:
        stats["objects"] = objects
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        _print_text(stats, args.examples_per_class)
        _print_objects(objects)
    return 0
