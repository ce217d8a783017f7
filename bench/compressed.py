"""GZIP datasets: what restart points cost on disk, and reading gzip files through the NumPy
loader (no TensorFlow) against tf.data on the same files.

Records: 16-feature tabular Examples (~270 bytes; the small-records case, as bench/tf_read.py
writes them), and 128 px JPEG records. Three parts:

1. Size: one shard's records gzip-compressed by TensorFlow's writer (no restart points) and by
   ours with a restart point every N records (and every 1 MiB).
2. Sequential reading, batches of 256, shuffled, one epoch per run, runs alternating, medians:
   our gzip dataset (restart points) and the same records in gzip files TensorFlow wrote (no
   restart points; read by glob), each through load_numpy_dataset and load_tf_dataset.
3. Random access: records/s of open_split(...).get_many on 1,000 random positions a call, gzip
   vs uncompressed: the first call on a fresh split, and 20 more (inflated parts are kept).

Run: python bench/compressed.py [--records 200000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from _results import add_json_option, scalar_medians, write_results

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).parent))


def _gzip_copy(tf, plain: Path, out: Path) -> str:
    """The dataset's shards rewritten by TensorFlow's GZIP writer (as TFX writes them)."""
    from tfrecordkit import load_manifest, read_records

    out.mkdir(parents=True, exist_ok=True)
    shards = load_manifest(plain).split("train").shards
    if len(list(out.glob("*.gz"))) != len(shards):
        for shard in shards:
            with tf.io.TFRecordWriter(str(out / (shard.file + ".gz")), "GZIP") as writer:
                for record in read_records(plain / shard.file):
                    writer.write(record)
    return str(out / "*.gz")


def _sizes(tf, plain: Path, folder: Path) -> None:
    from tfrecordkit import RecordWriter, load_manifest, read_records

    shard = plain / load_manifest(plain).split("train").shards[0].file
    records = list(read_records(shard))
    path = folder / "tf.gz"
    with tf.io.TFRecordWriter(str(path), "GZIP") as writer:
        for record in records:
            writer.write(record)
    base = path.stat().st_size
    plain_ours = folder / "ours-none.gz"
    with RecordWriter(plain_ours, "gzip") as writer:
        writer.write_all(records)
    print(f"  {plain.name}: {len(records):,} records, {shard.stat().st_size / 2**20:.1f} MiB "
          f"plain; TensorFlow's gzip {base / 2**20:.3f} MiB; ours without restart points "
          f"{plain_ours.stat().st_size / 2**20:.3f} MiB")
    for every, size_cap in ((256, 1 << 20), (1 << 16, 128 << 10), (1 << 16, 256 << 10),
                            (1 << 16, 512 << 10), (1 << 16, 1 << 20)):
        ours = folder / f"ours-{every}-{size_cap}.gz"
        with RecordWriter(ours, "gzip", restarts_path=f"{ours}.restarts",
                          restart_every=every, restart_bytes=size_cap) as writer:
            writer.write_all(records)
        points = len(Path(f"{ours}.restarts").read_bytes().splitlines())
        size = ours.stat().st_size
        print(f"    restart every {every:5d} records / {size_cap >> 10:4d} KiB: "
              f"{size / 2**20:.3f} MiB, {(size - base) / base * 100:+.2f}% ({points} points, "
              f"sidecar {Path(f'{ours}.restarts').stat().st_size / 1024:.1f} KiB)")


def _epoch(open_loader, count) -> float:
    start = time.perf_counter()
    records = sum(count(b) for b in open_loader())
    return records / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--images", type=int, default=4_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default="bench_output/compressed")
    add_json_option(parser)
    args = parser.parse_args()
    import numpy as np
    import tensorflow as tf
    from tf_read import make_datasets

    import tfrecordkit as tk
    from tfrecordkit.readers.numpy_data import load_numpy_dataset
    from tfrecordkit.readers.tf_data import load_tf_dataset

    folder = Path(args.dir)
    images, small = make_datasets(folder, args.images, args.records)
    packed = folder / "small-gzip"
    if not (packed / "dataset.json").exists():
        schema = tk.load_manifest(small).schema
        rows = (schema.decode(r) for r in tk.read_records(
            [small / s.file for s in tk.load_manifest(small).split("train").shards]))
        tk.write_dataset(rows, packed, schema, progress=False,
                         shards=tk.ShardOptions(num_shards=8, compression="gzip",
                                                shuffle=False))
    foreign = _gzip_copy(tf, small, folder / "small-tf-gzip")

    print("1. size of restart points (gzip, level 6)", flush=True)
    for plain in (small, images):
        _sizes(tf, plain, folder)

    print(f"2. sequential reading, {args.records:,} records, batch 256, medians of "
          f"{args.runs} alternating runs, {os.cpu_count()} cores")
    cases = {
        "ours gzip  / load_numpy_dataset": lambda: load_numpy_dataset(packed, batch_size=256),
        "ours gzip  / load_tf_dataset": lambda: load_tf_dataset(packed, batch_size=256, seed=0),
        "TF's gzip  / load_numpy_dataset": lambda: load_numpy_dataset(foreign, batch_size=256),
        "TF's gzip  / load_tf_dataset": lambda: load_tf_dataset(foreign, batch_size=256,
                                                                 seed=0),
    }

    def count(batch: dict) -> int:
        return len(next(iter(batch.values())))

    for open_loader in cases.values():  # warm: imports, page cache, graph tracing
        _epoch(open_loader, count)
    runs: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, open_loader in cases.items():
            runs[name].append(_epoch(open_loader, count))
    medians = {name: statistics.median(r) for name, r in runs.items()}
    for name, rates in runs.items():
        print(f"  {name:34s} {medians[name]:10,.0f} rec/s  (runs: "
              + ", ".join(f"{r:,.0f}" for r in rates) + ")")
    ratios = {}
    for which in ("ours gzip ", "TF's gzip "):
        ratio = medians[f"{which} / load_numpy_dataset"] / medians[f"{which} / load_tf_dataset"]
        ratios[f"NumPy / tf.data, {which.strip()}"] = ratio
        print(f"  ratio NumPy / tf.data, {which.strip()}: {ratio:.2f}x")
    if args.json:  # the sequential reading (section 2); the others print only
        median, spread = scalar_medians(runs)
        write_results(args.json, "compressed", records=args.records, runs=args.runs,
                      unit="records/s", medians=median, spread=spread, all_runs=runs,
                      ratios=ratios)

    print("3. random access, open_split(...).get_many(1,000 random positions): the first call on "
          "a fresh split (every part inflated anew), then 20 calls more")
    rng = np.random.default_rng(0)
    for name, path in (("uncompressed", small), ("gzip", packed)):
        first, steady = [], []
        for _ in range(args.runs):
            split = tk.open_split(path)
            calls = [rng.integers(0, len(split), 1000) for _ in range(21)]
            start = time.perf_counter()
            split.get_many(calls[0])
            first.append(1000 / (time.perf_counter() - start))
            start = time.perf_counter()
            for ids in calls[1:]:
                split.get_many(ids)
            steady.append(20_000 / (time.perf_counter() - start))
        print(f"  {name:12s} first {statistics.median(first):10,.0f} records/s, then "
              f"{statistics.median(steady):10,.0f} records/s")


if __name__ == "__main__":
    main()
