"""Raw record reading: tfrecordkit's RecordReader (CRCs verified) vs tf.data, same files, and
the reader's buffered default against its mmap path (a truncated mapped file is SIGBUS).

Writes ~100 MB of image-sized records (~6 KB) and ~300 MB of small records (~270 B), then times
RecordReader and ``tf.data.TFRecordDataset(...).batch(256)`` iterated from Python, alternating
them for several runs; prints medians and ratios, and the reader's peak RSS per file size
(measured in a fresh process without TensorFlow) to show memory stays flat.

Run: python bench/read_raw.py [--scale 1.0] [--runs 5] [--dir bench_output]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _results import add_json_option, scalar_medians, write_results

from tfrecordkit import RecordReader, RecordWriter

RSS_PROBE = """
import sys
from tfrecordkit import RecordReader
n = sum(1 for _ in RecordReader(sys.argv[1]))
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(n, int(hwm.split()[1]) // 1024)
"""


def write_file(path: Path, record_size: int, total_mb: float, seed: int) -> int:
    if path.exists():
        return sum(1 for _ in RecordReader(path, verify=False))
    rng = np.random.default_rng(seed)
    pool = [rng.bytes(record_size + int(d)) for d in rng.integers(-record_size // 10,
                                                                  record_size // 10, 256)]
    count = int(total_mb * 1e6 / (record_size + 16))
    with RecordWriter(path) as writer:
        for i in range(count):
            writer.write(pool[i % len(pool)])
    return count


def time_ours(path: Path, use_mmap: bool = False) -> float:
    start = time.perf_counter()
    for _ in RecordReader(path, use_mmap=use_mmap):
        pass
    return time.perf_counter() - start


def time_tf(tf, path: Path) -> float:
    dataset = tf.data.TFRecordDataset(str(path)).batch(256)
    start = time.perf_counter()
    for _ in dataset:
        pass
    return time.perf_counter() - start


def peak_rss_mb(path: Path) -> int:
    out = subprocess.run([sys.executable, "-c", RSS_PROBE, str(path)], capture_output=True,
                         text=True, check=True).stdout.split()
    return int(out[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the data sizes")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default="bench_output")
    add_json_option(parser)
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    cases = [("image-sized (~6 KB)", 6000, 100 * args.scale), ("small (~270 B)", 270,
                                                              300 * args.scale)]
    print(f"runs: {args.runs}, medians; {os.cpu_count()} cores\n")
    print(f"{'records':<22}{'count':>9}{'MB':>7}  {'ours rec/s':>11}{'ours MB/s':>10}"
          f"  {'tf.data rec/s':>13}{'tf MB/s':>8}  {'ratio':>6}")
    mmap_rows: list[str] = []
    rates: dict[str, dict[str, list[float]]] = {}
    for label, size, mb in cases:
        path = folder / f"raw-{size}.tfrecord"
        count = write_file(path, size, mb, seed=size)
        nbytes = path.stat().st_size
        ours, theirs, mapped = [], [], []
        time_ours(path)  # warm the page cache
        for run in range(args.runs):
            # Alternate the order, so neither side always runs on a warmer machine.
            first, second = ((ours, False), (mapped, True)) if run % 2 == 0 else (
                (mapped, True), (ours, False))
            for times, use_mmap in (first, second):
                times.append(time_ours(path, use_mmap))
            theirs.append(time_tf(tf, path))
        o, t = statistics.median(ours), statistics.median(theirs)
        print(f"{label:<22}{count:>9}{nbytes / 1e6:>7.0f}  {count / o:>11,.0f}"
              f"{nbytes / o / 1e6:>10,.0f}  {count / t:>13,.0f}{nbytes / t / 1e6:>8,.0f}"
              f"  {t / o:>5.2f}x")
        m = statistics.median(mapped)
        rates[label] = {"ours": [count / t for t in ours], "ours mmap": [count / t for t in mapped],
                        "tf.data": [count / t for t in theirs]}
        mmap_rows.append(f"  {label}: buffered (the default) {nbytes / o / 1e6:,.0f} MB/s, "
                         f"mmap {nbytes / m / 1e6:,.0f} MB/s: {m / o:.2f}x")
    print("\nRecordReader's default buffered reads against use_mmap=True (same run):")
    print("\n".join(mmap_rows))
    print("\npeak RSS of RecordReader alone (fresh process, no TensorFlow):")
    for size in (6000, 270):
        path = folder / f"raw-{size}.tfrecord"
        print(f"  {path.name}: {path.stat().st_size / 1e6:.0f} MB file -> {peak_rss_mb(path)} MB")
    small = folder / "raw-small-check.tfrecord"
    write_file(small, 6000, 10 * args.scale, seed=1)
    print(f"  {small.name}: {small.stat().st_size / 1e6:.0f} MB file -> {peak_rss_mb(small)} MB")
    if args.json:
        summary = {label: scalar_medians(r) for label, r in rates.items()}
        write_results(args.json, "read_raw", scale=args.scale, runs=args.runs,
                      unit="records/s", medians={k: v[0] for k, v in summary.items()},
                      spread={k: v[1] for k, v in summary.items()}, all_runs=rates,
                      ratios={f"{label}: ours / tf.data": v[0]["ours"] / v[0]["tf.data"]
                              for label, v in summary.items()})


if __name__ == "__main__":
    main()
