"""Detection data: COCO in, and boxes under random crop + flip in NumPy and tf.data.

Dataset: --images real-content JPEGs of 160-320 px (windows of scikit-image's photos) with 1-6
rectangles each as COCO objects (two of five crowd regions), written as a COCO
``instances.json``. Every case runs in a fresh process, cases alternate, medians of --runs;
CPU seconds of the process (creation and imports after the clock starts excluded: the clock
starts once tfrecordkit and the framework are imported):

  convert      tk.convert(tk.Coco(instances.json)) into one split (the local engine)
  loop         the tutorial's converter: a plain Python loop reading the JSON, each image's
               bytes and its objects into tf.train.Example (the OD API's keys) with
               tf.io.TFRecordWriter, into 4 shards
  numpy crop   one epoch of load_numpy_dataset(ds, batch_size=32, image_size=128,
               DecodeOptions(crop="random", flip=True)): images and their boxes (and per-object
               fields) moved together
  tf crop      the same epoch through load_tf_dataset (crops and boxes in-graph), pipeline
               creation included

Ratios (same run): convert / loop records per second; tf crop / numpy crop CPU seconds per
epoch (the issue's bar: at most 1.2).

Run: python bench/detection.py [--images 320] [--runs 5] [--json bench_output/detection.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _results import add_json_option, medians_and_spread, run_fresh, write_results  # noqa: E402

BATCH = 32
SIZE = 128


def _cpu() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def make(root: str, images: int) -> str:
    """The COCO files under ``root`` (made once); the annotation file's path."""
    import numpy as np
    from PIL import Image
    from skimage import data

    path = Path(root) / "instances.json"
    if path.exists():
        return str(path)
    photos = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket()]
    rng = np.random.default_rng(0)
    (Path(root) / "images").mkdir(parents=True, exist_ok=True)
    entries, annotations = [], []
    for image_id in range(1, images + 1):
        photo = photos[image_id % len(photos)]
        h, w = int(rng.integers(160, 320)), int(rng.integers(160, 320))
        top = int(rng.integers(0, photo.shape[0] - h)) if photo.shape[0] > h else 0
        left = int(rng.integers(0, photo.shape[1] - w)) if photo.shape[1] > w else 0
        pixels = np.asarray(Image.fromarray(photo[top:top + h, left:left + w]).resize((w, h)))
        pixels = pixels.copy()
        for k in range(int(rng.integers(1, 7))):
            bw, bh = int(rng.integers(10, w // 2)), int(rng.integers(10, h // 2))
            x, y = int(rng.integers(0, w - bw)), int(rng.integers(0, h - bh))
            pixels[y:y + bh, x:x + bw] = (40 * k, 200, 255 - 40 * k)
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": 1 + k % 3, "bbox": [x, y, bw, bh],
                                "area": float(bw * bh), "iscrowd": int(rng.random() < 0.4)})
        name = f"{image_id:06d}.jpg"
        Image.fromarray(pixels).save(Path(root) / "images" / name, quality=90)
        entries.append({"id": image_id, "file_name": name, "width": w, "height": h})
    path.write_text(json.dumps({"images": entries, "annotations": annotations, "categories": [
        {"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}]}))
    return str(path)


def case_convert(instances: str, out: str) -> dict[str, float]:
    import shutil

    import tfrecordkit as tk

    shutil.rmtree(out, ignore_errors=True)
    cpu, start = _cpu(), time.perf_counter()
    result = tk.convert(tk.Coco(instances, images=Path(instances).parent / "images"), out,
                        progress=False)
    seconds = time.perf_counter() - start
    return {"records_per_s": result.records / seconds, "cpu_s": _cpu() - cpu}


def case_loop(instances: str, out: str) -> dict[str, float]:
    import shutil

    import tensorflow as tf

    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cpu, start = _cpu(), time.perf_counter()
    coco = json.loads(Path(instances).read_text())
    names = {c["id"]: c["name"] for c in coco["categories"]}
    ids = sorted(names)
    by_image: dict[int, list[Any]] = {}
    for a in coco["annotations"]:
        by_image.setdefault(a["image_id"], []).append(a)
    writers = [tf.io.TFRecordWriter(os.path.join(out, f"train-{k}.tfrecord")) for k in range(4)]

    def floats(v: list[float]) -> Any:
        return tf.train.Feature(float_list=tf.train.FloatList(value=v))

    for n, image in enumerate(coco["images"]):
        data = (Path(instances).parent / "images" / image["file_name"]).read_bytes()
        w, h = image["width"], image["height"]
        objects = by_image.get(image["id"], [])
        feature = {
            "image/encoded": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data])),
            "image/object/bbox/xmin": floats([a["bbox"][0] / w for a in objects]),
            "image/object/bbox/ymin": floats([a["bbox"][1] / h for a in objects]),
            "image/object/bbox/xmax": floats([(a["bbox"][0] + a["bbox"][2]) / w
                                              for a in objects]),
            "image/object/bbox/ymax": floats([(a["bbox"][1] + a["bbox"][3]) / h
                                              for a in objects]),
            "image/object/class/label": tf.train.Feature(int64_list=tf.train.Int64List(
                value=[ids.index(a["category_id"]) for a in objects])),
            "image/object/is_crowd": tf.train.Feature(int64_list=tf.train.Int64List(
                value=[a["iscrowd"] for a in objects])),
        }
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        writers[n % 4].write(example.SerializeToString())
    for writer in writers:
        writer.close()
    seconds = time.perf_counter() - start
    return {"records_per_s": len(coco["images"]) / seconds, "cpu_s": _cpu() - cpu}


def _options() -> Any:
    import tfrecordkit as tk

    return tk.DecodeOptions(image_size=SIZE, crop="random", flip=True)


def case_numpy(dataset: str) -> dict[str, float]:
    import tfrecordkit as tk

    cpu, start = _cpu(), time.perf_counter()
    images = 0
    for batch in tk.load_numpy_dataset(dataset, batch_size=BATCH, options=_options(), seed=1):
        images += len(batch["image"])
    return {"cpu_s": _cpu() - cpu, "seconds": time.perf_counter() - start, "images": images}


def case_tf(dataset: str) -> dict[str, float]:
    import tensorflow as tf  # noqa: F401  (imported before the clock starts)

    from tfrecordkit.readers.tf_data import load_tf_dataset

    cpu, start = _cpu(), time.perf_counter()
    images = 0
    for batch in load_tf_dataset(dataset, batch_size=BATCH, options=_options(), seed=1):
        images += int(batch["image"].shape[0])
    return {"cpu_s": _cpu() - cpu, "seconds": time.perf_counter() - start, "images": images}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=320)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--root", default="bench_output/detection")
    add_json_option(parser)
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    instances = run_fresh("detection", f"make({root!r}, {args.images})")
    dataset = os.path.join(root, "ds")
    run_fresh("detection", f"case_convert({instances!r}, {dataset!r})")
    cases = {
        "convert": f"case_convert({instances!r}, {os.path.join(root, 'convert')!r})",
        "loop": f"case_loop({instances!r}, {os.path.join(root, 'loop')!r})",
        "numpy crop": f"case_numpy({dataset!r})",
        "tf crop": f"case_tf({dataset!r})",
    }
    runs: dict[str, list[dict[str, float]]] = {case: [] for case in cases}
    for r in range(args.runs):
        for case, call in cases.items():
            runs[case].append(run_fresh("detection", call))
            print(f"run {r + 1} {case}: {runs[case][-1]}", file=sys.stderr)
    medians, spread = medians_and_spread(runs)
    ratios = {
        "convert / loop records per s": medians["convert"]["records_per_s"]
        / medians["loop"]["records_per_s"],
        "tf crop / numpy crop CPU": medians["tf crop"]["cpu_s"] / medians["numpy crop"]["cpu_s"],
    }
    # The same per run (alternating fresh processes: each run's pair shares the machine's
    # state), whose median is steadier than the ratio of medians on a noisy machine.
    paired = sorted(t["cpu_s"] / n["cpu_s"] for t, n in zip(runs["tf crop"], runs["numpy crop"],
                                                           strict=True))
    ratios["tf crop / numpy crop CPU, paired median"] = paired[len(paired) // 2]
    for case, figures in medians.items():
        print(f"{case:>12}: " + ", ".join(f"{k} {v:,.3g}" for k, v in figures.items()))
    for label, value in ratios.items():
        print(f"{label}: {value:.2f}x")
    if args.json:
        write_results(args.json, "detection", images=args.images, medians=medians,
                      spread=spread, ratios=ratios)
    return 0


if __name__ == "__main__":
    sys.exit(main())
