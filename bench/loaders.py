"""Framework-free loading (NumPy, PyTorch) vs tf.data and vahidk/tfrecord, on the same files.

Dataset: 128x128 JPEG records (~6 KB) in 8 shards with .index files, written once by
tfrecordkit (as bench/tf_read.py does). Every case runs in a fresh process (TensorFlow and
vahidk/tfrecord can't share one: both register tensorflow.Example), one epoch of batches of
256 decoded to uint8, cases alternating; medians of --runs printed as records/s:

  tf.data   load_tf_dataset(path, batch_size=256), decode_jpeg (accurate DCT), AUTOTUNE
  numpy     load_numpy_dataset(path, batch_size=256): libjpeg-turbo (simplejpeg) on threads
  torch     DataLoader(load_torch_dataset(path, batch_size=256), batch_size=None,
            num_workers=2)
  vahidk    DataLoader(ChainDataset of vahidk's TFRecordDataset per shard (with our .index
            files, so workers split them), Pillow decode in its transform), batch_size=256,
            num_workers=2: how its README reads images
  raw       the same without decoding: our serialized records (CRC checked) against
            vahidk's parsed bytes (no CRC check)
  ceiling   (decode only) the decode ceiling: the same JPEG bytes, already in memory, decoded
            by simplejpeg (accurate DCT, fancy upsampling, as the loaders decode) on one thread
            per core, 256 images per task; no reading, parsing or batching
  ceiling+b the same, each task's images decoded into a new [256, 128, 128, 3] array, as a
            loader hands batches over (fresh memory costs what cache-warm reuse does not)
Besides records/s, each case prints CPU seconds per 1,000 records (the process and its
reaped children: on 2 cores the loader competes with the training step) and the time from
creating the loader to its first batch.

Needs the bench dependency group (vahidk's package is `tfrecord`):
  pip install --group bench -e .[image,torch,tf-cpu]
Run: python bench/loaders.py [--images 20000] [--runs 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).parent
BATCH = 256
sys.path.insert(0, str(HERE))
from _results import add_json_option, medians_and_spread, named, write_results  # noqa: E402

import tfrecordkit as tk  # noqa: E402


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (torch's workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _ceiling(path: str, batched: bool) -> tuple[float, float, float]:
    """The decode ceiling: (records/s, CPU s per 1,000, first batch s) of decoding the
    dataset's JPEG bytes, read into memory beforehand, with simplejpeg on all cores, 256
    images per task; ``batched``: each task's images decoded into a new ``[256, h, w, 3]``
    array (as a loader must hand them over), else each into its own short-lived array."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import simplejpeg

    from tfrecordkit.readers.numpy_data import load_numpy_dataset

    raw = load_numpy_dataset(path, batch_size=BATCH, options=tk.DecodeOptions(decode=False))
    images = [bytes(b) for batch in raw for b in batch["image"]]
    chunks = [images[i:i + BATCH] for i in range(0, len(images), BATCH)]
    height, width, _, _ = simplejpeg.decode_jpeg_header(images[0])

    def decode(chunk: list[bytes]) -> Any:
        out = np.empty((len(chunk), height, width, 3), np.uint8) if batched else None
        for i, data in enumerate(chunk):
            simplejpeg.decode_jpeg(data, colorspace="RGB", fastdct=False, fastupsample=False,
                                   buffer=None if out is None else out[i])
        return out

    cpu, start = _cpu(), time.perf_counter()
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        first = None
        for _ in pool.map(decode, chunks):
            first = first if first is not None else time.perf_counter() - start
    seconds = time.perf_counter() - start
    return len(images) / seconds, (_cpu() - cpu) / len(images) * 1000, first or 0.0


def run_case(case: str, what: str, path: str) -> tuple[float, float, float]:
    """One epoch of ``case`` (run inside its own process): records/s over the epoch, CPU
    seconds per 1,000 records, and seconds from creating the loader to its first batch (the
    imports come before either clock starts)."""
    if case.startswith("ceiling"):
        return _ceiling(path, batched=case == "ceiling+b")
    decode = what == "decode"
    if case == "tf.data":
        from tfrecordkit.readers.tf_data import load_tf_dataset

        def make() -> Any:
            return load_tf_dataset(path, batch_size=BATCH, options=tk.DecodeOptions(decode=decode))
    elif case == "numpy":
        from tfrecordkit.readers.numpy_data import load_numpy_dataset

        def make() -> Any:
            return load_numpy_dataset(path, batch_size=BATCH, sampling=tk.Shuffled(),
                                      options=tk.DecodeOptions(decode=decode))
    elif case == "torch":
        from torch.utils.data import DataLoader

        from tfrecordkit.readers.torch_data import load_torch_dataset

        def make() -> Any:
            ds = load_torch_dataset(path, batch_size=BATCH, sampling=tk.Shuffled(),
                                    options=tk.DecodeOptions(decode=decode))
            return DataLoader(ds, batch_size=None, num_workers=2)
    else:
        import tfrecord.torch.dataset  # noqa: F401 - imported before the clocks start

        def make() -> Any:
            return _vahidk(path, decode)
    cpu, start = _cpu(), time.perf_counter()
    batches = make()
    records, first, epoch = 0, None, time.perf_counter()
    for batch in batches:
        first = first if first is not None else time.perf_counter() - start
        column = next(iter(batch.values())) if isinstance(batch, dict) else batch
        records += len(column)
    seconds = time.perf_counter() - epoch
    del batches  # torch's workers exit and are reaped, so their CPU time counts
    gc.collect()
    return records / seconds, (_cpu() - cpu) / records * 1000, first or 0.0


