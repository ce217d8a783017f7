"""Fixed-shape raw arrays (224×224×3 uint8 images stored as their bytes), batch 32: the
tutorial's tf.data pipeline (``map(parse_single_example + decode_raw)``, parallel) against
``load_numpy_dataset`` and ``load_tf_dataset`` on the same shards, in one run.

Prints GB/s of pixels, the ratio to the tutorial, CPU seconds per 1,000 records and the time
to the first batch; medians of alternating runs.

Run: python bench/raw_tensors.py [--records 2000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _results import add_json_option, medians_and_spread, named, write_results

import tfrecordkit as tk

SHAPE = (224, 224, 3)
BATCH = 32


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _tutorial(files: list[str]):
    """The TensorFlow tutorial's way: parse each record, decode_raw, reshape, batch."""
    import tensorflow as tf

    description = {"x": tf.io.FixedLenFeature([], tf.string)}

    def parse(record):
        example = tf.io.parse_single_example(record, description)
        return tf.reshape(tf.io.decode_raw(example["x"], tf.uint8), SHAPE)

    def run():
        ds = tf.data.TFRecordDataset(files, num_parallel_reads=tf.data.AUTOTUNE)
        ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH)
        return (b.numpy() for b in ds.prefetch(tf.data.AUTOTUNE))

    return run


def _numpy(path: Path):
    def run():
        loader = tk.load_numpy_dataset(path, batch_size=BATCH, sampling=tk.InOrder())
        return (b["x"] for b in loader)
    return run


def _tf(path: Path):
    def run():
        ds = tk.load_tf_dataset(path, batch_size=BATCH, sampling=tk.InOrder())
        return (b["x"].numpy() for b in ds)
    return run


def _measure(run, records: int) -> tuple[float, float, float]:
    """Seconds for one epoch, CPU seconds per 1,000 records, seconds to the first batch."""
    cpu, start = _cpu(), time.perf_counter()
    first = None
    seen = 0
    for batch in run():
        if first is None:
            first = time.perf_counter() - start
        assert batch.shape[1:] == SHAPE and batch.dtype == np.uint8
        seen += len(batch)
    seconds = time.perf_counter() - start
    assert seen == records, seen
    return seconds, (_cpu() - cpu) / records * 1000, first or 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    add_json_option(parser)
    args = parser.parse_args()
    n = args.records
    rng = np.random.default_rng(0)
    schema = tk.Schema({"x": tk.Tensor(SHAPE, "uint8")})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ds"
        rows = ({"x": rng.integers(0, 256, SHAPE, dtype=np.uint8)} for _ in range(n))
        tk.write_dataset(rows, path, schema,
                         shards=tk.ShardOptions(num_shards=8, shuffle=False), progress=False)
        files = sorted(str(p) for p in path.glob("*.tfrecord"))
        pixels = n * int(np.prod(SHAPE))
        cases = {"tutorial tf.data (map parse + decode_raw)": _tutorial(files),
                 "load_numpy_dataset": _numpy(path),
                 "load_tf_dataset": _tf(path)}
        for run in cases.values():  # warm up: page cache, graph tracing
            _measure(run, n)
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cases}
        for _ in range(args.runs):  # alternating
            for name, run in cases.items():
                results[name].append(_measure(run, n))
        base = statistics.median(r[0] for r in results[next(iter(cases))])
        print(f"{n:,} raw {SHAPE} uint8 arrays ({pixels / 1e9:.2f} GB), batch {BATCH}, "
              f"8 shards; medians of {args.runs} alternating runs, {os.cpu_count()} cores\n")
        print(f"{'case':<44}{'GB/s':>7}{'ratio':>8}{'CPU s/1k':>10}{'first (ms)':>12}")
        for name, rows_ in results.items():
            seconds = statistics.median(r[0] for r in rows_)
            cpu = statistics.median(r[1] for r in rows_)
            first = statistics.median(r[2] for r in rows_)
            print(f"{name:<44}{pixels / seconds / 1e9:>7.2f}{base / seconds:>7.2f}x"
                  f"{cpu:>10.3f}{first * 1000:>12.1f}")
        if args.json:
            runs = named({name: [(pixels / r[0] / 1e9, r[1], r[2]) for r in done]
                          for name, done in results.items()}, ("gb_per_s", "cpu_s_per_1k",
                                                               "first_s"))
            medians, spread = medians_and_spread(runs)
            first_case = next(iter(cases))
            write_results(args.json, "raw_tensors", records=n, shape=list(SHAPE), batch=BATCH,
                          runs=args.runs, medians=medians, spread=spread, all_runs=runs,
                          ratios={f"{name} / {first_case}": m["gb_per_s"]
                                  / medians[first_case]["gb_per_s"]
                                  for name, m in medians.items()})


if __name__ == "__main__":
    main()
