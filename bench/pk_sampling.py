"""P×K sampling throughput vs a sequential read of the same records, and memory at 10k classes.

A per-class dataset of 128x128 JPEG records; P=32 classes x K=8 = 256 per batch. Compares
  tf.data:  load_tf_dataset(sampling=PK(P, K))  vs  load_tf_dataset(batch_size=P*K)
            (with and without decode)
  NumPy:    load_numpy_dataset(sampling=PK(P, K))  vs  sequential RecordReader +
            Schema.decode of the same shards
            (no decode: + parse_examples of the stored keys, 256 at a time, as decode=False)
and prints records/s (medians), the ratio, CPU seconds per 1,000 records and the time to the
first batch; every run in a fresh process (in one shared process, TensorFlow's threads and
allocator state from earlier cases moved the NumPy cases 2-3x), with glibc's allocator set
as a long-running process has it (STEADY_MALLOC). Then the peak RSS and open files of a P×K run over
10,000 classes x 5 records (fresh process).

Run: python bench/pk_sampling.py [--classes 500] [--per-class 40] [--runs 3]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).parent))
from _results import add_json_option, medians_and_spread, named, write_results

import tfrecordkit as tk
from convert import jpeg_pool
from tfrecordkit import (
    ClassLabel,
    RecordReader,
    Schema,
    ShardOptions,
    load_manifest,
    write_dataset,
)
from tfrecordkit import Image as ImageFeature
from tfrecordkit.format import parse_examples

P, K = 32, 8
RSS_PROBE = """
import sys
from tfrecordkit import ClassLabel, Scalar, Schema, ShardOptions, write_dataset
import tfrecordkit as tk
path = sys.argv[1]
schema = Schema({"x": Scalar("int64"), "label": ClassLabel([str(i) for i in range(10000)])})
write_dataset(({"x": i, "label": i % 10000} for i in range(50000)), path, schema,
              shards=ShardOptions(layout="per_class"), overwrite=True)
loader = tk.load_numpy_dataset(path, sampling=tk.PK(32, 4),
                               read=tk.ReadOptions(max_open_files=64))
