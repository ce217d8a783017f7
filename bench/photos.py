"""Photos at training size: decode + resize to 224x224 (and random-resized-crop 224 + flip) in
every reader, against plain tf.data written the way the tutorials do and the hardware's ceiling.

Dataset: real-content JPEGs of 200-400 px a side (windows of scikit-image's photos at random
places, scales and aspects, a little colour jitter, quality 85-95), 100 classes, written once by
tfrecordkit with one shard group per class. Every case runs in a fresh process, cases
alternate, medians of --runs; batch 128; images/s after the first batch, CPU seconds per 1,000
images (the process and its reaped children, creation included; and after the first batch,
the interval the rate is measured over), time to the first batch:

  tf.data     plain tf.data as tutorials write it: the files interleaved, a shuffle buffer of
              --shuffle records, map(parse_single_example, decode_jpeg (default DCT),
              tf.image.resize, saturate_cast(round) to uint8) with AUTOTUNE, batch, prefetch
  tk.tf       load_tf_dataset(path, batch_size=128, image_size=(224, 224), seed=None,
              sampling=Shuffled(buffer=--shuffle))
  numpy       load_numpy_dataset(path, batch_size=128, image_size=(224, 224))
  torch       DataLoader(load_torch_dataset(...same...), batch_size=None, num_workers=2)
  ceiling     the same JPEG bytes, already in memory, decoded by simplejpeg (accurate DCT, as
              the loaders decode) and resized by the library's kernel into a batch array, on
              one thread per core, 128 images per task: nothing else
  decode numpy / decode ceiling
              no resize: load_numpy_dataset(path, batch_size=128) (variable sizes padded, with
              their lengths) against simplejpeg decoding the same bytes on every core
  pk tf.data / pk numpy
              P x K = 32 x 4 batches, image_size 224: load_tf_dataset / load_numpy_dataset
              with sampling=PK(32, 4)
  crop numpy / crop tf.data / crop torch
              the ImageNet training recipe: DecodeOptions(crop="random", flip=True,
              image_size=(224, 224)) (random-resized-crop, scale (0.08, 1), ratio (3/4, 4/3))
  crop plain tf.data / crop plain tf.data fast
              the same recipe as TensorFlow's own ImageNet preprocessing writes it, in plain
              tf.data: sample_distorted_bounding_box (area (0.08, 1), aspect (3/4, 4/3), 10
              attempts, the whole image if none fits), decode_and_crop_jpeg with
              dct_method="INTEGER_ACCURATE" (the loaders' pixels' work) or the default fast
              DCT, resize to 224, random_flip_left_right; files interleaved, a shuffle buffer
  crop plain tf.data torchvision
              the same plain pipeline with the windows drawn by torchvision's
              RandomResizedCrop rule, the loaders' rule (10 tries of an area in (0.08, 1) and
              a log-uniform aspect in (3/4, 4/3), the first that fits, else the whole image
              cut to the aspect range, centred) written with tf.random ops: the same windows'
              work as the loaders' (sample_distorted_bounding_box with
              min_object_covered=0.1 draws smaller windows: 39% of the image on average
              against 44% here)

Run: python bench/photos.py [--images 6400] [--runs 5] [--json bench_output/photos.json]
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _results import medians_and_spread, run_fresh, write_results  # noqa: E402

import tfrecordkit as tk  # noqa: E402


def _sampling(shuffle: int) -> tk.InOrder | tk.Shuffled:
    """--shuffle as a sampling: a buffer of that many records (0: the stored order)."""
    return tk.Shuffled(buffer=shuffle) if shuffle else tk.InOrder()

BATCH = 128
SIZE = (224, 224)
P, K = 32, 4
CLASSES = 100


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (torch's workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def make_photos(path: Path, count: int, seed: int = 0) -> Path:
    """A dataset of ``count`` real-content JPEGs of 200-400 px in 100 classes (written once)."""
    if (path / "dataset.json").exists():
        return path
    import numpy as np
    from PIL import Image
    from skimage import data

    from tfrecordkit import ClassLabel, Schema, ShardOptions, write_dataset
    from tfrecordkit import Image as ImageFeature

    photos = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket(),
              data.immunohistochemistry(), data.hubble_deep_field(), data.stereo_motorcycle()[0],
              np.dstack([data.camera()] * 3), data.retina(), data.colorwheel(),
              np.dstack([data.grass()] * 3), np.dstack([data.coins()] * 3)]
    photos = [p[:, :, :3] for p in photos]
    rng = np.random.default_rng(seed)

    def one(i: int) -> dict[str, Any]:
        photo = photos[rng.integers(len(photos))]
        height, width = int(rng.integers(200, 401)), int(rng.integers(200, 401))
        scale = rng.uniform(0.4, 1.0)
        win_h = max(8, int(photo.shape[0] * scale))
        win_w = max(8, min(photo.shape[1], int(win_h * width / height)))
        top = int(rng.integers(0, photo.shape[0] - win_h + 1))
        left = int(rng.integers(0, photo.shape[1] - win_w + 1))
        window = photo[top : top + win_h, left : left + win_w].astype(np.float32)
        window = np.clip(window * rng.uniform(0.8, 1.2, 3), 0, 255).astype(np.uint8)
        image = Image.fromarray(window).resize((width, height), Image.BILINEAR)
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=int(rng.integers(85, 96)))
        return {"image": {"bytes": buffer.getvalue(), "height": height, "width": width,
                          "channels": 3}, "label": i % CLASSES}

    schema = Schema({"image": ImageFeature("jpeg", channels=3),
                     "label": ClassLabel([f"c{i:03d}" for i in range(CLASSES)])})
    write_dataset((one(i) for i in range(count)), path, schema,
                  shards=ShardOptions(layout="per_class"), overwrite=True, progress=False)
    return path


def _plain_tf_data(path: Path, shuffle: int) -> Any:
    """tf.data as the tutorials write it (see the module docstring)."""
    import tensorflow as tf

    files = sorted(str(f) for f in path.glob("train-*.tfrecord"))
    description = {"image": tf.io.FixedLenFeature([], tf.string),
                   "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(record: Any) -> Any:
        example = tf.io.parse_single_example(record, description)
        image = tf.io.decode_jpeg(example["image"], channels=3)
        image = tf.saturate_cast(tf.round(tf.image.resize(image, SIZE)), tf.uint8)
        return image, example["label"]

    ds = tf.data.Dataset.from_tensor_slices(files).shuffle(len(files), seed=0)
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=16,
                       num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.shuffle(shuffle, seed=0).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def _plain_crop(path: Path, shuffle: int, dct_method: str, torchvision: bool = False) -> Any:
    """The random-resized-crop + flip recipe as TensorFlow's ImageNet preprocessing writes it
    (see the module docstring)."""
    import tensorflow as tf

    files = sorted(str(f) for f in path.glob("train-*.tfrecord"))
    description = {"image": tf.io.FixedLenFeature([], tf.string),
                   "label": tf.io.FixedLenFeature([], tf.int64)}
    whole = tf.constant([0.0, 0.0, 1.0, 1.0], tf.float32, shape=[1, 1, 4])

    def parse(record: Any) -> Any:
        example = tf.io.parse_single_example(record, description)
        data = example["image"]
        if torchvision:
            window = _torchvision_window(tf.io.extract_jpeg_shape(data))
        else:
            begin, size, _ = tf.image.sample_distorted_bounding_box(
                tf.io.extract_jpeg_shape(data), bounding_boxes=whole, min_object_covered=0.1,
                aspect_ratio_range=(3 / 4, 4 / 3), area_range=(0.08, 1.0), max_attempts=10,
                use_image_if_no_bounding_boxes=True)
            window = tf.stack([begin[0], begin[1], size[0], size[1]])
        image = tf.image.decode_and_crop_jpeg(data, window, channels=3, dct_method=dct_method)
        image = tf.saturate_cast(tf.round(tf.image.resize(image, SIZE)), tf.uint8)
        return tf.image.random_flip_left_right(image), example["label"]

    ds = tf.data.Dataset.from_tensor_slices(files).shuffle(len(files), seed=0)
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=16,
                       num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.shuffle(shuffle, seed=0).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def _torchvision_window(shape: Any) -> Any:
    """torchvision's RandomResizedCrop window ``[top, left, height, width]`` (int32) for an
    image of ``shape``, with tf.random ops (scale (0.08, 1), ratio (3/4, 4/3), 10 tries)."""
    import tensorflow as tf

    height, width = tf.cast(shape[0], tf.float32), tf.cast(shape[1], tf.float32)
    u = tf.random.uniform([10, 4])
    target = height * width * (0.08 + 0.92 * u[:, 0])
    low, high = math.log(3 / 4), math.log(4 / 3)
    aspect = tf.exp(low + (high - low) * u[:, 1])
    w = tf.round(tf.sqrt(target * aspect))
    h = tf.round(tf.sqrt(target / aspect))
    fits = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = tf.argmax(tf.cast(fits, tf.int32), output_type=tf.int32)
    top = tf.floor(u[first, 2] * (height - h[first] + 1.0))
    left = tf.floor(u[first, 3] * (width - w[first] + 1.0))
    tried = tf.stack([top, left, h[first], w[first]])
    ratio = width / height  # no try fits: the whole image cut to the ratio range, centred
    fh = tf.where(ratio < 3 / 4, tf.round(width / (3 / 4)), height)
    fw = tf.where(ratio > 4 / 3, tf.round(height * (4 / 3)), width)
    fh, fw = tf.minimum(fh, height), tf.minimum(fw, width)
    whole = tf.stack([tf.floor((height - fh) / 2), tf.floor((width - fw) / 2), fh, fw])
    return tf.cast(tf.where(tf.reduce_any(fits), tried, whole), tf.int32)


def _ceiling(path: Path, resize: bool = True) -> Any:
    """An iterable of batches decoded (and resized) from bytes in memory on every core."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import simplejpeg

    from tfrecordkit.codecs import resize_into
    from tfrecordkit.readers.numpy_data import load_numpy_dataset

    images = [bytes(b) for batch in load_numpy_dataset(path, batch_size=BATCH,
                                                       options=tk.DecodeOptions(decode=False))
              for b in batch["image"]]
    chunks = [images[i : i + BATCH] for i in range(0, len(images), BATCH)]

    def decode(chunk: list[bytes]) -> Any:
        out = np.empty((len(chunk), *SIZE, 3), np.uint8) if resize else []
        for i, data in enumerate(chunk):
            pixels = simplejpeg.decode_jpeg(data, colorspace="RGB", fastdct=False,
                                            fastupsample=False)
            if resize:
                resize_into(pixels, out[i])
            else:
                out.append(pixels)
        return out

    class Ceiling:
        def __iter__(self) -> Any:
            threads = os.cpu_count() or 1
            with ThreadPoolExecutor(threads) as pool:
                # Each core decodes its share of every batch, as the loaders split them.
                for chunk in chunks:
                    share = -(-len(chunk) // threads)
                    yield list(pool.map(decode, [chunk[s : s + share] for s in
                                                 range(0, len(chunk), share)]))

    return Ceiling()


def make_case(case: str, path: Path, shuffle: int, steps: int) -> Any:
    """The iterable of batches of one case (TensorFlow imported only where used)."""
    crop = None
    if case.startswith("crop"):
        from tfrecordkit import DecodeOptions

        crop = DecodeOptions(image_size=SIZE, crop="random", flip=True)
    if case in ("tf.data", "tk.tf", "pk tf.data", "crop tf.data", "crop plain tf.data",
                "crop plain tf.data fast", "crop plain tf.data torchvision"):
        import tensorflow as tf

        from tfrecordkit import load_tf_dataset

        if case == "tf.data":
            return _plain_tf_data(path, shuffle)
        if case.startswith("crop plain"):
            return _plain_crop(path, shuffle, "" if case.endswith("fast")
                               else "INTEGER_ACCURATE", torchvision=case.endswith("torchvision"))
        if case == "pk tf.data":
            return tk.load_tf_dataset(path, sampling=tk.PK(P, K), image_size=SIZE,
                                      repeat=True).take(steps)
        if crop is not None:
            return load_tf_dataset(path, batch_size=BATCH, sampling=_sampling(shuffle),
                                   seed=0, options=crop)
        del tf
        return load_tf_dataset(path, batch_size=BATCH, sampling=_sampling(shuffle),
                               seed=None, image_size=SIZE)
    if case in ("ceiling", "decode ceiling"):
        return _ceiling(path, resize=case == "ceiling")
    from tfrecordkit import load_numpy_dataset

    if case == "pk numpy":
        return tk.load_numpy_dataset(path, sampling=tk.PK(P, K), image_size=SIZE).batches(steps)
    if case in ("torch", "crop torch"):
        import torch

        from tfrecordkit import load_torch_dataset

        dataset = (load_torch_dataset(path, batch_size=BATCH, options=crop) if crop
                   else load_torch_dataset(path, batch_size=BATCH, image_size=SIZE))
        return torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2)
    if crop is not None:
        return load_numpy_dataset(path, batch_size=BATCH, options=crop)
    if case == "decode numpy":
        return load_numpy_dataset(path, batch_size=BATCH)
    return load_numpy_dataset(path, batch_size=BATCH, image_size=SIZE)


