"""Small records through the loaders: load_numpy_dataset (no TensorFlow) vs load_tf_dataset on
the same dataset, batches of 256, both shuffled, every record read, one epoch per run, each
run in a fresh process (after one warm epoch there) that runs nothing else: in one shared
process TensorFlow's runtime threads, once started, kept taking CPU from the NumPy side
(the codec parsed 2.1-2.3M rec/s before TensorFlow was imported, 1.1-1.8M after it ran;
--shared-process measures the old way).

Records: 16-feature tabular Examples (10 float32, 5 int64, 1 string; ~270 bytes), as
bench/tf_read.py writes them, in --shards shards (8; ImageNet's 1,024 makes each shuffled
step touch ~all files). The runs alternate between the readers; for each the median of
--runs is printed: records/s, CPU seconds per 1,000 records (this process, all threads: on
2 cores the loader competes with the training step), and the time to the first batch (a fresh
loader each run). The last line is the ratio ours / tf.data.

Run: python bench/small_records.py [--records 200000] [--runs 5] [--shards 8] [--shared-process]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).parent))
from _results import add_json_option, medians_and_spread, named, write_results


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


def _loader_case(name: str, small: str) -> tuple[Callable[[], Iterable[dict]],
                                                  Callable[[dict], int]]:
    if name == "load_tf_dataset":
        from tfrecordkit.readers.tf_data import load_tf_dataset

        return (lambda: load_tf_dataset(small, batch_size=256, seed=0),
                lambda b: int(b["s"].shape[0]))
    from tfrecordkit.readers.numpy_data import load_numpy_dataset

    return (lambda: load_numpy_dataset(small, batch_size=256, seed=0),
            lambda b: len(b["__id"]))


def run_case(name: str, small: str) -> tuple[float, float, float]:
    """One measured epoch of ``name`` after a warm one (imports, page cache, tracing), in
    this process, which runs nothing else."""
    open_loader, count = _loader_case(name, small)
    measure(open_loader, count)
    return measure(open_loader, count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default="bench_output/small_records")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--shared-process", action="store_true",
                        help="both loaders in this one process (the old way: TensorFlow's "
                             "threads then slow the NumPy side)")
    add_json_option(parser)
    args = parser.parse_args()
    from tf_read import make_datasets

    _, small = make_datasets(Path(args.dir), 16, args.records, args.shards)
    names = ("load_tf_dataset", "load_numpy_dataset")
    if args.shared_process:
        cases = {name: _loader_case(name, str(small)) for name in names}
        for open_loader, count in cases.values():  # warm: imports, page cache, tracing
            measure(open_loader, count)
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in names}
    for _ in range(args.runs):
        for name in names:
            if args.shared_process:
                results[name].append(measure(*cases[name]))
                continue
            code = (f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                    f"import small_records as b; "
                    f"print(json.dumps(b.run_case({name!r}, {str(small)!r})))")
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout
            results[name].append(tuple(json.loads(out.strip().splitlines()[-1])))
    how = "one process" if args.shared_process else "a fresh process per run"
    print(f"{args.records:,} records in {args.shards} shards, batch 256, medians of "
          f"{args.runs} alternating runs ({how}), {os.cpu_count()} cores")
    medians = {}
    for name, runs in results.items():
        rate, cpu, first = (statistics.median(r[k] for r in runs) for k in range(3))
        medians[name] = rate
        print(f"{name:20s} {rate:10,.0f} rec/s   {cpu:6.3f} CPU s / 1k rec   "
              f"first batch {first * 1000:6.1f} ms   (runs: "
              + ", ".join(f"{r[0]:,.0f}" for r in runs) + ")")
    print(f"ratio load_numpy_dataset / load_tf_dataset: "
          f"{medians['load_numpy_dataset'] / medians['load_tf_dataset']:.2f}x")
    if args.json:
        runs = named(results, ("records_per_s", "cpu_s_per_1k", "first_s"))
        median, spread = medians_and_spread(runs)
        write_results(args.json, "small_records", records=args.records, shards=args.shards,
                      runs=args.runs,
                      medians=median, spread=spread, all_runs=runs,
                      ratios={"load_numpy_dataset / load_tf_dataset":
                              medians["load_numpy_dataset"] / medians["load_tf_dataset"]})


if __name__ == "__main__":
    main()
