"""Random access to single records: ``open_split(...)[i]`` and ``get_many`` against grain's
``ArrayRecordDataSource`` over the same record bytes.

Dataset: --records real-content JPEGs of 200-400 px (bench/photos.py's generator), each a
serialized tf.train.Example (image + label), written once by tfrecordkit (uncompressed, 16
shards) and, byte for byte the same records, into 16 ArrayRecord files with the writer options
``group_size:1`` (one record per chunk, what random access needs) and ArrayRecord's default
compression (zstd). Each case runs in a fresh process; cases alternate; medians of --runs.

  tk[i]          records[i] for --fetches random indices, one at a time
  tk get_many    records.get_many(64 random indices) until --fetches records
  ar[i]          ArrayRecordDataSource(files)[i], one at a time
  ar getitems    ArrayRecordDataSource(files).__getitems__(64 random indices)
  tk gzip[i]     records[i] over the same dataset written with compression="gzip", restart
                 points every --restart KiB of records (a fetch inflates from the one before;
                 each point is confirmed against the stream the first time it is used, so a
                 fresh dataset's first fetches inflate every file once through)
  tk gzip warm[i]  the same, after one untimed pass over the same indices: every point
                 confirmed, inflated parts kept up to 128 MiB
  tk parsed[i]   a record's values, parsed (not decoded): grain's source with
                 DecodeOptions(decode=False), source[i] -> image bytes, label, dims, id
  mds[i]         MosaicML Streaming's StreamingDataset(local=...)[i] over the same values
                 written with MDSWriter (image as bytes, label and dims as ints; 64 MiB
                 shards): --mds-python names an interpreter that has mosaicml-streaming
                 (its unpinned torch may not sit beside ours)

Every case also reports the growth of anonymous memory (RssAnon) over its fetches.

Run: python bench/random_access.py [--records 20000] [--fetches 10000] [--runs 5]
     [--mds-python PATH] [--json bench_output/random_access.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _results import medians_and_spread, run_fresh, write_results  # noqa: E402

SHARDS = 16
GROUP = 64
AR_OPTIONS = "group_size:1"  # ArrayRecord's default compression otherwise (zstd)


def _rss_anon() -> int:
    """Anonymous resident memory of this process, in bytes (Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def make(root: Path, records: int, restart_kib: int) -> dict[str, Path]:
    """The photos dataset (plain and gzip) and the same records as ArrayRecord files."""
    import photos  # bench/photos.py: the generator of real-content JPEGs

    plain = photos.make_photos(root / f"photos_{records}", records)
    import tfrecordkit as tk

    gz = root / f"photos_{records}_gzip_{restart_kib}k"
    if not (gz / "dataset.json").exists():
        # The same records, compressed, with restart points every restart_kib KiB.
        files = []
        source = tk.open_split(plain)
        gz.mkdir(parents=True, exist_ok=True)
        per = -(-len(source) // SHARDS)
        for shard in range(SHARDS):
            name = gz / f"part-{shard:05d}.tfrecord.gz"
            with tk.RecordWriter(name, compression="gzip",
                                 restarts_path=str(name) + ".restarts",
                                 restart_bytes=restart_kib << 10) as writer:
                for i in range(shard * per, min(len(source), (shard + 1) * per)):
                    writer.write(source[i])
            files.append(str(name))
        tk.adopt(files, gz)
    ar = root / f"photos_{records}_array_record"
    if not ar.exists():
        from array_record.python.array_record_module import ArrayRecordWriter

        import tfrecordkit as tk

        ar.mkdir(parents=True)
        source = tk.open_split(plain)
        per = -(-len(source) // SHARDS)
        for shard in range(SHARDS):
            writer = ArrayRecordWriter(str(ar / f"part-{shard:05d}.array_record"), AR_OPTIONS)
            for i in range(shard * per, min(len(source), (shard + 1) * per)):
                writer.write(source[i])
            writer.close()
    return {"plain": plain, "gzip": gz, "array_record": ar}


def make_mds(root: Path, plain: Path, python: str) -> Path:
    """The photos' values (image bytes, label, dims) as an MDS dataset, written by
    ``python`` (an interpreter with mosaicml-streaming) from a dump of them."""
    out = root / f"{plain.name}_mds"
    if (out / "index.json").exists():
        return out
    import pickle

    import tfrecordkit as tk

    source = tk.load_grain_source(plain, options=tk.DecodeOptions(decode=False))
    rows = []
    for i in range(len(source)):
        row = source[i]
        rows.append((row["image"], int(row["label"]), int(row["image/height"]),
                     int(row["image/width"])))
    dump = root / f"{plain.name}_values.pickle"
    dump.write_bytes(pickle.dumps(rows))
    run_fresh("random_access", f"write_mds({str(dump)!r}, {str(out)!r})", python)
    dump.unlink()
    return out


def write_mds(dump: str, out: str) -> int:
    """(Run by the MDS interpreter.) Write the dumped values with MDSWriter."""
    import pickle

    from streaming import MDSWriter

    rows = pickle.loads(Path(dump).read_bytes())
    columns = {"image": "bytes", "label": "int", "height": "int", "width": "int"}
    with MDSWriter(out=out, columns=columns, size_limit=1 << 26) as writer:
        for image, label, height, width in rows:
            writer.write({"image": image, "label": label, "height": height, "width": width})
    return len(rows)


def run_case(case: str, paths: dict[str, str], fetches: int) -> dict[str, float]:

    if case == "mds[i]":
        from streaming import StreamingDataset

        source: Any = StreamingDataset(local=paths["mds"], shuffle=False, batch_size=1)
        return _fetch_loop(case, source, None, fetches, lambda value: len(value["image"]))
    if case == "tk parsed[i]":
        import tfrecordkit as tk

        source = tk.load_grain_source(paths["plain"],
                                      options=tk.DecodeOptions(decode=False))
        return _fetch_loop(case, source, None, fetches, lambda value: len(value["image"]))
    if case.startswith("ar"):
        from grain.python import ArrayRecordDataSource

        files = sorted(str(p) for p in Path(paths["array_record"]).glob("*.array_record"))
        source: Any = ArrayRecordDataSource(files)
        many = source.__getitems__
    else:
        import tfrecordkit as tk

        source = tk.open_split(paths["gzip" if "gzip" in case else "plain"])
        many = source.get_many
    return _fetch_loop(case, source, many, fetches, len)


def _fetch_loop(case: str, source: Any, many: Any, fetches: int, size_of: Any
                ) -> dict[str, float]:
    import numpy as np

    n = len(source)
    rng = np.random.default_rng(0)
    ids = rng.integers(0, n, fetches).tolist()
    # Warm-up (files opened, indexes read): not timed.
    for i in ids[: fetches if "warm" in case else 200]:
        source[i]
    before = _rss_anon()
    start = time.perf_counter()
    size = 0
    if case.endswith("[i]"):
        for i in ids:
            size += size_of(source[i])
    else:
        for k in range(0, fetches, GROUP):
            size += sum(len(r) for r in many(ids[k : k + GROUP]))
    elapsed = time.perf_counter() - start
    return {"fetches_per_s": fetches / elapsed, "us_per_fetch": elapsed / fetches * 1e6,
            "rss_anon_growth_mb": (_rss_anon() - before) / 2**20, "bytes": size}


def _in_process(case: str, paths: dict[str, Path], fetches: int, python: str | None = None
                ) -> dict[str, float]:
    given = {k: str(v) for k, v in paths.items()}
    return run_fresh("random_access", f"run_case({case!r}, {given!r}, {fetches})",
                     python if case == "mds[i]" else None)


CASES = ("tk[i]", "ar[i]", "tk get_many", "ar getitems", "tk gzip[i]", "tk gzip warm[i]",
         "tk parsed[i]", "mds[i]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--fetches", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--restart", type=int, default=512, help="KiB between restart points")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--dir", default="bench_output/photos")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--mds-python", default=sys.executable,
                        help="an interpreter with mosaicml-streaming (for mds[i])")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    skipped: dict[str, str] = {}
    try:
        import array_record  # noqa: F401
        import grain  # noqa: F401
    except ImportError as err:
        for case in cases:
            if case.startswith("ar"):
                skipped[case] = f"not installed: {err.name} (the bench dependency group)"
    paths = make(Path(args.dir), args.records, args.restart)
    if "mds[i]" in cases:
        try:
            paths["mds"] = make_mds(Path(args.dir), paths["plain"], args.mds_python)
        except RuntimeError as err:
            skipped["mds[i]"] = ("mosaicml-streaming not importable by --mds-python: "
                                 + str(err).splitlines()[-1])
    if "array_record" in skipped.get("ar[i]", ""):
        paths.pop("array_record", None)
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in cases}
    for _ in range(args.runs):
        for case in cases:
            if case in skipped:
                continue
            try:
                runs[case].append(_in_process(case, paths, args.fetches, args.mds_python))
            except RuntimeError as err:
                skipped[case] = str(err).splitlines()[-1]
    median, spread = medians_and_spread(runs)
    size = median[next(iter(median))]["bytes"] / args.fetches if median else 0
    print(f"medians of {args.runs} runs, {args.fetches} random fetches each, {args.records} "
          f"records of {size / 1024:.1f} KiB on average, {os.cpu_count()} cores; ArrayRecord "
          f"'{AR_OPTIONS}' (default compression); gzip restart points every {args.restart} "
          f"KiB\n")
    print(f"{'case':<14}{'fetches/s':>11}{'  (min-max)':<20}{'µs/fetch':>9}{'RssAnon +MB':>13}")
    for case, m in median.items():
        low, high = spread[case]["fetches_per_s"]
        print(f"{case:<14}{m['fetches_per_s']:>11,.0f}  ({low:,.0f}-{high:,.0f}){'':<3}"
              f"{m['us_per_fetch']:>9.1f}{m['rss_anon_growth_mb']:>13.1f}")
    for case, why in skipped.items():
        print(f"{case:<14}skipped: {why}")
    ratios = {}
    rate = {c: m["fetches_per_s"] for c, m in median.items()}
    for ours, base in (("tk[i]", "ar[i]"), ("tk get_many", "ar getitems"),
                       ("tk parsed[i]", "mds[i]")):
        if ours in rate and base in rate:
            ratios[f"{ours} / {base}"] = rate[ours] / rate[base]
    print()
    for name, value in ratios.items():
        print(f"  {name:<28}{value:.2f}x")
    if args.json:
        write_results(args.json, "random_access", records=args.records, fetches=args.fetches,
                      runs=args.runs, restart_kib=args.restart, array_record_options=AR_OPTIONS,
                      medians=median, spread=spread, all_runs=runs, ratios=ratios,
                      skipped=skipped)


if __name__ == "__main__":
    main()
