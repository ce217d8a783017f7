"""What a mix costs: the NumPy loader reading a tk.Mix of two halves of a photo dataset against
reading the same dataset's split alone (the same records, the same files).

Dataset: --files real-content JPEGs of 160-320 px in 100 class folders (bench/convert_folder.py's
folder), converted once. Cases, each in a fresh process, alternating, medians of --runs
(records/s, and CPU seconds per 1,000 records, the steadier figure on a shared machine):

  split decoded     load_numpy_dataset(ds, "train", batch_size=64, image_size=224), shuffled
  mix decoded       load_numpy_dataset(tk.Mix([(ds, "train[:50%]"), (ds, "train[50%:]")]),
                    batch_size=64, image_size=224): each position drawn from a half by weight
  split raw         the split, DecodeOptions(decode=False): parsed, not decoded
  mix raw           the mix, DecodeOptions(decode=False): where the mix's own work shows most

Run: python bench/mix.py [--files 20000] [--runs 3] [--json bench_output/mix.json]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _results import add_json_option, medians_and_spread, run_fresh, write_results  # noqa: E402
from convert_folder import make_folder  # noqa: E402

CASES = ("split decoded", "mix decoded", "split raw", "mix raw")


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def run_case(case: str, dataset: str) -> dict[str, float]:
    import tfrecordkit as tk

    source = (tk.Mix([(dataset, "train[:50%]"), (dataset, "train[50%:]")])
              if case.startswith("mix") else dataset)
    options = tk.DecodeOptions(decode=case.endswith("decoded"))
    loader = tk.load_numpy_dataset(source, "train", batch_size=64, seed=0,
                                   image_size=224 if case.endswith("decoded") else None,
                                   options=options)
    cpu0, start, count = _cpu(), time.perf_counter(), 0
    for batch in loader:
        count += len(batch["__id"])
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu0
    return {"records_per_s": count / seconds, "cpu_s_per_1k": 1000 * cpu / count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", default="bench_output/mix")
    add_json_option(parser)
    args = parser.parse_args()
    import tfrecordkit as tk

    work = Path(args.work)
    folder = make_folder(Path("bench_output/convert_folder") / f"jpegs_{args.files}",
                         args.files)
    dataset = work / f"ds_{args.files}"
    if not (dataset / "dataset.json").exists():
        shutil.rmtree(dataset, ignore_errors=True)
        tk.convert(folder, dataset, split={"train": 1.0}, progress=False)
    runs: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
    for _ in range(args.runs):
        for case in CASES:
            runs[case].append(run_fresh("mix", f"run_case({case!r}, {str(dataset)!r})"))
    medians, spread = medians_and_spread(runs)
    print(f"{args.files:,} JPEG records, medians of {args.runs} alternating runs "
          f"(a fresh process each), {os.cpu_count()} cores")
    print(f"{'case':<16}{'records/s':>12}{'CPU s / 1k':>12}")
    for case, m in medians.items():
        print(f"{case:<16}{m['records_per_s']:>12,.0f}{m['cpu_s_per_1k']:>12.3f}")
    ratios = {}
    for kind in ("decoded", "raw"):
        mixed, alone = medians[f"mix {kind}"], medians[f"split {kind}"]
        ratios[f"mix {kind}"] = mixed["records_per_s"] / alone["records_per_s"]
        ratios[f"mix {kind} by CPU"] = alone["cpu_s_per_1k"] / mixed["cpu_s_per_1k"]
        print(f"mix / split, {kind}: {ratios[f'mix {kind}']:.3f}x by rate, "
              f"{ratios[f'mix {kind} by CPU']:.3f}x by CPU per record")
    if args.json:
        write_results(args.json, "mix", files=args.files, runs=args.runs, medians=medians,
                      spread=spread, ratios=ratios)


if __name__ == "__main__":
    main()
