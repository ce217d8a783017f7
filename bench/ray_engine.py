"""tfrecordkit on Ray Data against Ray's own TFRecord support, on the same data, in one run.

- Conversion: ``tfrecordkit.ray.write_dataset`` of a materialized Ray Dataset against
  ``ray.data.Dataset.write_tfrecords`` of the same one (TensorFlow in the workers; no shuffle,
  no index, no manifest); and ``write_dataset(rows, engine="ray")`` against the local engine.
- Reading: ``tfrecordkit.ray.read_dataset`` against ``ray.data.read_tfrecords`` (TensorFlow
  parsing in the workers), each timed to a materialized dataset.

The records are small tabular ones (10 float, 5 int64 and 1 string feature). The cluster is a
local one (``ray.init(num_cpus=2)``).

Run: python bench/ray_engine.py [--records 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _results import add_json_option, scalar_medians, write_results

import tfrecordkit as tk
from tfrecordkit import ShardOptions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    add_json_option(parser)
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import ray

    from tfrecordkit.ray import read_dataset, write_dataset

    n = args.records
    schema = tk.Schema({**{f"f{i}": tk.Scalar("float32") for i in range(10)},
                        **{f"i{i}": tk.Scalar("int64") for i in range(5)}, "s": tk.Text()})
    rng = np.random.default_rng(0)
    values = rng.random((n, 10))
    rows = [{**{f"f{j}": float(values[i, j]) for j in range(10)},
             **{f"i{j}": i * 7 + j for j in range(5)}, "s": f"category {i % 100}"}
            for i in range(n)]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"TF_CPP_MIN_LOG_LEVEL": "3"}})
    ray.data.DataContext.get_current().enable_progress_bars = False
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ds"
        writes: dict[str, list[float]] = {
            "ray write_tfrecords": [], "tfrecordkit.ray.write_dataset": [],
            "tfrecordkit, ray engine": [], "tfrecordkit, local engine": []}
        # Both Dataset writers start from the same materialized Ray Dataset.
        table = ray.data.from_items(rows, override_num_blocks=8).materialize()
        for _ in range(args.runs):
            start = time.perf_counter()
            table.write_tfrecords(str(Path(tmp) / "ray_written"))
            writes["ray write_tfrecords"].append(time.perf_counter() - start)
            start = time.perf_counter()
            write_dataset(table, Path(tmp) / "from_ray", schema,
                          shards=ShardOptions(num_shards=8), overwrite=True)
            writes["tfrecordkit.ray.write_dataset"].append(time.perf_counter() - start)
            for name, engine in (("tfrecordkit, ray engine", "ray"),
                                 ("tfrecordkit, local engine", "local")):
                start = time.perf_counter()
                tk.write_dataset(rows, out, schema,
                                 shards=tk.ShardOptions(num_shards=8), engine=engine,
                                 overwrite=True)
                writes[name].append(time.perf_counter() - start)
        files = sorted(str(p) for p in out.glob("*.tfrecord"))

        def ours() -> int:
            return read_dataset(out).materialize().count()

        def theirs() -> int:
            return ray.data.read_tfrecords(files).materialize().count()

        assert ours() == theirs() == n  # warm both (worker start, imports)
        times: dict[str, list[float]] = {"ray.data.read_tfrecords": [], "tfrecordkit": []}
        for _ in range(args.runs):
            for name, read in (("ray.data.read_tfrecords", theirs), ("tfrecordkit", ours)):
                start = time.perf_counter()
                read()
                times[name].append(time.perf_counter() - start)
    print(f"{n:,} records x 16 features, {len(files)} files; medians of {args.runs} runs, "
          f"local Ray cluster, 2 CPUs\n\nconversion (shuffled, sharded, indexed, manifest; "
          f"Ray's writer does none of these)")
    base = statistics.median(writes["ray write_tfrecords"])
    for name, samples in writes.items():
        median = statistics.median(samples)
        print(f"{name:<32}{median:>8.2f} s{n / median:>12,.0f} rec/s{base / median:>8.2f}x")
    print("\nreading into a Ray Dataset")
    base = statistics.median(times["ray.data.read_tfrecords"])
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<32}{median:>8.2f} s{n / median:>12,.0f} rec/s{base / median:>8.2f}x")
    ray.shutdown()
    if args.json:
        rates = {name: [n / t for t in done] for name, done in {**writes, **{
            f"read: {k}": v for k, v in times.items()}}.items()}
        medians, spread = scalar_medians(rates)
        write_results(args.json, "ray_engine", records=n, runs=args.runs, unit="records/s",
                      medians=medians, spread=spread, all_runs=rates, ratios={
                          "tfrecordkit, ray engine / ray write_tfrecords":
                              medians["tfrecordkit, ray engine"]
                              / medians["ray write_tfrecords"],
                          "read: tfrecordkit / ray.data.read_tfrecords":
                              medians["read: tfrecordkit"]
                              / medians["read: ray.data.read_tfrecords"]})


if __name__ == "__main__":
    main()
