"""Growing a dataset: tk.append against converting the new inputs alone, and against
converting the grown folder again; then the duplicate scan's rate.

Folder: --files real-content JPEGs of 160-320 px in 100 class folders (bench/convert_folder.py's
folder), converted once into a base dataset; --new more files (other content, new names) in
the same classes. Each case runs in a fresh process on a fresh hard-linked copy of the base
dataset (an append never rewrites a file it has, so the copy is safe), cases alternate,
medians of --runs; seconds and CPU seconds (process and reaped children):

  convert new     tk.convert of a folder holding only the new files (the cost to beat)
  append new      tk.append(base, that folder): the same files into the base dataset
  append grown    tk.append(base, the grown folder): every file is read and encoded again to
                  find those already there (key and content), the new ones written
  convert grown   tk.convert of the grown folder into a new dataset (what append replaces)

Then the duplicate scan over the grown dataset (tk.store.find_duplicates), records/s: from
the .digests sidecars, and from the stored records (shards without sidecars: adopted files).

Run: python bench/append.py [--files 40000] [--new 1000] [--runs 3]
     [--json bench_output/append.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _results import add_json_option, medians_and_spread, run_fresh, write_results  # noqa: E402
from convert_folder import make_folder  # noqa: E402


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def run_case(case: str, work: str) -> dict[str, float]:
    import tfrecordkit as tk

    root = Path(work)
    target = root / "out"
    shutil.rmtree(target, ignore_errors=True)
    if case.startswith("append"):
        subprocess.run(["cp", "-al", str(root / "base"), str(target)], check=True)
    folder = root / ("new" if case.endswith("new") else "grown")
    cpu0, start = _cpu(), time.perf_counter()
    if case.startswith("convert"):
        result = tk.convert(folder, target, split={"train": 0.9, "val": 0.1})
        added, present = result.records, 0
    else:
        result = tk.append(target, folder)
        added, present = result.added or 0, result.present
    elapsed, cpu = time.perf_counter() - start, _cpu() - cpu0
    shutil.rmtree(target, ignore_errors=True)
    return {"seconds": elapsed, "cpu_s": cpu, "written": float(added),
            "left_out": float(present)}


def _folders(work: Path, files: int, new: int) -> None:
    """base/ (the converted dataset of ``files``), new/ (``new`` other files), grown/ (both)."""
    import tfrecordkit as tk

    old = make_folder(work / "old_files", files)
    if not (work / "new" / ".complete").exists():
        fresh = make_folder(work / "new_raw", new, seed=1)
        shutil.rmtree(work / "new", ignore_errors=True)
        for path in fresh.rglob("*.jpg"):
            (work / "new" / path.parent.name).mkdir(parents=True, exist_ok=True)
            os.link(path, work / "new" / path.parent.name / f"new_{path.name}")
        (work / "new" / ".complete").write_text("ok")
    if not (work / "grown" / ".complete").exists():
        shutil.rmtree(work / "grown", ignore_errors=True)
        for source in (old, work / "new"):
            for path in source.rglob("*.jpg"):
                (work / "grown" / path.parent.name).mkdir(parents=True, exist_ok=True)
                os.link(path, work / "grown" / path.parent.name / path.name)
        (work / "grown" / ".complete").write_text("ok")
    if not (work / "base" / "dataset.json").exists():
        tk.convert(old, work / "base", split={"train": 0.9, "val": 0.1}, overwrite=True)


def duplicate_scan(work: Path) -> dict[str, float]:
    """records/s of find_duplicates over the grown dataset, from digests and from records."""
    import tfrecordkit as tk
    from tfrecordkit.store import find_duplicates

    grown = work / "grown_ds"
    if not (grown / "dataset.json").exists():
        tk.convert(work / "grown", grown, split={"train": 0.9, "val": 0.1}, overwrite=True)
    start = time.perf_counter()
    found = find_duplicates(str(grown))
    from_digests = found.records / (time.perf_counter() - start)
    bare = work / "grown_bare"  # the same shards, their manifest without digests
    shutil.rmtree(bare, ignore_errors=True)
    subprocess.run(["cp", "-al", str(grown), str(bare)], check=True)
    manifest = json.loads((bare / "dataset.json").read_text())
    for split in manifest["splits"].values():
        for shard in split["shards"]:
            shard.pop("digests", None)
    (bare / "dataset.json").unlink()
    (bare / "dataset.json").write_text(json.dumps(manifest))
    stored = sum(s["bytes"] for split in manifest["splits"].values() for s in split["shards"])
    start = time.perf_counter()
    again = find_duplicates(str(bare))
    seconds = time.perf_counter() - start
    assert again.groups == found.groups
    return {"records": found.records, "groups": found.group_count,
            "from_digests_per_s": from_digests, "from_records_per_s": again.records / seconds,
            "from_records_mb_per_s": stored / 2**20 / seconds}


CASES = ("convert new", "append new", "append grown", "convert grown")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=40000)
    parser.add_argument("--new", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--work", default=str(HERE.parent / "bench_output" / "append"))
    add_json_option(parser)
    args = parser.parse_args()
    work = Path(args.work) / f"{args.files}_{args.new}"
    work.mkdir(parents=True, exist_ok=True)
    _folders(work, args.files, args.new)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    runs: dict[str, list[dict[str, float]]] = {case: [] for case in cases}
    for run in range(args.runs):
        for case in cases if run % 2 == 0 else cases[::-1]:
            runs[case].append(run_fresh("append", f"run_case({case!r}, {str(work)!r})"))
            print(f"run {run + 1} {case}: {runs[case][-1]}", flush=True)
    medians, spread = medians_and_spread(runs)
    print(f"\n{args.files} files in the dataset, {args.new} new; medians of {args.runs} runs")
    print(f"{'case':<15}{'s':>8}{'CPU s':>8}{'written':>9}{'left out':>10}")
    for case in cases:
        m = medians[case]
        print(f"{case:<15}{m['seconds']:>8.2f}{m['cpu_s']:>8.2f}{m['written']:>9.0f}"
              f"{m['left_out']:>10.0f}")
    ratios: dict[str, float] = {}
    if "append new" in medians and "convert new" in medians:
        ratios["append_new_over_convert_new"] = statistics.median(
            a["seconds"] / c["seconds"] for a, c in zip(runs["append new"],
                                                          runs["convert new"], strict=True))
    if "append grown" in medians and "convert grown" in medians:
        ratios["append_grown_over_convert_grown"] = statistics.median(
            a["seconds"] / c["seconds"] for a, c in zip(runs["append grown"],
                                                          runs["convert grown"], strict=True))
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}x (median of per-run ratios)")
    scan = duplicate_scan(work)
    print(f"duplicate scan over {scan['records']:.0f} records: "
          f"{scan['from_digests_per_s']:,.0f} records/s from digests, "
          f"{scan['from_records_per_s']:,.0f} records/s ({scan['from_records_mb_per_s']:,.0f} "
          f"MiB/s) from the stored records; {scan['groups']:.0f} group(s) of equal records")
    if args.json:
        write_results(args.json, "append", files=args.files, new=args.new, runs=runs,
                      medians=medians, spread=spread, ratios=ratios, duplicate_scan=scan)


if __name__ == "__main__":
    main()
