"""When TFRecord is not the right format: small tabular rows read from Parquet (pyarrow, a
columnar format that needs no per-row parse) against the same rows through tfrecordkit's NumPy
loader, same machine, same run.

Rows: --rows records of 16 columns (10 float32, 5 int64, 1 short string). Both sides produce
every column as NumPy arrays, batch by batch (--batch rows); medians of --runs, alternating.

  parquet   pyarrow.parquet.ParquetFile(...).iter_batches(batch_size) -> column.to_numpy()
  ours      load_numpy_dataset(path, batch_size, sampling=InOrder()), one epoch

Run: python bench/parquet.py [--rows 200000] [--batch 1024] [--runs 5] [--dir bench_output]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from pathlib import Path

import numpy as np
from _results import add_json_option, scalar_medians, write_results


def make_rows(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    columns: dict[str, np.ndarray] = {f"f{k}": rng.random(n, dtype=np.float32)
                                      for k in range(10)}
    columns.update({f"i{k}": rng.integers(0, 1 << 40, n) for k in range(5)})
    columns["s"] = np.array([f"row-{i:08d}" for i in range(n)])
    return columns


def write_both(columns: dict[str, np.ndarray], folder: Path) -> tuple[Path, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    import tfrecordkit as tk

    n = len(columns["s"])
    parquet = folder / "rows.parquet"
    dataset = folder / "rows_ds"
    if not parquet.exists():
        pq.write_table(pa.table(columns), parquet)
    if not (dataset / "dataset.json").exists():
        schema = tk.Schema({**{f"f{k}": tk.Scalar("float32") for k in range(10)},
                            **{f"i{k}": tk.Scalar("int64") for k in range(5)},
                            "s": tk.Scalar("string")})
        names = list(columns)
        lists = {name: columns[name].tolist() for name in names}
        rows = ({name: lists[name][i] for name in names} for i in range(n))
        shutil.rmtree(dataset, ignore_errors=True)
        tk.write_dataset(rows, dataset, schema,
                         shards=tk.ShardOptions(shuffle=False), progress=False)
    return parquet, dataset


def time_parquet(path: Path, batch: int) -> float:
    import pyarrow.parquet as pq

    start = time.perf_counter()
    for part in pq.ParquetFile(path).iter_batches(batch_size=batch):
        for column in part.columns:
            column.to_numpy(zero_copy_only=False)
    return time.perf_counter() - start


def time_ours(path: Path, batch: int) -> float:
    import tfrecordkit as tk

    start = time.perf_counter()
    for _ in tk.load_numpy_dataset(path, batch_size=batch, sampling=tk.InOrder()):
        pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default="bench_output")
    add_json_option(parser)
    args = parser.parse_args()
    folder = Path(args.dir) / f"parquet-{args.rows}"
    folder.mkdir(parents=True, exist_ok=True)
    parquet, dataset = write_both(make_rows(args.rows), folder)
    times: dict[str, list[float]] = {"parquet": [], "ours": []}
    time_parquet(parquet, args.batch), time_ours(dataset, args.batch)  # warm the page cache
    for run in range(args.runs):
        order = ("parquet", "ours") if run % 2 == 0 else ("ours", "parquet")
        for name in order:
            timer = time_parquet if name == "parquet" else time_ours
            times[name].append(timer(parquet if name == "parquet" else dataset, args.batch))
    p, o = statistics.median(times["parquet"]), statistics.median(times["ours"])
    print(f"{args.rows} rows x 16 columns, batches of {args.batch}, medians of {args.runs}:")
    print(f"  parquet (pyarrow)          {args.rows / p:>12,.0f} rows/s")
    print(f"  tfrecordkit NumPy loader   {args.rows / o:>12,.0f} rows/s")
    print(f"  Parquet is {o / p:.1f}x faster here: a columnar file needs no per-row parse")
    if args.json:
        rates = {name: [args.rows / t for t in done] for name, done in times.items()}
        medians, spread = scalar_medians(rates)
        write_results(args.json, "parquet", rows=args.rows, batch=args.batch, runs=args.runs,
                      unit="rows/s", medians=medians, spread=spread, all_runs=rates,
                      ratios={"parquet / ours": o / p})


if __name__ == "__main__":
    main()
