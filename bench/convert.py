"""Conversion speed and memory: tfrecordkit vs the tutorial loop (tf.train.Example helpers +
tf.io.TFRecordWriter), on the same inputs, in one run.

Cases: ~6 KB pre-encoded JPEG records with 4 features; small tabular records with 16 features
(10 float, 5 int64, 1 string); each with our default write-time shuffle (records held in
memory up to TFRECORDKIT_SHUFFLE_MEMORY, 256 MiB by default, past it spilled to disk and read
back: --hold-memory 0 measures the spill every dataset larger than that takes) and without it
(one pass, input order, as the tutorial);
an image folder of 50,000 JPEG files (ImageFolder: read, test-decoded at 1/8 scale, kept)
against the ceiling of reading and test-decoding the same files on every core, start-up apart;
peak RSS converting a dataset and one 10x larger (fresh processes).

Run: python bench/convert.py [--records 40000] [--files 50000] [--runs 3] [--dir bench_output]
                             [--hold-memory BYTES]
     python bench/convert.py --only-folder   (the image-folder case alone)
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _results import add_json_option, medians_and_spread, write_results
from PIL import Image

from tfrecordkit import ClassLabel, Scalar, Schema, ShardOptions, Text, convert, write_dataset
from tfrecordkit import Image as ImageFeature
from tfrecordkit.sources import ImageFolder

RSS_PROBE = """
import sys, numpy as np
from tfrecordkit import Scalar, Schema, ShardOptions, Text, write_dataset
n = int(sys.argv[2])
schema = Schema({**{f"f{i}": Scalar("float32") for i in range(10)},
                 **{f"i{i}": Scalar("int64") for i in range(5)}, "s": Text()})
def rows():
    rng = np.random.default_rng(0)
    for i in range(n):
        v = rng.random(10)
        yield {**{f"f{j}": float(v[j]) for j in range(10)},
               **{f"i{j}": i * 7 + j for j in range(5)}, "s": f"category {i % 100}"}