def run_case(case: str, path: str, shuffle: int, steps: int) -> dict[str, float]:
    """One run of one case in this process: images/s after the first batch, CPU s per 1,000
    images (creation included, and after the first batch), seconds to the first batch (from
    before the pipeline is built)."""
    if "tf" in case:
        import tensorflow  # noqa: F401  (the import is not the pipeline's cost)
    if "torch" in case:
        import torch  # noqa: F401  (nor is PyTorch's: ~1 CPU-s, 0.15 CPU-s per 1,000 here)
    cpu, start = _cpu(), time.perf_counter()
    batches = make_case(case, Path(path), shuffle, steps)
    first = after_first = None
    cpu_first = cpu
    images = total = 0
    for batch in batches:
        count = _count(batch)
        total += count
        if first is None:
            first, after_first = time.perf_counter() - start, time.perf_counter()
            cpu_first = _cpu()
        else:
            images += count
    seconds = time.perf_counter() - (after_first or start)
    end = _cpu()
    return {"rate": images / max(seconds, 1e-9),
            "cpu_per_1k": (end - cpu) / max(total, 1) * 1000,
            "steady_cpu_per_1k": (end - cpu_first) / max(images, 1) * 1000,
            "first_s": first or 0.0}


def _count(batch: Any) -> int:
    """Images in a batch of any reader."""
    if isinstance(batch, list):  # the ceiling's per-thread parts
        return sum(len(part) for part in batch)
    if isinstance(batch, tuple):
        batch = batch[0]
    value = batch["image"] if isinstance(batch, dict) else batch
    if isinstance(value, dict):  # padded: {"values", "lengths"}
        value = value["values"]
    return int(value.shape[0])