def rss_through_epoch(path: str) -> list[float]:
    """Resident memory (MB) after 1/4, 1/2, 3/4 and all of a NumPy-loader epoch (decode)."""
    from tfrecordkit.readers.numpy_data import load_numpy_dataset

    loader = load_numpy_dataset(path, batch_size=BATCH, sampling=tk.Shuffled())
    marks = {len(loader) * q // 4 - 1 for q in (1, 2, 3, 4)}
    out = []
    for k, _ in enumerate(loader):
        if k in marks:
            with open("/proc/self/statm") as f:
                out.append(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20)
    return out


def _vahidk(path: str, decode: bool):
    import io

    import numpy as np
    from PIL import Image
    from tfrecord.torch.dataset import TFRecordDataset
    from torch.utils.data import ChainDataset, DataLoader

    from tfrecordkit.store import load_manifest

    def pixels(record):
        if decode:
            image = Image.open(io.BytesIO(bytes(record["image"]))).convert("RGB")
            return {"image": np.asarray(image), "label": record["label"]}
        return {"image": np.frombuffer(bytes(record["image"]), np.uint8).copy(),
                "label": record["label"]}

    files = [os.path.join(path, s.file) for s in load_manifest(path).split("train").shards]
    parts = [TFRecordDataset(f, f + ".index", {"image": "byte", "label": "int"},
                             transform=pixels) for f in files]
    collate = None if decode else (lambda rows: rows)  # raw bytes vary in length
    return DataLoader(ChainDataset(parts), batch_size=BATCH, num_workers=2,
                      collate_fn=collate)


def _in_process(case: str, what: str, path: str, measure: str = "rate") -> Any:
    call = (f"loaders.run_case({case!r}, {what!r}, {path!r})" if measure == "rate"
            else f"loaders.rss_through_epoch({path!r})")
    code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import loaders; "
            f"print(json.dumps({call}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if out.returncode != 0:  # a peer not installed: skipped, and said so
        raise RuntimeError((out.stderr.strip().splitlines() or ["failed"])[-1])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default="bench_output/tf_read")
    add_json_option(parser)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from tf_read import make_datasets

    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    images, _ = make_datasets(folder, args.images, 1000)
    names = {"decode": ("tf.data", "numpy", "torch", "vahidk", "ceiling", "ceiling+b"),
             "raw": ("tf.data", "numpy", "torch", "vahidk")}
    cases = [(what, case) for what, group in names.items() for case in group]
    results: dict[tuple[str, str], list[list[float]]] = {k: [] for k in cases}
    skipped: dict[tuple[str, str], str] = {}
    for _ in range(args.runs):
        for what, case in cases:  # alternate, so drift hits every case alike
            if (what, case) in skipped:
                continue
            try:
                results[(what, case)].append(_in_process(case, what, str(images)))
            except RuntimeError as err:
                skipped[(what, case)] = str(err)
    names = {what: tuple(c for c in group if (what, c) not in skipped)
             for what, group in names.items()}
    print(f"medians of {args.runs} runs, batch {BATCH}, {os.cpu_count()} cores, "
          f"{args.images} 128x128 JPEG records, one process per run\n")
    for what, group in names.items():
        median = {case: [statistics.median(run[k] for run in results[(what, case)])
                         for k in range(3)] for case in group}
        print(f"{what:<8}{'records/s':>12}{'CPU s/1k':>10}{'first (ms)':>12}")
        for case, (rate, cpu, first) in median.items():
            print(f"  {case:<8}{rate:>10,.0f}{cpu:>10.3f}{first * 1000:>12.1f}")
        rate = {case: m[0] for case, m in median.items()}
        for ours in ("numpy", "torch"):
            print(f"  {ours}/tf.data {rate[ours] / rate['tf.data']:.2f}x" + (
                f"   {ours}/vahidk {rate[ours] / rate['vahidk']:.2f}x"
                if "vahidk" in rate else "") + (
                      f"   {ours}/ceiling {rate[ours] / rate['ceiling']:.2f}x, "
                      f"/ceiling+b {rate[ours] / rate['ceiling+b']:.2f}x"
                      if "ceiling" in rate else ""))
        print(f"  torch/numpy {rate['torch'] / rate['numpy']:.2f}x")
    for (what, case), why in skipped.items():
        print(f"{what} {case}: skipped ({why})")
    figures = named({f"{what} {case}": done for (what, case), done in results.items()},
                    ("records_per_s", "cpu_s_per_1k", "first_s"))
    median, spread = medians_and_spread(figures)
    # Memory stays flat in dataset size: the same loader over a quarter of the records.
    quarter, _ = make_datasets(folder / "quarter", args.images // 4, 1000)
    rss: dict[str, list[float]] = {}
    for path, count in ((quarter, args.images // 4), (images, args.images)):
        marks = _in_process("numpy", "decode", str(path), "memory")
        print(f"RSS of a NumPy-loader epoch over {count} records, after 1/4, 1/2, 3/4, "
              f"all of it: " + ", ".join(f"{m:.0f}" for m in marks) + " MB")
        rss[str(count)] = marks
    if args.json:
        write_results(args.json, "loaders", images=args.images, runs=args.runs, batch=BATCH,
                      medians=median, spread=spread, all_runs=figures,
                      ratios={f"{what} {ours} / tf.data":
                              median[f"{what} {ours}"]["records_per_s"]
                              / median[f"{what} tf.data"]["records_per_s"]
                              for what in names for ours in ("numpy", "torch")
                              if f"{what} {ours}" in median and f"{what} tf.data" in median},
                      rss_mb_quarters=rss,
                      skipped={f"{what} {case}": why for (what, case), why in skipped.items()})


if __name__ == "__main__":
    main()