write_dataset(rows(), sys.argv[1], schema, overwrite=True,
              shards=ShardOptions(shard_size=32 << 20))
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(int(hwm.split()[1]) // 1024)
"""


def jpeg_pool(count: int = 256) -> list[bytes]:
    rng = np.random.default_rng(0)
    pool = []
    for _ in range(count):
        # Smooth noise compresses like a photo: ~6 KB at 128x128, quality 90.
        small = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
        image = Image.fromarray(small).resize((128, 128), Image.Resampling.BICUBIC)
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=90)
        pool.append(buffer.getvalue())
    return pool


def tabular_rows(n: int) -> list[dict]:
    rng = np.random.default_rng(1)
    values = rng.random((n, 10))
    return [{**{f"f{j}": float(values[i, j]) for j in range(10)},
             **{f"i{j}": i * 7 + j for j in range(5)}, "s": f"category {i % 100}"}
            for i in range(n)]


# -- the tutorial baseline -------------------------------------------------------------------

def tutorial_images(tf, path: str, pool: list[bytes], n: int) -> None:
    def _bytes_feature(value):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    def _int64_feature(value):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    with tf.io.TFRecordWriter(path) as writer:
        for i in range(n):
            example = tf.train.Example(features=tf.train.Features(feature={
                "image": _bytes_feature(pool[i % len(pool)]), "label": _int64_feature(i % 10),
                "height": _int64_feature(128), "width": _int64_feature(128),
            }))
            writer.write(example.SerializeToString())


def tutorial_tabular(tf, path: str, rows: list[dict]) -> None:
    def _float_feature(value):
        return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))

    def _int64_feature(value):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    def _bytes_feature(value):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    with tf.io.TFRecordWriter(path) as writer:
        for row in rows:
            feature = {}
            for key, value in row.items():
                if key.startswith("f"):
                    feature[key] = _float_feature(value)
                elif key.startswith("i"):
                    feature[key] = _int64_feature(value)
                else:
                    feature[key] = _bytes_feature(value.encode())
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


# -- ours ------------------------------------------------------------------------------------

IMAGE_SCHEMA = Schema({"image": ImageFeature("jpeg", channels=3),
                       "label": ClassLabel([str(i) for i in range(10)])})
TABULAR_SCHEMA = Schema({**{f"f{i}": Scalar("float32") for i in range(10)},
                         **{f"i{i}": Scalar("int64") for i in range(5)}, "s": Text()})


def ours_images(path: Path, pool: list[bytes], n: int, shuffle: bool = True) -> None:
    rows = ({"image": {"bytes": pool[i % len(pool)], "height": 128, "width": 128,
                       "channels": 3}, "label": i % 10} for i in range(n))
    write_dataset(rows, path, IMAGE_SCHEMA, overwrite=True, shards=ShardOptions(shuffle=shuffle))


def ours_tabular(path: Path, rows: list[dict], shuffle: bool = True) -> None:
    write_dataset(rows, path, TABULAR_SCHEMA, overwrite=True, shards=ShardOptions(shuffle=shuffle))


def _check_files(paths: list[str]) -> int:
    """The ceiling's work for some files: read each, test-decode it at 1/8 scale."""
    import simplejpeg

    for path in paths:
        with open(path, "rb") as f:
            simplejpeg.decode_jpeg(f.read(), min_height=1, min_width=1, min_factor=8,
                                   strict=True)
    return len(paths)


def ceiling(files: list[str]) -> tuple[float, float]:
    """(start-up s, work s): reading every file and test-decoding it at 1/8 scale, as
    conversion must, on every core (processes, 256 files a task), nothing written."""
    import multiprocessing

    cores = os.cpu_count() or 1
    start = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(cores) as pool:
        pool.map(_check_files, [files[:1]] * cores)  # every worker up
        started = time.perf_counter()
        done = sum(pool.imap_unordered(_check_files, [files[i:i + 256]
                                                      for i in range(0, len(files), 256)]))
        end = time.perf_counter()
    assert done == len(files)
    return started - start, end - started


def timed_conversion(source: Path, out: Path, shuffle: bool) -> tuple[float, float, float]:
    """(start-up s: to the first records encoded, encoding s: to the last, finishing s:
    writing the shards and the manifest) of converting the folder with the defaults."""
    marks: list[float] = []
    start = time.perf_counter()
    convert(ImageFolder(source), out, overwrite=True, shards=ShardOptions(shuffle=shuffle),
            progress=lambda records, nbytes: marks.append(time.perf_counter()))
    end = time.perf_counter()
    return marks[0] - start, marks[-1] - marks[0], end - marks[-1]


def image_folder(folder: Path, pool: list[bytes], count: int, runs: int) -> None:
    """Convert a folder of ``count`` JPEG files (test-decoded, kept as they are) against
    the ceiling of reading and test-decoding them on every core, and reading them alone."""
    source = folder / f"folder{count}"
    if not source.exists():
        for i in range(count):
            path = source / str(i % 10) / f"{i:06d}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(pool[i % len(pool)])
    files = sorted(str(p) for p in source.rglob("*.jpg"))
    total = sum(os.path.getsize(p) for p in files)
    reads, ceilings, shuffled, ordered = [], [], [], []
    for _ in range(runs):  # alternating, so the machine's moods touch every case alike
        start = time.perf_counter()
        for p in files:
            with open(p, "rb") as f:
                f.read()
        reads.append(time.perf_counter() - start)
        ceilings.append(ceiling(files))
        shuffled.append(timed_conversion(source, folder / "fromfolder", True))
        ordered.append(timed_conversion(source, folder / "fromfolder", False))
    n = len(files)
    r = statistics.median(reads)
    c_start = statistics.median(c[0] for c in ceilings)
    c_work = statistics.median(c[1] for c in ceilings)
    how = (f"{os.cpu_count()} threads" if getattr(ImageFolder(source), "threaded", False)
           else f"{os.cpu_count()} worker processes")
    print(f"\nimage folder, {n:,} JPEG files ({total / 1e6:.0f} MB), medians of {runs} "
          f"alternating runs, {how}")
    print(f"  reading the files alone (one thread): {n / r:,.0f} files/s")
    print(f"  ceiling, reading + 1/8-scale test decode on {os.cpu_count()} cores: "
          f"{n / c_work:,.0f} files/s (start-up {c_start * 1e3:.0f} ms apart)")
    for label, times in (("convert (default write-time shuffle)", shuffled),
                         ("convert, shuffle=False (one pass)", ordered)):
        s = statistics.median(t[0] for t in times)
        e = statistics.median(t[1] for t in times)
        f = statistics.median(t[2] for t in times)
        whole = statistics.median(t[1] + t[2] for t in times)
        print(f"  {label}: start-up {s * 1e3:.0f} ms; encoding {n / e:,.0f} files/s "
              f"({c_work / e:.2f}x the ceiling); finishing {f * 1e3:.0f} ms; after start-up "
              f"{n / whole:,.0f} files/s, {total / whole / 1e6:.0f} MB/s "
              f"(**{c_work / whole:.2f}x** the ceiling)")


def timed(function, *args) -> float:
    start = time.perf_counter()
    function(*args)
    return time.perf_counter() - start


def peak_rss_mb(path: Path, n: int) -> int:
    out = subprocess.run([sys.executable, "-c", RSS_PROBE, str(path), str(n)],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=40_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default="bench_output")
    parser.add_argument("--files", type=int, default=50_000,
                        help="JPEG files in the image-folder case")
    parser.add_argument("--only-folder", action="store_true",
                        help="run only the image-folder case")
    parser.add_argument("--skip-folder", action="store_true")
    parser.add_argument("--hold-memory", type=int, metavar="BYTES",
                        help="TFRECORDKIT_SHUFFLE_MEMORY for our cases (0: every record spilled)")
    add_json_option(parser)
    args = parser.parse_args()
    if args.hold_memory is not None:
        os.environ["TFRECORDKIT_SHUFFLE_MEMORY"] = str(args.hold_memory)
    if args.only_folder:
        image_folder(Path(args.dir) / "convert", jpeg_pool(), args.files, args.runs)
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    folder = Path(args.dir) / "convert"
    folder.mkdir(parents=True, exist_ok=True)
    n = args.records
    pool = jpeg_pool()
    rows = tabular_rows(n)
    print(f"{n} records per case, medians of {args.runs} runs, {os.cpu_count()} cores; "
          f"JPEG ~{statistics.mean(map(len, pool)) / 1e3:.1f} KB\n")
    print(f"{'case':<34}{'baseline rec/s':>15}{'ours rec/s':>12}{'ours MB/s':>11}{'ratio':>8}")
    all_runs: dict[str, list[dict[str, float]]] = {}
    for label, base, ours, nbytes in [
        ("JPEG records, 4 features",
         lambda: tutorial_images(tf, str(folder / "t.tfrecord"), pool, n),
         lambda: ours_images(folder / "img", pool, n), sum(len(pool[i % 256]) for i in range(n))),
        ("tabular records, 16 features",
         lambda: tutorial_tabular(tf, str(folder / "t.tfrecord"), rows),
         lambda: ours_tabular(folder / "tab", rows), None),
        # The tutorial loop keeps input order; so does shuffle=False (one pass, no spill).
        ("JPEG records, no shuffle",
         lambda: tutorial_images(tf, str(folder / "t.tfrecord"), pool, n),
         lambda: ours_images(folder / "img", pool, n, False),
         sum(len(pool[i % 256]) for i in range(n))),
        ("tabular records, no shuffle",
         lambda: tutorial_tabular(tf, str(folder / "t.tfrecord"), rows),
         lambda: ours_tabular(folder / "tab", rows, False), None),
    ]:
        base_times, our_times = [], []
        for _ in range(args.runs):
            base_times.append(timed(base))
            our_times.append(timed(ours))
        b, o = statistics.median(base_times), statistics.median(our_times)
        written = nbytes or sum(p.stat().st_size for p in (folder / "tab").glob("*.tfrecord"))
        print(f"{label:<34}{n / b:>15,.0f}{n / o:>12,.0f}{written / o / 1e6:>11,.1f}"
              f"{b / o:>7.2f}x")
        all_runs[label] = [{"baseline_records_per_s": n / bt, "ours_records_per_s": n / ot}
                           for bt, ot in zip(base_times, our_times, strict=True)]

    if not args.skip_folder:
        image_folder(folder, pool, args.files, args.runs)

    small, large = n // 4, n * 10 // 4
    rss_small = peak_rss_mb(folder / "rss", small)
    rss_large = peak_rss_mb(folder / "rss", large)
    print(f"peak RSS converting {small:,} tabular records: {rss_small} MB; "
          f"{large:,} records (10x): {rss_large} MB")
    shutil.rmtree(folder / "rss", ignore_errors=True)
    if args.json:  # the record cases and the memory; the image folder: convert_folder.py
        median, spread = medians_and_spread(all_runs)
        write_results(args.json, "convert", records=n, runs=args.runs, medians=median,
                      spread=spread, all_runs=all_runs,
                      ratios={f"{label}: ours / baseline": m["ours_records_per_s"]
                              / m["baseline_records_per_s"] for label, m in median.items()},
                      peak_rss_mb={str(small): rss_small, str(large): rss_large})


if __name__ == "__main__":
    main()
