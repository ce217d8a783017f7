"""Time to the first batch: load_tf_dataset with decoding against plain tf.data as tutorials
write it, over the same photos (bench/photos.py's dataset: real-content JPEGs of 200-400 px).

Each run is a fresh process; the clock starts after ``import tensorflow`` and ``import
tfrecordkit`` (as a script's first lines import both; tfrecordkit's tf.data back-end, imported
on first use, is counted), before the dataset is built, and stops when the first batch is a
NumPy array; both pipelines resize to 224x224, batch 128, with the same shuffle buffer
(--shuffle records). Cases alternate; medians of --runs.

  plain   files interleaved (cycle 16, AUTOTUNE), shuffle, map(parse_single_example,
          decode_jpeg, tf.image.resize, saturate_cast(round)), batch, prefetch
  tk      load_tf_dataset(path, batch_size=128, image_size=(224, 224), seed=None,
                          sampling=Shuffled(buffer=--shuffle))

Run: python bench/first_batch.py [--images 6400] [--runs 7] [--json bench_output/first_batch.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _results import write_results  # noqa: E402

CASE = """
import os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
import tfrecordkit as tk
case, path, shuffle = sys.argv[1], sys.argv[2], int(sys.argv[3])
start = time.perf_counter()
if case == "tk":
    ds = tk.load_tf_dataset(path, batch_size=128, image_size=(224, 224), seed=None,
                            sampling=tk.Shuffled(buffer=shuffle) if shuffle else tk.InOrder())
    batch = next(iter(ds))
    batch["image"].numpy()
else:
    from pathlib import Path
    files = sorted(str(p) for p in Path(path).glob("*.tfrecord"))
    spec = {"image": tf.io.FixedLenFeature([], tf.string),
            "label": tf.io.FixedLenFeature([], tf.int64)}
    def parse(record):
        example = tf.io.parse_single_example(record, spec)
        image = tf.image.resize(tf.io.decode_jpeg(example["image"], channels=3), (224, 224))
        return tf.saturate_cast(tf.round(image), tf.uint8), example["label"]
    ds = (tf.data.Dataset.from_tensor_slices(files)
          .interleave(tf.data.TFRecordDataset, cycle_length=16,
                      num_parallel_calls=tf.data.AUTOTUNE)
          .shuffle(shuffle).map(parse, num_parallel_calls=tf.data.AUTOTUNE)
          .batch(128).prefetch(tf.data.AUTOTUNE))
    next(iter(ds))[0].numpy()
print(time.perf_counter() - start)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=6400)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--shuffle", type=int, default=2048)
    parser.add_argument("--dir", default="bench_output/photos")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args()
    import photos

    path = photos.make_photos(Path(args.dir) / f"photos_{args.images}", args.images)
    times: dict[str, list[float]] = {"plain": [], "tk": []}
    for _ in range(args.runs):
        for case, values in times.items():
            out = subprocess.run([sys.executable, "-c", CASE, case, str(path),
                                  str(args.shuffle)], capture_output=True, text=True,
                                 check=True)
            values.append(float(out.stdout.strip().splitlines()[-1]))
    median = {case: statistics.median(values) for case, values in times.items()}
    print(f"time to the first batch (s), medians of {args.runs} fresh processes, "
          f"{args.images} photos, shuffle buffer {args.shuffle}, batch 128 at 224x224, "
          f"{os.cpu_count()} cores\n")
    for case, values in times.items():
        print(f"  {case:<6}{statistics.median(values):>7.3f}  "
              f"({min(values):.3f}-{max(values):.3f})")
    ratio = median["tk"] / median["plain"]
    print(f"\n  tk / plain  {ratio:.2f}x")
    if args.json:
        write_results(args.json, "first_batch", images=args.images, runs=args.runs,
                      shuffle=args.shuffle, medians=median, all_runs=times,
                      ratios={"tk / plain": ratio})
    print(json.dumps(median))


if __name__ == "__main__":
    main()
