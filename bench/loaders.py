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

Needs the bench dependency group (vahidk's package is `tfrecord`):
  pip install --group bench -e .[image,torch,tf-cpu]
Run: python bench/loaders.py [--images 20000] [--runs 3]
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
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).parent
BATCH = 256


def _epoch(batches) -> tuple[int, float]:
    start = time.perf_counter()
    records = 0
    for batch in batches:
        first = next(iter(batch.values())) if isinstance(batch, dict) else batch
        records += len(first)
    return records, time.perf_counter() - start


def run_case(case: str, what: str, path: str) -> float:
    """One epoch of ``case``; records/s (runs inside its own process)."""
    decode = what == "decode"
    if case == "tf.data":
        from tfrecordkit.readers.tf_data import load_tf_dataset

        batches = load_tf_dataset(path, batch_size=BATCH, decode=decode)
    elif case == "numpy":
        from tfrecordkit.readers.numpy_data import load_numpy_dataset

        batches = load_numpy_dataset(path, batch_size=BATCH, drop_last=False, decode=decode)
    elif case == "torch":
        from torch.utils.data import DataLoader

        from tfrecordkit.readers.torch_data import load_torch_dataset

        ds = load_torch_dataset(path, batch_size=BATCH, drop_last=False, decode=decode)
        batches = DataLoader(ds, batch_size=None, num_workers=2)
    else:
        batches = _vahidk(path, decode)
    records, seconds = _epoch(batches)
    return records / seconds


def rss_through_epoch(path: str) -> list[float]:
    """Resident memory (MB) after 1/4, 1/2, 3/4 and all of a NumPy-loader epoch (decode)."""
    from tfrecordkit.readers.numpy_data import load_numpy_dataset

    loader = load_numpy_dataset(path, batch_size=BATCH, drop_last=False)
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
                         check=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default="bench_output/tf_read")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from tf_read import make_datasets

    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    images, _ = make_datasets(folder, args.images, 1000)
    cases = [(what, case) for what in ("decode", "raw")
             for case in ("tf.data", "numpy", "torch", "vahidk")]
    results: dict[tuple[str, str], list[float]] = {k: [] for k in cases}
    for _ in range(args.runs):
        for what, case in cases:  # alternate, so drift hits every case alike
            results[(what, case)].append(float(_in_process(case, what, str(images))))
    print(f"records/s, medians of {args.runs} runs, batch {BATCH}, {os.cpu_count()} cores, "
          f"{args.images} 128x128 JPEG records, one process per run\n")
    for what in ("decode", "raw"):
        median = {case: statistics.median(results[(what, case)])
                  for case in ("tf.data", "numpy", "torch", "vahidk")}
        print(f"{what}: " + "   ".join(f"{c} {r:,.0f}" for c, r in median.items()))
        for ours in ("numpy", "torch"):
            print(f"  {ours}/tf.data {median[ours] / median['tf.data']:.2f}x   "
                  f"{ours}/vahidk {median[ours] / median['vahidk']:.2f}x")
    # Memory stays flat in dataset size: the same loader over a quarter of the records.
    quarter, _ = make_datasets(folder / "quarter", args.images // 4, 1000)
    for path, count in ((quarter, args.images // 4), (images, args.images)):
        marks = _in_process("numpy", "decode", str(path), "memory")
        print(f"RSS of a NumPy-loader epoch over {count} records, after 1/4, 1/2, 3/4, "
              f"all of it: " + ", ".join(f"{m:.0f}" for m in marks) + " MB")


if __name__ == "__main__":
    main()
