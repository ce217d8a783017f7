"""tf.data over adopted per-class files: a label taken from each file's name (records carry
none) against the same files with the label stored in every record.

Plain TensorFlow writes 8 files of small records (4 floats and an int, ~40 bytes), once with
an int64 `label` in each record and once without; `adopt` makes the first a dataset reading
the stored label and the second one taking the class from `class_<k>.tfrecord`
(`class_pattern`). Timed: one epoch of `load_tf_dataset(batch_size=256)` (shuffled,
interleaved), each side once per run. Small records are the worst case for the label from the
file, which appends an 18-byte label entry to every record before parsing.
Prints medians of --runs and the ratio (from names / stored).

Run: python bench/shard_labels.py [--records 200000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _results import add_json_option, scalar_medians, write_results

import tfrecordkit as tk


def write_files(folder: Path, records: int, labelled: bool) -> None:
    import tensorflow as tf

    folder.mkdir(parents=True)
    per_file = records // 8
    for k in range(8):
        with tf.io.TFRecordWriter(str(folder / f"class_{k}.tfrecord")) as writer:
            for i in range(per_file):
                feature = {
                    "x": tf.train.Feature(float_list=tf.train.FloatList(
                        value=[i / 3, k, 1.0, 2.0])),
                    "n": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}
                if labelled:
                    feature["label"] = tf.train.Feature(
                        int64_list=tf.train.Int64List(value=[k]))
                writer.write(tf.train.Example(features=tf.train.Features(
                    feature=feature)).SerializeToString())


def epoch(path: Path) -> float:
    """Records per second over one epoch, checking every label against ``x``'s class."""
    start, n = time.perf_counter(), 0
    for batch in tk.load_tf_dataset(path, batch_size=256, seed=0):
        labels = batch["label"].numpy()
        assert (labels == batch["x"].numpy()[:, 1].astype(int)).all()
        n += len(labels)
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    add_json_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stored, named = Path(tmp) / "stored", Path(tmp) / "named"
        write_files(stored, args.records, labelled=True)
        write_files(named, args.records, labelled=False)
        tk.adopt(stored)
        tk.adopt(named, class_pattern=r"class_(\d+)")
        rates: dict[str, list[float]] = {"stored": [], "named": []}
        for _ in range(args.runs):
            rates["stored"].append(epoch(stored))
            rates["named"].append(epoch(named))
    for side, values in rates.items():
        print(f"{side:>6}: median {statistics.median(values) / 1e3:.0f}k rec/s "
              f"(runs: {', '.join(f'{v / 1e3:.0f}k' for v in values)})")
    ratio = statistics.median(rates["named"]) / statistics.median(rates["stored"])
    print(f"label from the file name / label in the record: {ratio:.2f}x")
    if args.json:
        medians, spread = scalar_medians(rates)
        write_results(args.json, "shard_labels", records=args.records, runs=args.runs,
                      unit="records/s", medians=medians, spread=spread, all_runs=rates,
                      ratios={"named / stored": ratio})


if __name__ == "__main__":
    main()
