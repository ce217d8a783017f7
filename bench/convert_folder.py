"""Converting an image folder: tk.convert's checks against a plain TFRecordWriter loop and
MosaicML MDS's writer over the same files, with the peak disk each uses and what each check
catches.

Folder: --files real-content JPEGs of 160-320 px a side (windows of scikit-image's photos, as
bench/photos.py makes them) in 100 class folders, written once. Each case runs in a fresh
process (page cache warm: every case reads the same files), cases alternate, medians of
--runs; files/s over the whole call, CPU seconds (process and reaped children), the peak
disk of the output folder (sampled every 10 ms) against the finished dataset's size:

  tk structure  tk.convert(ImageFolder(root), out): the defaults (structural check of every
                file, write-time shuffle, shards cut by size, index files)
  tk decode     ImageFolder(root, check="decode"): also test-decode every JPEG at 1/8 scale
  tk none       ImageFolder(root, check="none"): no check; the shuffle on
  loop          the plain loop users write: for each file, its bytes and PIL's header size,
                a tf.train.Example with the same features (image bytes, height, width,
                channels, label, the file's path) into 16 shards round robin with
                tf.io.TFRecordWriter; no shuffle, no index, no check
  mds           streaming.MDSWriter with the same columns (no compression, its default shard
                size), the bytes kept

Then what each check mode catches among four damaged files (a JPEG cut short, one byte of a
JPEG's scan flipped, a text file named .jpg, a PNG chunk with a wrong CRC) and the cost of
each check per file.

Run: python bench/convert_folder.py [--files 20000] [--runs 3]
     [--json bench_output/convert_folder.json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _results import medians_and_spread, run_fresh, write_results  # noqa: E402

CLASSES = 100


def make_folder(root: Path, count: int, seed: int = 0) -> Path:
    """``count`` real-content JPEGs of 160-320 px in 100 class folders (written once)."""
    done = root / ".complete"
    if done.exists():
        return root
    import numpy as np
    from PIL import Image
    from skimage import data

    photos = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket(),
              data.immunohistochemistry(), data.hubble_deep_field(),
              np.dstack([data.camera()] * 3), data.retina(), np.dstack([data.coins()] * 3)]
    photos = [p[:, :, :3] for p in photos]
    rng = np.random.default_rng(seed)
    for i in range(count):
        photo = photos[rng.integers(len(photos))]
        height, width = int(rng.integers(160, 321)), int(rng.integers(160, 321))
        win_h = max(8, int(photo.shape[0] * rng.uniform(0.4, 1.0)))
        win_w = max(8, min(photo.shape[1], int(win_h * width / height)))
        top = int(rng.integers(0, photo.shape[0] - win_h + 1))
        left = int(rng.integers(0, photo.shape[1] - win_w + 1))
        window = photo[top : top + win_h, left : left + win_w]
        folder = root / f"class_{i % CLASSES:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(window).resize((width, height), Image.BILINEAR).save(
            folder / f"{i:06d}.jpg", quality=int(rng.integers(85, 96)))
    done.write_text("ok")
    return root


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _size(path: Path) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):  # renamed or removed while walked
                total += os.path.getsize(os.path.join(folder, name))
    return total


def _inputs(root: Path) -> Any:
    """What the plain loop and MDS write of each file, as their users would get it: its
    bytes, Pillow's header size and bands, its class and its path under the root."""
    from PIL import Image

    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    for label, name in enumerate(classes):
        for path in sorted((root / name).iterdir()):
            data = path.read_bytes()
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
                channels = len(image.getbands())
            yield data, height, width, channels, label, f"{name}/{path.name}"


def _loop(root: Path, out: Path) -> None:
    import tensorflow as tf

    out.mkdir(parents=True)
    writers = [tf.io.TFRecordWriter(str(out / f"part-{k:05d}.tfrecord")) for k in range(16)]
    for n, (data, height, width, channels, label, source) in enumerate(_inputs(root)):
        feature = {
            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data])),
            "image/height": tf.train.Feature(int64_list=tf.train.Int64List(value=[height])),
            "image/width": tf.train.Feature(int64_list=tf.train.Int64List(value=[width])),
            "image/channels": tf.train.Feature(
                int64_list=tf.train.Int64List(value=[channels])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
            "__source": tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[source.encode()])),
        }
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        writers[n % 16].write(example.SerializeToString())
    for writer in writers:
        writer.close()