def _in_process(case: str, path: Path, shuffle: int, steps: int) -> dict[str, float]:
    return run_fresh("photos", f"run_case({case!r}, {str(path)!r}, {shuffle}, {steps})")


CASES = ("tf.data", "tk.tf", "numpy", "torch", "ceiling", "decode numpy", "decode ceiling",
         "pk tf.data", "pk numpy", "crop tf.data", "crop numpy", "crop torch",
         "crop plain tf.data", "crop plain tf.data fast", "crop plain tf.data torchvision")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=6400)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shuffle", type=int, default=2048, help="shuffle buffer (records)")
    parser.add_argument("--pk-steps", type=int, default=40)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--dir", default="bench_output/photos")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args()
    path = make_photos(Path(args.dir) / f"photos_{args.images}", args.images)
    cases = [c for c in args.cases.split(",") if c]
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in cases}
    skipped: dict[str, str] = {}
    for _ in range(args.runs):
        for case in cases:  # alternate, so drift hits every case alike
            if case in skipped:
                continue
            try:
                runs[case].append(_in_process(case, path, args.shuffle, args.pk_steps))
            except RuntimeError as err:
                skipped[case] = str(err).splitlines()[-1]
    median, spread = medians_and_spread(runs)
    print(f"medians of {args.runs} runs, batch {BATCH} (P×K {P}×{K}), {os.cpu_count()} cores, "
          f"{args.images} JPEGs of 200-400 px, resized to {SIZE[0]}x{SIZE[1]}, one process "
          f"per run\n")
    print(f"{'case':<20}{'images/s':>10}{'  (min-max)':<18}{'CPU s/1k':>9}{'steady':>8}"
          f"{'first (s)':>10}")
    for case, m in median.items():
        low, high = spread[case]["rate"]
        print(f"{case:<20}{m['rate']:>10,.0f}  ({low:,.0f}-{high:,.0f}){'':<3}"
              f"{m['cpu_per_1k']:>9.2f}{m['steady_cpu_per_1k']:>8.2f}"
              f"{m['first_s']:>10.2f}")
    for case, why in skipped.items():
        print(f"{case:<14}skipped: {why}")
    rate = {c: m["rate"] for c, m in median.items()}
    ratios = {}
    for ours, base in (("numpy", "tf.data"), ("numpy", "tk.tf"), ("numpy", "ceiling"),
                       ("torch", "numpy"), ("torch", "ceiling"), ("tk.tf", "tf.data"),
                       ("decode numpy", "decode ceiling"), ("crop numpy", "ceiling"),
                       ("crop torch", "ceiling"), ("pk numpy", "ceiling"),
                       ("pk numpy", "pk tf.data"), ("crop numpy", "crop tf.data"),
                       ("crop torch", "crop numpy"), ("crop tf.data", "crop plain tf.data"),
                       ("crop numpy", "crop plain tf.data"),
                       ("crop torch", "crop plain tf.data"),
                       ("crop tf.data", "crop plain tf.data fast"),
                       ("crop tf.data", "crop plain tf.data torchvision"),
                       ("crop numpy", "crop plain tf.data torchvision")):
        if ours in rate and base in rate:
            ratios[f"{ours} / {base}"] = rate[ours] / rate[base]
            if base.startswith("crop plain"):  # CPU per image moves less with load here
                ratios[f"{ours} / {base} (CPU)"] = (median[base]["cpu_per_1k"]
                                                    / median[ours]["cpu_per_1k"])
                ratios[f"{ours} / {base} (CPU after the first batch)"] = (
                    median[base]["steady_cpu_per_1k"] / median[ours]["steady_cpu_per_1k"])
    print()
    for name, value in ratios.items():
        print(f"  {name:<58}{value:.2f}x")
    if args.json:
        write_results(args.json, "photos", images=args.images, runs=args.runs,
                      medians=median, spread=spread, all_runs=runs, ratios=ratios,
                      skipped=skipped)

if __name__ == "__main__":
    main()
