"""Small records through the loaders: load_numpy_dataset (no TensorFlow) vs load_tf_dataset on
the same dataset, batches of 256, both shuffled, every record read, one epoch per run.

Records: 16-feature tabular Examples (10 float32, 5 int64, 1 string; ~270 bytes), as
bench/tf_read.py writes them. The runs alternate between the readers; for each the median of
--runs is printed: records/s, CPU seconds per 1,000 records (this process, all threads: on
2 cores the loader competes with the training step), and the time to the first batch (a fresh
loader each run). The last line is the ratio ours / tf.data.

Run: python bench/small_records.py [--records 200000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).parent))


def measure(open_loader: Callable[[], Iterable[dict]], count: Callable[[dict], int]
            ) -> tuple[float, float, float]:
    """(records/s, CPU s per 1,000 records, seconds to the first batch) of one epoch."""
    wall, cpu = time.perf_counter(), time.process_time()
    first = None
    records = 0
    for batch in open_loader():
        if first is None:
            first = time.perf_counter() - wall
        records += count(batch)
    elapsed, used = time.perf_counter() - wall, time.process_time() - cpu
    return records / elapsed, 1000 * used / records, first or 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default="bench_output/small_records")
    args = parser.parse_args()
    from tf_read import make_datasets

    from tfrecordkit.readers.numpy_data import load_numpy_dataset
    from tfrecordkit.readers.tf_data import load_tf_dataset

    _, small = make_datasets(Path(args.dir), 16, args.records)
    cases: dict[str, tuple[Callable[[], Iterable[dict]], Callable[[dict], int]]] = {
        "load_tf_dataset": (lambda: load_tf_dataset(small, batch_size=256, seed=0),
                            lambda b: int(b["s"].shape[0])),
        "load_numpy_dataset": (lambda: load_numpy_dataset(small, batch_size=256, seed=0),
                               lambda b: len(b["__id"])),
    }
    for open_loader, count in cases.values():  # warm: imports, page cache, graph tracing
        measure(open_loader, count)
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, (open_loader, count) in cases.items():
            results[name].append(measure(open_loader, count))
    print(f"{args.records:,} records, batch 256, medians of {args.runs} alternating runs, "
          f"{os.cpu_count()} cores")
    medians = {}
    for name, runs in results.items():
        rate, cpu, first = (statistics.median(r[k] for r in runs) for k in range(3))
        medians[name] = rate
        print(f"{name:20s} {rate:10,.0f} rec/s   {cpu:6.3f} CPU s / 1k rec   "
              f"first batch {first * 1000:6.1f} ms   (runs: "
              + ", ".join(f"{r[0]:,.0f}" for r in runs) + ")")
    print(f"ratio load_numpy_dataset / load_tf_dataset: "
          f"{medians['load_numpy_dataset'] / medians['load_tf_dataset']:.2f}x")


if __name__ == "__main__":
    main()
