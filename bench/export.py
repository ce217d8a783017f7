"""Export rate: tk.export against each target library's own writer fed the same bytes.

Dataset: --files real-content JPEGs of 160-320 px in 100 class folders (bench/convert_folder.py's
folder), converted once. Cases, each in a fresh process, alternating, medians of --runs
(records/s, and CPU seconds per 1,000 records):

  ours webdataset   tk.export(ds, out, to="webdataset")   (reads, CRC-checks, parses the
                                                          TFRecords, writes tar shards)
  wds ShardWriter   webdataset.ShardWriter fed the records' JPEG bytes and labels from memory
  ours parquet      tk.export(ds, out, to="parquet")
  pyarrow writer    pyarrow.parquet.ParquetWriter fed the same rows from memory, as
                    Hugging Face's {bytes, path} image structs and class ids
  ours hf           tk.export(ds, out, to="hf")
  hf generator      datasets.Dataset.from_generator over the same rows in memory, then
                    save_to_disk

The baselines get their input already in memory (the bytes our export reads from the shards):
a ratio of 1 means reading and parsing the TFRecords cost nothing on top of the writing.

Run: python bench/export.py [--files 20000] [--runs 3] [--json bench_output/export.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _results import add_json_option, run_fresh, write_results  # noqa: E402
from convert_folder import make_folder  # noqa: E402

CASES = ("ours webdataset", "wds ShardWriter", "ours parquet", "pyarrow writer", "ours hf",
         "hf generator")


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _rows(dataset: str) -> list[dict]:
    """The records' image bytes and class ids, in memory (the baselines' input)."""
    import tfrecordkit as tk

    out = []
    for split in tk.load_manifest(dataset).splits:
        records = tk.open_split(dataset, split)
        for i in range(len(records)):
            keys = tk.decode_example(records[i])
            out.append({"image": bytes(keys["image"][0]), "label": int(keys["label"][0])})
    return out


def run_case(case: str, work: str) -> dict[str, float]:
    import tfrecordkit as tk

    root = Path(work)
    dataset, out = str(root / "ds"), root / "out"
    shutil.rmtree(out, ignore_errors=True)
    names = list(tk.load_manifest(dataset).class_names)
    rows = [] if case.startswith("ours") else _rows(dataset)
    # Every library imported before the clock starts, in every case.
    import pyarrow.parquet
    import webdataset

    import datasets
    import tfrecordkit.exporters

    cpu0, start = _cpu(), time.perf_counter()
    if case.startswith("ours"):
        result = tk.export(dataset, out, to=case.split()[1], progress=False)  # type: ignore
        count = sum(result.records.values())
    elif case == "wds ShardWriter":
        import webdataset

        out.mkdir()
        with webdataset.ShardWriter(str(out / "shard-%06d.tar"), maxcount=10_000,
                                    verbose=0) as sink:
            for i, row in enumerate(rows):
                sink.write({"__key__": f"{i:09d}", "jpg": row["image"],
                            "cls": str(row["label"]).encode(),
                            "json": json.dumps({"label": row["label"],
                                                "label_name": names[row["label"]]}).encode()})
        count = len(rows)
    elif case == "pyarrow writer":
        import pyarrow as pa
        import pyarrow.parquet as pq

        import datasets

        out.mkdir()
        features = datasets.Features({"image": datasets.Image(),
                                      "label": datasets.ClassLabel(names=names)})
        schema = features.arrow_schema
        for k in range(0, len(rows), 10_000):
            with pq.ParquetWriter(out / f"part-{k:09d}.parquet", schema) as writer:
                part = rows[k : k + 10_000]
                for c in range(0, len(part), 256):
                    writer.write_table(pa.Table.from_pylist(
                        [{"image": {"bytes": r["image"], "path": None}, "label": r["label"]}
                         for r in part[c : c + 256]], schema=schema))
        count = len(rows)
    else:  # hf generator
        import datasets

        features = datasets.Features({"image": datasets.Image(),
                                      "label": datasets.ClassLabel(names=names)})

        def generate(n: int):
            for r in rows[:n]:
                yield {"image": {"bytes": r["image"], "path": None}, "label": r["label"]}

        built = datasets.Dataset.from_generator(generate, features=features,
                                                gen_kwargs={"n": len(rows)},
                                                cache_dir=str(root / "hf_cache"))
        built.save_to_disk(str(out))
        shutil.rmtree(root / "hf_cache", ignore_errors=True)
        count = len(rows)
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu0
    return {"records_per_s": count / seconds, "cpu_s_per_1k": 1000 * cpu / count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", default="bench_output/export")
    add_json_option(parser)
    args = parser.parse_args()
    import tfrecordkit as tk

    work = Path(args.work)
    folder = make_folder(Path("bench_output/convert_folder") / f"jpegs_{args.files}",
                         args.files)
    if not (work / "ds" / "dataset.json").exists():
        shutil.rmtree(work, ignore_errors=True)
        tk.convert(folder, work / "ds", split={"train": 0.9, "val": 0.1}, progress=False)
    runs: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
    for _ in range(args.runs):
        for case in CASES:
            runs[case].append(run_fresh("export", f"run_case({case!r}, {str(work)!r})"))
    medians = {case: {k: statistics.median(r[k] for r in done) for k in done[0]}
               for case, done in runs.items()}
    print(f"{args.files:,} JPEG records, medians of {args.runs} alternating runs "
          f"(a fresh process each), {os.cpu_count()} cores")
    print(f"{'case':<18}{'records/s':>12}{'CPU s / 1k':>12}")
    for case, m in medians.items():
        print(f"{case:<18}{m['records_per_s']:>12,.0f}{m['cpu_s_per_1k']:>12.3f}")
    ratios = {}
    for ours, theirs in (("ours webdataset", "wds ShardWriter"),
                         ("ours parquet", "pyarrow writer"), ("ours hf", "hf generator")):
        ratios[ours] = medians[ours]["records_per_s"] / medians[theirs]["records_per_s"]
        print(f"ratio {ours} / {theirs}: {ratios[ours]:.2f}x")
    if args.json:
        write_results(args.json, "export", files=args.files, runs=args.runs,
                      medians=medians, ratios=ratios)


if __name__ == "__main__":
    main()
