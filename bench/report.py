"""How long `tk.dataset_report` takes on a large dataset: counts come from the manifest and
the rest from a seeded sample, so it should take seconds whatever the size.

Writes (once) a dataset of --records small PNG records in --classes classes, two splits, then
times the report --runs times and prints each time, the median, and the page size.

Run: python bench/report.py [--records 200000] [--classes 1000] [--runs 3]
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default="bench_output/report")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args()
    from PIL import Image

    import tfrecordkit as tk

    path = Path(args.dir) / f"ds_{args.records}_{args.classes}"
    if not (path / "dataset.json").exists():
        rng = np.random.default_rng(0)
        blobs = []
        for i in range(64):
            buffer = io.BytesIO()
            Image.fromarray(rng.integers(0, 255, (24 + i % 9, 32, 3), np.uint8)).save(
                buffer, "PNG")
            blobs.append(buffer.getvalue())
        schema = tk.Schema({"image": tk.Image("png"),
                            "label": tk.ClassLabel([f"c{k}" for k in range(args.classes)])})
        rows = ({"image": blobs[i % 64], "label": i % args.classes}
                for i in range(args.records))
        tk.write_dataset(rows, path, schema, split={"train": 0.9, "val": 0.1},
                         shards=tk.ShardOptions(num_shards=32), overwrite=True)
    times, size = [], 0
    for _ in range(args.runs):
        start = time.perf_counter()
        size = len(tk.dataset_report(path).encode("utf-8"))
        times.append(time.perf_counter() - start)
    print(f"{args.records:,} records, {args.classes:,} classes: report in "
          + ", ".join(f"{t:.2f}" for t in times)
          + f" s (median {statistics.median(times):.2f} s), {size / 1e3:,.0f} kB")
    if args.json:
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _results import write_results

        write_results(args.json, "report", records=args.records, classes=args.classes,
                      runs=args.runs,
                      medians={"report": {"seconds": statistics.median(times),
                                          "page_kb": size / 1e3}},
                      spread={"report": {"seconds": [min(times), max(times)]}})


if __name__ == "__main__":
    main()