def _mds_writer() -> Any:
    """MDS's writer class. The ``streaming`` package's __init__ imports its vision datasets,
    which need torchvision; the writer needs none of that, so it is imported on its own."""
    import importlib.util
    import types

    if "streaming" not in sys.modules:
        spec = importlib.util.find_spec("streaming")
        if spec is None or spec.submodule_search_locations is None:
            raise ImportError("streaming", name="streaming")
        package = types.ModuleType("streaming")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["streaming"] = package
    from streaming.base.format.mds.writer import MDSWriter

    return MDSWriter


def _mds(root: Path, out: Path) -> None:
    writer_class = _mds_writer()
    columns = {"image": "bytes", "height": "int", "width": "int", "channels": "int",
               "label": "int", "source": "str"}
    with writer_class(out=str(out), columns=columns) as writer:
        for data, height, width, channels, label, source in _inputs(root):
            writer.write({"image": data, "height": height, "width": width,
                          "channels": channels, "label": label, "source": source})


def run_case(case: str, root: str, out: str) -> dict[str, float]:
    source_root, target = Path(root), Path(out)
    shutil.rmtree(target, ignore_errors=True)
    if case == "loop":
        import tensorflow  # noqa: F401  # its import is not what the loop costs per file
    peak = [0]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _size(target))
            stop.wait(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    cpu0, start = _cpu(), time.perf_counter()
    watcher.start()
    try:
        if case.startswith("tk"):
            import tfrecordkit as tk

            check = case.split()[1]
            result = tk.convert(tk.ImageFolder(source_root, check=check), target,
                                progress=False)
            files = result.records
        elif case == "loop":
            _loop(source_root, target)
            files = sum(1 for _ in source_root.rglob("*.jpg"))
        else:
            _mds(source_root, target)
            files = sum(1 for _ in source_root.rglob("*.jpg"))
    finally:
        stop.set()
        watcher.join()
    elapsed, cpu = time.perf_counter() - start, _cpu() - cpu0
    final = _size(target)
    shutil.rmtree(target, ignore_errors=True)
    return {"files_per_s": files / elapsed, "cpu_s": cpu, "peak_disk_mb": peak[0] / 2**20,
            "final_mb": final / 2**20, "peak_over_final": peak[0] / max(final, 1)}


def _in_process(case: str, root: Path, out: Path) -> dict[str, float]:
    return run_fresh("convert_folder", f"run_case({case!r}, {str(root)!r}, {str(out)!r})")


def catches(work: Path) -> dict[str, dict[str, bool]]:
    """Which damaged files each check mode refuses (True) or stores (False)."""
    import numpy as np
    from PIL import Image

    import tfrecordkit as tk

    pixels = (np.random.default_rng(1).random((96, 128, 3)) * 255).astype(np.uint8)
    good = io.BytesIO()
    Image.fromarray(pixels).save(good, format="JPEG", quality=90)
    jpeg = good.getvalue()
    png = io.BytesIO()
    Image.fromarray(pixels).save(png, format="PNG")
    flipped = bytearray(jpeg)
    flipped[len(jpeg) // 2] ^= 0x10
    bad_chunk = bytearray(png.getvalue())
    bad_chunk[40] ^= 0x01  # inside IHDR/IDAT: its CRC no longer matches
    damaged = {"truncated.jpg": jpeg[: len(jpeg) * 2 // 3],
               "flipped-scan-byte.jpg": bytes(flipped),
               "text-named.jpg": b"this is a text file with an image's name\n" * 20,
               "bad-chunk-crc.png": bytes(bad_chunk)}
    out: dict[str, dict[str, bool]] = {}
    for mode in ("structure", "decode", "none"):
        root = work / f"damaged_{mode}"
        shutil.rmtree(root, ignore_errors=True)
        (root / "a").mkdir(parents=True)
        (root / "a" / "good.jpg").write_bytes(jpeg)
        for name, data in damaged.items():
            (root / "a" / name).write_bytes(data)
        result = tk.convert(tk.ImageFolder(root, check=mode), work / f"out_{mode}",
                            on_error="skip", overwrite=True, progress=False)
        skipped = {Path(s["input"]).name for s in result.manifest.skipped}
        out[mode] = {name: name in skipped for name in damaged}
    return out


def check_costs(root: Path, count: int = 2000) -> dict[str, float]:
    """µs per file of the structural check and of the test decode, on the folder's files."""
    from tfrecordkit.codecs import image_structure_problem
    from tfrecordkit.sources._media import _check_decodes

    files = sorted(root.rglob("*.jpg"))[:count]
    blobs = [f.read_bytes() for f in files]
    start = time.perf_counter()
    for data in blobs:
        image_structure_problem(data, "jpeg")
    structure = (time.perf_counter() - start) / len(blobs) * 1e6
    start = time.perf_counter()
    for path, data in zip(files, blobs, strict=True):
        _check_decodes(str(path), data, "jpeg")
    decode = (time.perf_counter() - start) / len(blobs) * 1e6
    return {"structure_us": structure, "decode_us": decode}


CASES = ("tk structure", "tk decode", "tk none", "loop", "mds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--dir", default="bench_output/convert_folder")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args()
    work = Path(args.dir)
    root = make_folder(work / f"jpegs_{args.files}", args.files)
    cases = [c for c in args.cases.split(",") if c]
    skipped: dict[str, str] = {}
    if "mds" in cases:
        try:
            _mds_writer()
        except ImportError as err:
            skipped["mds"] = f"not installed: {err.name} (mosaicml-streaming)"
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in cases}
    for _ in range(args.runs):
        for case in cases:
            if case in skipped:
                continue
            try:
                runs[case].append(_in_process(case, root, work / "out"))
            except RuntimeError as err:
                skipped[case] = str(err).splitlines()[-1]
    median, spread = medians_and_spread(runs)
    print(f"medians of {args.runs} runs, {args.files} JPEGs of 160-320 px in {CLASSES} "
          f"classes, {os.cpu_count()} cores, one process per run\n")
    print(f"{'case':<14}{'files/s':>9}{'  (min-max)':<18}{'CPU s':>7}{'peak MB':>9}"
          f"{'final MB':>9}{'peak/final':>11}")
    for case, m in median.items():
        low, high = spread[case]["files_per_s"]
        print(f"{case:<14}{m['files_per_s']:>9,.0f}  ({low:,.0f}-{high:,.0f}){'':<2}"
              f"{m['cpu_s']:>7.1f}{m['peak_disk_mb']:>9.0f}{m['final_mb']:>9.0f}"
              f"{m['peak_over_final']:>11.2f}")
    for case, why in skipped.items():
        print(f"{case:<14}skipped: {why}")
    rate = {c: m["files_per_s"] for c, m in median.items()}
    ratios = {}
    for ours, base in (("tk structure", "mds"), ("tk none", "loop"), ("tk structure", "loop"),
                       ("tk decode", "tk structure")):
        if ours in rate and base in rate:
            ratios[f"{ours} / {base}"] = rate[ours] / rate[base]
    print()
    for name, value in ratios.items():
        print(f"  {name:<28}{value:.2f}x")
    caught = catches(work)
    costs = check_costs(root)
    print("\nwhat each check refuses (skipped with on_error='skip'):")
    names = list(next(iter(caught.values())))
    print(f"  {'file':<24}" + "".join(f"{m:>11}" for m in caught))
    for name in names:
        print(f"  {name:<24}" + "".join(f"{'refused' if caught[m][name] else 'stored':>11}"
                                        for m in caught))
    print(f"\ncost per file: structure {costs['structure_us']:.1f} µs, test decode "
          f"{costs['decode_us']:.1f} µs")
    if args.json:
        write_results(args.json, "convert_folder", files=args.files, runs=args.runs,
                      medians=median, spread=spread, all_runs=runs, ratios=ratios,
                      skipped=skipped, catches=caught, check_costs=costs)


if __name__ == "__main__":
    main()