n = sum(len(b["label"]) for b in loader.batches(1000))
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(n, int(hwm.split()[1]) // 1024, loader.fetcher.peak_open_files)
"""


def make_dataset(path: Path, classes: int, per_class: int) -> None:
    if (path / "dataset.json").exists():
        return
    pool = jpeg_pool()
    schema = Schema({"image": ImageFeature("jpeg", channels=3),
                     "label": ClassLabel([str(i) for i in range(classes)])})
    rows = ({"image": {"bytes": pool[i % len(pool)], "height": 128, "width": 128,
                       "channels": 3}, "label": i % classes} for i in range(classes * per_class))
    write_dataset(rows, path, schema, shards=ShardOptions(layout="per_class"), overwrite=True)


def timed_rate(make, records: int) -> tuple[float, float, float]:
    """(records/s over the iteration, CPU s per 1,000 records and seconds to the first batch,
    both counting ``make()``'s creation of the iterable too)."""
    cpu, start = time.process_time(), time.perf_counter()
    batches = make()
    first, created = None, time.perf_counter()
    for _ in batches:
        first = first if first is not None else time.perf_counter() - start
    seconds = time.perf_counter() - created
    return records / seconds, (time.process_time() - cpu) / records * 1000, first or 0.0


LABELS = ("tf.data, no decode", "tf.data, decode_jpeg", "NumPy, no decode",
          "NumPy, decode (simplejpeg, 2 threads)")


def make_case(label: str, side: str, path: Path, steps: int):
    """The iterable of one case: ``side`` is "sequential" or "pk"; TensorFlow is imported
    only by the tf.data cases (each case runs in a process of its own)."""
    manifest = load_manifest(path)
    records = steps * P * K
    if label.startswith("tf.data"):
        import tensorflow as tf  # noqa: F401  (loaded before the timings)

        from tfrecordkit import load_tf_dataset

        decode = "decode_jpeg" in label
        if side == "sequential":
            return lambda: load_tf_dataset(path, batch_size=P * K, repeat=True,
                                           options=tk.DecodeOptions(decode=decode)).take(steps)
        return lambda: tk.load_tf_dataset(path, sampling=tk.PK(P, K), repeat=True,
                                          options=tk.DecodeOptions(decode=decode)).take(steps)
    decode = "no decode" not in label
    if side == "pk":
        return lambda: tk.load_numpy_dataset(path, sampling=tk.PK(P, K),
                                             options=tk.DecodeOptions(decode=decode)).batches(steps)
    files = [path / s.file for s in manifest.split("train").shards]
    specs = manifest.schema.key_specs()

    def run():
        """The same records read in file order; decoded one by one, or (decode=False, as
        the P×K batches are) their stored keys parsed 256 at a time by the codec."""
        count = 0
        batch: list[bytes] = []
        for file in itertools.cycle(files):
            for record in RecordReader(file):
                if decode:
                    manifest.schema.decode(record)
                else:
                    batch.append(record)
                    if len(batch) == P * K:
                        parse_examples(batch, specs)
                        batch = []
                count += 1
                if count >= records:
                    return
                yield
    return run


def run_case(label: str, side: str, path: str, steps: int) -> tuple[float, float, float]:
    """One run of one case, in this process (see :func:`timed_rate`)."""
    return timed_rate(make_case(label, side, Path(path), steps), steps * P * K)


#: glibc's allocator as a long-running process has it: large blocks reused, not mapped and
#: unmapped each time. A fresh process maps every block over 128 KiB until a large free raises
#: that threshold, and which case happens to raise it first decided the ratios (the NumPy
#: sequential baseline: 130k rec/s before, 297-339k after; TensorFlow's import raises it).
STEADY_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(128 << 20)}


def _in_process(label: str, side: str, path: Path, steps: int) -> list[float]:
    code = (f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"import pk_sampling; print(json.dumps(pk_sampling.run_case({label!r}, "
            f"{side!r}, {str(path)!r}, {steps})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, **STEADY_MALLOC,
                                          "TF_CPP_MIN_LOG_LEVEL": "3"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=500)
    parser.add_argument("--per-class", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--passes", type=int, default=4,
                        help="passes over the data per run, so one-time setup amortises")
    parser.add_argument("--dir", default="bench_output/pk")
    add_json_option(parser)
    args = parser.parse_args()
    path = Path(args.dir) / "jpeg_per_class"
    make_dataset(path, args.classes, args.per_class)
    total = load_manifest(path).num_records("train")
    steps = args.passes * total // (P * K)
    records = steps * P * K
    print(f"{args.classes} classes x {args.per_class} JPEG records; P={P}, K={K}; "
          f"{records} records per run; medians of {args.runs}, every run in a fresh "
          "process, cases alternating\n")
    print("rec/s; CPU s per 1,000 records (the process, all threads); ms to the first batch")
    print(f"{'reader':<40}{'sequential rec/s':>17}{'P×K rec/s':>11}{'ratio':>7}"
          f"{'CPU s/1k seq':>14}{'P×K':>7}{'first ms seq':>14}{'P×K':>7}")
    runs: dict[tuple[str, str], list[list[float]]] = {
        (label, side): [] for label in LABELS for side in ("sequential", "pk")}
    for _ in range(args.runs):
        for (label, side), got in runs.items():  # alternate: drift hits every case alike
            got.append(_in_process(label, side, path, steps))
    for label in LABELS:
        s, c_s, f_s = (statistics.median(r[k] for r in runs[(label, "sequential")])
                       for k in range(3))
        p, c_p, f_p = (statistics.median(r[k] for r in runs[(label, "pk")]) for k in range(3))
        print(f"{label:<40}{s:>17,.0f}{p:>11,.0f}{p / s:>6.2f}x{c_s:>14.4f}{c_p:>7.4f}"
              f"{f_s * 1000:>14.1f}{f_p * 1000:>7.1f}")
    out = subprocess.run([sys.executable, "-c", RSS_PROBE, str(Path(args.dir) / "tenk")],
                         capture_output=True, text=True, check=True).stdout.split()
    print(f"\n10,000 classes x 5 records, 1,000 P×K batches (P=32, K=4, max_open_files=64): "
          f"{out[0]} records, peak RSS {out[1]} MB, at most {out[2]} files open")
    if args.json:
        figures = named({f"{label} {side}": done for (label, side), done in runs.items()},
                        ("records_per_s", "cpu_s_per_1k", "first_s"))
        median, spread = medians_and_spread(figures)
        write_results(args.json, "pk_sampling", classes=args.classes, per_class=args.per_class,
                      p=P, k=K, runs=args.runs, medians=median, spread=spread,
                      all_runs=figures,
                      ratios={f"{label} pk / sequential":
                              median[f"{label} pk"]["records_per_s"]
                              / median[f"{label} sequential"]["records_per_s"]
                              for label in LABELS},
                      many_classes={"records": int(out[0]), "peak_rss_mb": float(out[1]),
                                    "max_open_files": int(out[2])})


if __name__ == "__main__":
    main()
