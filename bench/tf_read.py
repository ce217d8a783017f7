"""tf.data reading: load_tf_dataset vs the tutorial pipeline and a hand-tuned one, same files.

Datasets (written once by tfrecordkit): 128x128 JPEG records (~6 KB) and small records with
16 features (10 float, 5 int64, 1 string). Pipelines, each iterated once per run, batch 256:
  tutorial:   TFRecordDataset(files) -> map(parse_single_example) -> batch(256)
  hand-tuned: interleave(AUTOTUNE) -> batch -> map(parse_example) -> [unbatch -> map(decode)
              -> batch] -> prefetch, all AUTOTUNE
  ours:       load_tf_dataset(path, batch_size=256, sampling=InOrder())  (and shuffled)
Prints records/s (medians of --runs) and ours/tutorial, ours/hand-tuned.

Run: python bench/tf_read.py [--images 20000] [--small 1000000] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

sys.path.insert(0, str(Path(__file__).parent))
from _results import add_json_option, scalar_medians, write_results

import tfrecordkit as tk
from convert import TABULAR_SCHEMA, jpeg_pool
from tfrecordkit import ClassLabel, Schema, ShardOptions, load_manifest, write_dataset
from tfrecordkit import Image as ImageFeature

IMAGE_SCHEMA = Schema({"image": ImageFeature("jpeg", channels=3),
                       "label": ClassLabel([str(i) for i in range(10)])})


def make_datasets(folder: Path, images: int, small: int, small_shards: int = 8
                  ) -> tuple[Path, Path]:
    image_path, small_path = folder / "jpeg", folder / "small"
    if not _holds(image_path, images):
        pool = jpeg_pool()
        rows = ({"image": {"bytes": pool[i % len(pool)], "height": 128, "width": 128,
                           "channels": 3}, "label": i % 10} for i in range(images))
        write_dataset(rows, image_path, IMAGE_SCHEMA,
                      shards=ShardOptions(num_shards=8), overwrite=True)
    if not _holds(small_path, small, small_shards):
        def rows_small():
            for i in range(small):
                yield {**{f"f{j}": (i * 31 + j) % 1000 / 7.0 for j in range(10)},
                       **{f"i{j}": i * 7 + j for j in range(5)}, "s": f"category {i % 100}"}
        write_dataset(rows_small(), small_path, TABULAR_SCHEMA,
                      shards=ShardOptions(num_shards=small_shards), overwrite=True)
    return image_path, small_path


def _holds(path: Path, records: int, shards: int = 8) -> bool:
    """Whether ``path`` holds a dataset of ``records`` records in ``shards`` shards from an
    earlier run."""
    if not (path / "dataset.json").exists():
        return False
    manifest = load_manifest(path)
    return (manifest.num_records("train") == records
            and len(manifest.split("train").shards) == shards)


def files_of(path: Path) -> list[str]:
    return [str(path / s.file) for s in load_manifest(path).split("train").shards]


def tutorial(tf, files, description, decode_image):
    def parse(serialized):
        example = tf.io.parse_single_example(serialized, description)
        if decode_image:
            example["image"] = tf.io.decode_jpeg(example["image"], channels=3)
        return example
    return tf.data.TFRecordDataset(files).map(parse).batch(256)


def hand_tuned(tf, files, description, decode_image):
    ds = tf.data.Dataset.from_tensor_slices(files).interleave(
        tf.data.TFRecordDataset, cycle_length=len(files), num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=False).batch(256)
    ds = ds.map(lambda s: tf.io.parse_example(s, description), num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=False)
    if decode_image:
        ds = ds.unbatch().map(
            lambda e: {**e, "image": tf.io.decode_jpeg(e["image"], channels=3)},
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=False).batch(256)
    return ds.prefetch(tf.data.AUTOTUNE)


def rate(ds, records: int) -> float:
    start = time.perf_counter()
    for _ in ds:
        pass
    return records / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--small", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default="bench_output/tf_read")
    add_json_option(parser)
    args = parser.parse_args()
    import tensorflow as tf

    from tfrecordkit import load_tf_dataset

    image_path, small_path = make_datasets(Path(args.dir), args.images, args.small)
    image_desc = {"image": tf.io.FixedLenFeature([], tf.string),
                  "label": tf.io.FixedLenFeature([], tf.int64)}
    small_desc = {**{f"f{j}": tf.io.FixedLenFeature([], tf.float32) for j in range(10)},
                  **{f"i{j}": tf.io.FixedLenFeature([], tf.int64) for j in range(5)},
                  "s": tf.io.FixedLenFeature([], tf.string)}
    cases = [
        ("JPEG records, no decode", image_path, image_desc, False, args.images),
        ("small records, 16 features", small_path, small_desc, False, args.small),
        ("JPEG records, decode_jpeg", image_path, image_desc, True, args.images),
    ]
    print(f"records/s, medians of {args.runs} runs, batch 256, {os.cpu_count()} cores\n")
    print(f"{'case':<30}{'tutorial':>10}{'hand-tuned':>12}{'ours':>10}{'ours+shuf':>11}"
          f"{'vs tutorial':>13}{'vs tuned':>10}")
    all_medians: dict[str, dict[str, float]] = {}
    all_spread: dict[str, dict[str, list[float]]] = {}
    for label, path, description, decode, n in cases:
        files = files_of(path)
        chosen = ["image", "label"] if decode else None
        pipelines = {
            "tutorial": lambda f=files, d=description, x=decode: tutorial(tf, f, d, x),
            "tuned": lambda f=files, d=description, x=decode: hand_tuned(tf, f, d, x),
            "ours": lambda p=path, x=decode, c=chosen: load_tf_dataset(
                p, batch_size=256, sampling=tk.InOrder(), seed=None,
                options=tk.DecodeOptions(features=c, decode=x)),
            "shuffled": lambda p=path, x=decode, c=chosen: load_tf_dataset(
                p, batch_size=256, seed=0, options=tk.DecodeOptions(features=c, decode=x)),
        }
        results = {k: [] for k in pipelines}
        for _ in range(args.runs):
            for name, make in pipelines.items():
                results[name].append(rate(make(), n))
        m = {k: statistics.median(v) for k, v in results.items()}
        print(f"{label:<30}{m['tutorial']:>10,.0f}{m['tuned']:>12,.0f}{m['ours']:>10,.0f}"
              f"{m['shuffled']:>11,.0f}{m['ours'] / m['tutorial']:>12.1f}x"
              f"{m['ours'] / m['tuned']:>9.2f}x")
        all_medians[label], all_spread[label] = scalar_medians(results)
    if args.json:
        write_results(args.json, "tf_read", images=args.images, small=args.small,
                      runs=args.runs, unit="records/s", medians=all_medians, spread=all_spread,
                      ratios={f"{label}: ours / tutorial": m["ours"] / m["tutorial"]
                              for label, m in all_medians.items()})


if __name__ == "__main__":
    main()
