"""Columnar Example decoding without TensorFlow vs tf.io.parse_example, on the same records.

Records: 16-feature tabular Examples (10 float32, 5 int64, 1 string; ~270 bytes), as
bench/tf_read.py writes them, held in memory as a list of bytes. Batches of --batch records,
all of them decoded into per-key arrays; medians of --runs, cases alternating, each case
run in a fresh process (warm once there, then timed): in one process TensorFlow's runtime
threads, once started, slowed every case after them (--shared-process measures that way):

  tf.io.parse_example   tf.io.parse_example(tf.constant(batch), feature_description)
  compiled              tfrecordkit.format.parse_examples(batch, specs)   (the C codec)
  python                the same through protobuf (TFRECORDKIT_PURE_PYTHON=1's path)
  per record            Schema.decode of every record (what the loaders did before)
  slices                parse_examples over one shard buffer with the .index offsets, in
                        batches of --batch records (RecordSlices of the buffer)
  Schema.decode_batch   parsed and decoded as every reader takes them, from the list and
                        from the slices
  loaders               load_numpy_dataset vs load_tf_dataset over the same dataset, batch 256

Run: python bench/codec.py [--records 100000] [--batch 1024] [--runs 5] [--shared-process]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).parent))
from _results import add_json_option, scalar_medians, write_results

import tfrecordkit as tk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default="bench_output/codec")
    parser.add_argument("--shared-process", action="store_true",
                        help="every case in this one process (the old way: TensorFlow's "
                             "threads then slow the cases after it)")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # one case, in a child process
    add_json_option(parser)
    args = parser.parse_args()
    import numpy as np
    from tf_read import make_datasets

    from tfrecordkit import load_manifest, read_records
    from tfrecordkit.format._columns import (
        RecordSlices,
        _parse_python,
        codec_name,
        parse_examples,
    )
    from tfrecordkit.format._index import load_index

    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    _, small = make_datasets(folder, 10, args.records)
    manifest = load_manifest(small)
    files = [small / s.file for s in manifest.split("train").shards]
    records = [r for f in files for r in read_records(f)]
    schema = manifest.schema
    specs = schema.key_specs()
    batches = [records[i : i + args.batch] for i in range(0, len(records), args.batch)]
    shard = files[0].read_bytes()
    table = load_index(str(files[0]) + ".index")
    slices = RecordSlices(shard, table[:, 0] + 12, table[:, 1] - 16)
    if args.case is None:
        how = "one process" if args.shared_process else "a fresh process per case and run"
        print(f"{len(records)} records, {len(specs)} keys, batch {args.batch}, codec "
              f"{codec_name()}, {os.cpu_count()} cores, {how}")

    def tf_case() -> int:
        import tensorflow as tf

        from tfrecordkit.readers.tf_data import feature_description

        description = feature_description(schema)
        for batch in batches:
            tf.io.parse_example(tf.constant(batch), description)
        return len(records)

    def compiled() -> int:
        for batch in batches:
            parse_examples(batch, specs)
        return len(records)

    def python() -> int:
        for batch in batches[: max(1, len(batches) // 10)]:  # a tenth: it is slow
            _parse_python(batch, specs, None)
        return sum(len(b) for b in batches[: max(1, len(batches) // 10)])

    def per_record() -> int:
        chosen = records[: len(records) // 10]
        for record in chosen:
            schema.decode(record)
        return len(chosen)

    def decode_batch() -> int:  # parsed and decoded: text as str, labels checked
        for batch in batches:
            schema.decode_batch(batch)
        return len(records)

    def decode_batch_sliced() -> int:
        for start in range(0, len(slices), args.batch):
            schema.decode_batch(slices[start : start + args.batch])
        return len(slices)

    def sliced() -> int:  # the same batch size as the other cases
        for start in range(0, len(slices), args.batch):
            parse_examples(slices[start : start + args.batch], specs)
        return len(slices)

    from tfrecordkit.readers.numpy_data import load_numpy_dataset
    from tfrecordkit.readers.tf_data import load_tf_dataset

    def numpy_loader() -> int:
        count = 0
        for batch in load_numpy_dataset(small, batch_size=256,
                                        sampling=tk.Shuffled()):
            count += len(batch["__id"])
        return count

    def tf_loader() -> int:
        count = 0
        for batch in load_tf_dataset(small, batch_size=256):
            count += len(batch["s"])
        return count

    cases = {"load_tf_dataset (loader)": tf_loader, "load_numpy_dataset (loader)": numpy_loader,
             "tf.io.parse_example": tf_case, "compiled": compiled, "python": python,
             "per record (Schema.decode)": per_record, "slices of one shard": sliced,
             "Schema.decode_batch": decode_batch,
             "Schema.decode_batch, slices": decode_batch_sliced}
    if args.case is not None:  # one case in this process, warm, then timed
        cases[args.case]()
        start = time.perf_counter()
        count = cases[args.case]()
        print(json.dumps(count / (time.perf_counter() - start)))
        return
    rates: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, case in cases.items():
            if args.shared_process:
                start = time.perf_counter()
                count = case()
                rates[name].append(count / (time.perf_counter() - start))
                continue
            argv = [a for a in sys.argv[1:] if a != "--json" and a != args.json]
            out = subprocess.run([sys.executable, __file__, *argv, "--case", name],
                                 capture_output=True, text=True, check=True).stdout
            rates[name].append(json.loads(out.strip().splitlines()[-1]))
    base = statistics.median(rates["tf.io.parse_example"])
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"{name:28s} {rate:12,.0f} rec/s   {rate / base:5.2f}x tf.io.parse_example")
    if args.json:
        medians, spread = scalar_medians(rates)
        write_results(args.json, "codec", records=len(records), batch=args.batch,
                      runs=args.runs, codec=codec_name(), unit="records/s", medians=medians,
                      spread=spread, all_runs=rates,
                      ratios={f"{n} / tf.io.parse_example": m / base
                              for n, m in medians.items()})
    del np


if __name__ == "__main__":
    main()
