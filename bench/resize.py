"""The resize step alone, one thread: the compiled kernel against its NumPy twin (same bits) and
``tf.image.resize`` (same bits, rounded to uint8), on photo-sized images to 224x224.

Each case runs --repeats times over the same images in this process; medians of --runs runs,
alternating, are printed in ms per image with the ratios. TensorFlow is optional (skipped, and
said so, when absent).

Run: python bench/resize.py [--runs 5] [--json bench_output/resize.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
SIZE = (224, 224)
sys.path.insert(0, str(Path(__file__).parent))
from _results import write_results  # noqa: E402


def _images(count: int = 16, seed: int = 0) -> list[np.ndarray]:
    """Photo content at 200-400 px a side (windows of scikit-image's photos)."""
    from skimage import data

    photos = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket()]
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        photo = photos[i % len(photos)]
        h, w = int(rng.integers(200, 401)), int(rng.integers(200, 401))
        h, w = min(h, photo.shape[0]), min(w, photo.shape[1])
        out.append(np.ascontiguousarray(photo[:h, :w]))
    return out


def _timed(resize: Any, images: list[np.ndarray], repeats: int) -> float:
    """ms per image."""
    start = time.perf_counter()
    for _ in range(repeats):
        for image in images:
            resize(image)
    return (time.perf_counter() - start) / (repeats * len(images)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    from tfrecordkit.codecs import _resize, resize_into, resize_kernel_name

    if resize_kernel_name() != "compiled":
        sys.exit("the compiled resize kernel is not built (pip install -e . with a compiler)")
    images = _images()
    kernel = _resize._KERNEL

    def compiled(image: np.ndarray) -> Any:
        return resize_into(image, np.empty((*SIZE, image.shape[2]), np.uint8))

    def numpy_twin(image: np.ndarray) -> Any:
        _resize._KERNEL = None
        try:
            return compiled(image)
        finally:
            _resize._KERNEL = kernel

    cases = {"compiled kernel": compiled, "NumPy twin": numpy_twin}
    skipped = {}
    try:
        import tensorflow as tf

        def tf_resize(image: np.ndarray) -> Any:
            return tf.saturate_cast(tf.round(tf.image.resize(image, SIZE)), tf.uint8).numpy()

        cases["tf.image.resize"] = tf_resize
    except ImportError:
        skipped["tf.image.resize"] = "tensorflow is not installed"
    for resize in cases.values():  # warm up (TensorFlow's first call builds its kernels)
        _timed(resize, images[:2], 1)
    runs: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, resize in cases.items():
            runs[name].append(_timed(resize, images, args.repeats))
    median = {name: statistics.median(values) for name, values in runs.items()}
    print(f"resize of {len(images)} photos of 200-400 px to {SIZE[0]}x{SIZE[1]}, one thread, "
          f"medians of {args.runs} runs")
    for name, ms in median.items():
        print(f"  {name:<18}{ms:8.3f} ms per image  ({min(runs[name]):.3f}-"
              f"{max(runs[name]):.3f})")
    for name, why in skipped.items():
        print(f"  {name:<18}skipped: {why}")
    ratios = {"NumPy twin / compiled kernel": median["NumPy twin"] / median["compiled kernel"]}
    if "tf.image.resize" in median:
        ratios["tf.image.resize / compiled kernel"] = (median["tf.image.resize"]
                                                       / median["compiled kernel"])
    for name, value in ratios.items():
        print(f"  {name}: {value:.2f}x")
    if args.json:
        write_results(args.json, "resize", medians_ms=median, all_runs_ms=runs, ratios=ratios,
                      skipped=skipped)

if __name__ == "__main__":
    main()
