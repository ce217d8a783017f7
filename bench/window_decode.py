"""What decoding only a crop's window would save (issue 47 item 6's bar): libjpeg-turbo's ROI
decode, as TensorFlow's ``decode_and_crop_jpeg`` does it (``jpeg_crop_scanline`` and
``jpeg_skip_scanlines``), against a full decode of the same JPEGs with the same accurate DCT,
on the random-resized-crop windows the loaders draw for them.

Dataset: bench/photos.py's real-content JPEGs of 200-400 px. Each case decodes every image
once per run through a ``tf.function``; a call that decodes nothing is timed too and
subtracted, so the figures are the decodes' own CPU. Medians of --runs, cases alternating.

Run: python bench/window_decode.py [--images 600] [--runs 5]
     [--json bench_output/window_decode.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).parent))
from _results import write_results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=600)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default="bench_output/photos")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args()
    import numpy as np
    import photos
    import tensorflow as tf

    import tfrecordkit as tk
    from tfrecordkit.codecs import random_crop_boxes

    path = photos.make_photos(Path(args.dir) / "photos_6400", 6400)
    source = tk.load_grain_source(path, options=tk.DecodeOptions(decode=False))
    n = min(args.images, len(source))
    rows = [source[i] for i in range(n)]
    heights = np.array([int(r["image/height"]) for r in rows])
    widths = np.array([int(r["image/width"]) for r in rows])
    boxes = random_crop_boxes(heights, widths, seed=0, epoch=0, ids=np.arange(n))
    data = [tf.constant(r["image"]) for r in rows]
    windows = [tf.constant(b[:4].tolist(), tf.int32) for b in boxes]
    full = tf.function(lambda d: tf.io.decode_jpeg(d, channels=3,
                                                   dct_method="INTEGER_ACCURATE"))
    crop = tf.function(lambda d, w: tf.image.decode_and_crop_jpeg(
        d, w, channels=3, dct_method="INTEGER_ACCURATE"))
    call = tf.function(lambda d, w: tf.strings.length(d) + w[0])
    cases = {"full decode": lambda d, w: full(d), "window decode": crop, "call only": call}
    for run in cases.values():  # traced and warm
        for d, w in zip(data[:20], windows[:20], strict=True):
            run(d, w)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):
        for name, run in cases.items():
            start = time.process_time()
            for d, w in zip(data, windows, strict=True):
                run(d, w)
            times[name].append((time.process_time() - start) / n * 1e6)
    median = {name: statistics.median(t) for name, t in times.items()}
    overhead = median["call only"]
    whole, window = median["full decode"] - overhead, median["window decode"] - overhead
    area = float(np.mean(boxes[:, 2] * boxes[:, 3] / (heights * widths)))
    below = float(np.mean((heights - boxes[:, 0] - boxes[:, 2]) / heights))
    print(f"{n} JPEGs of 200-400 px, random-resized-crop windows (mean area {area:.1%} of the "
          f"image, {below:.1%} of the rows below the window); CPU µs an image, medians of "
          f"{args.runs}, call overhead ({overhead:.0f} µs) subtracted\n")
    print(f"  full decode    {whole:8.0f}")
    print(f"  window decode  {window:8.0f}   saves {1 - window / whole:.0%} of the decode")
    if args.json:
        write_results(args.json, "window_decode", images=n, runs=args.runs,
                      medians={"full decode": {"cpu_us": whole},
                               "window decode": {"cpu_us": window}},
                      spread={name: {"cpu_us": [min(t), max(t)]} for name, t in times.items()},
                      all_runs={name: [{"cpu_us": v} for v in t] for name, t in times.items()},
                      ratios={"window decode / full decode (CPU)": window / whole},
                      window_area=area, rows_below=below, call_overhead_us=overhead)


if __name__ == "__main__":
    main()
