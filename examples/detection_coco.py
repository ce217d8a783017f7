"""Object detection, COCO-style annotations to training batches.

1. Makes a small COCO-style dataset: real photos (scikit-image's) as JPEG files with coloured
   rectangles pasted in as the objects, and an ``annotations.json`` listing images, categories
   and boxes (``[x, y, width, height]`` in pixels) as COCO does.
2. Writes it as TFRecord files in the TensorFlow Object Detection API's key layout
   (``image/encoded``, ``image/height``, ``image/object/bbox/xmin`` ... normalised to 0-1,
   ``image/object/class/text`` and ``/label``), the layout TF detection pipelines read.
3. Reads those files by glob (their schema inferred from every record: the box and class
   keys become one ``tk.Boxes`` feature, ``image/object``) in PyTorch, with a detection
   collate (a list of per-image ``{"boxes": [n, 4] in pixels, "labels": [n]}`` targets beside
   the padded image batch, as torchvision's detection models take them), and in tf.data;
   checks that both give the boxes the annotations hold.

Run: python examples/detection_coco.py [folder]
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

import tfrecordkit as tk

CATEGORIES = [{"id": 1, "name": "red box"}, {"id": 2, "name": "blue box"}]
IMAGES = 24


def make_coco(root: Path) -> Path:
    """JPEG photos with 1-4 coloured rectangles each, and their COCO annotation file."""
    from PIL import Image
    from skimage import data

    photos = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket()]
    rng = np.random.default_rng(0)
    images, annotations = [], []
    (root / "images").mkdir(parents=True, exist_ok=True)
    for image_id in range(1, IMAGES + 1):
        photo = photos[image_id % len(photos)]
        height, width = int(rng.integers(120, 200)), int(rng.integers(120, 200))
        pixels = np.asarray(Image.fromarray(photo).resize((width, height))).copy()
        for _ in range(int(rng.integers(1, 5))):
            w, h = int(rng.integers(12, width // 2)), int(rng.integers(12, height // 2))
            x, y = int(rng.integers(0, width - w)), int(rng.integers(0, height - h))
            category = int(rng.integers(1, 3))
            pixels[y : y + h, x : x + w] = (220, 30, 30) if category == 1 else (30, 30, 220)
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": category, "bbox": [x, y, w, h],
                                "area": w * h, "iscrowd": 0})
        name = f"{image_id:04d}.jpg"
        Image.fromarray(pixels).save(root / "images" / name, quality=92)
        images.append({"id": image_id, "file_name": name, "height": height, "width": width})
    path = root / "annotations.json"
    path.write_text(json.dumps({"images": images, "annotations": annotations,
                                "categories": CATEGORIES}))
    return path


def write_od_records(annotations: Path, out: Path, shards: int = 2) -> list[str]:
    """The COCO dataset as TFRecord files in the Object Detection API's key layout."""
    coco = json.loads(annotations.read_text())
    names = {c["id"]: c["name"] for c in coco["categories"]}
    by_image: dict[int, list[dict[str, Any]]] = {}
    for annotation in coco["annotations"]:
        by_image.setdefault(annotation["image_id"], []).append(annotation)
    out.mkdir(parents=True, exist_ok=True)
    files = [str(out / f"train-{k:05d}-of-{shards:05d}.tfrecord") for k in range(shards)]
    writers = [tk.RecordWriter(f) for f in files]
    try:
        for number, image in enumerate(coco["images"]):
            data = (annotations.parent / "images" / image["file_name"]).read_bytes()
            height, width = image["height"], image["width"]
            boxes = by_image.get(image["id"], [])
            record = {
                "image/encoded": [data], "image/format": [b"jpeg"],
                "image/height": [height], "image/width": [width],
                "image/filename": [image["file_name"].encode()],
                "image/object/bbox/xmin": [b["bbox"][0] / width for b in boxes],
                "image/object/bbox/ymin": [b["bbox"][1] / height for b in boxes],
                "image/object/bbox/xmax": [(b["bbox"][0] + b["bbox"][2]) / width
                                           for b in boxes],
                "image/object/bbox/ymax": [(b["bbox"][1] + b["bbox"][3]) / height
                                           for b in boxes],
                "image/object/class/text": [names[b["category_id"]].encode() for b in boxes],
                "image/object/class/label": [b["category_id"] for b in boxes],
            }
            writers[number % shards].write(tk.encode_example(record))
    finally:
        for writer in writers:
            writer.close()
    return files


def detection_collate(batch: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """A loader batch as a detection model takes it: the padded images as float [B, 3, H, W]
    and, per image, its boxes in pixels (x1, y1, x2, y2) and its labels."""
    import torch

    images = batch["image/encoded"]["values"].permute(0, 3, 1, 2).float() / 255
    objects = batch["image/object"]  # Boxes: [xmin, ymin, xmax, ymax] fractions, class ids
    lengths = objects["labels"]["lengths"][:, 0]
    targets = []
    for k in range(len(lengths)):
        n = int(lengths[k])
        size = torch.tensor([float(batch["image/width"][k]), float(batch["image/height"][k])])
        targets.append({"boxes": objects["boxes"]["values"][k, :n] * size.repeat(2),
                        "labels": objects["labels"]["values"][k, :n]})
    return images, targets


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    annotations = make_coco(root / "coco")
    files = write_od_records(annotations, root / "records")
    pattern = str(root / "records" / "*.tfrecord")
    schema = tk.infer_schema(pattern, sample=None)
    coco = json.loads(annotations.read_text())
    print(f"{len(coco['images'])} images, {len(coco['annotations'])} boxes in "
          f"{len(files)} files of the Object Detection API's layout; inferred "
          f"{schema['image/encoded']!r}, {schema['image/object']!r}")

    import torch

    loader = torch.utils.data.DataLoader(
        tk.load_torch_dataset(pattern, batch_size=8, sampling=tk.InOrder(),
                              options=tk.DecodeOptions(provenance=False),
                              read=tk.ReadOptions(schema=schema)),
        batch_size=None)
    by_file = {}
    for batch in loader:
        images, targets = detection_collate(batch)
        assert images.ndim == 4 and images.shape[1] == 3
        for name, target in zip(batch["image/filename"], targets, strict=True):
            by_file[name] = target  # text (every record's name was UTF-8)
    # The boxes every image gets are the annotations', in pixels.
    expected: dict[str, list[list[float]]] = {}
    files_of = {i["id"]: i["file_name"] for i in coco["images"]}
    for a in coco["annotations"]:
        x, y, w, h = a["bbox"]
        expected.setdefault(files_of[a["image_id"]], []).append([x, y, x + w, y + h])
    worst = max(float(np.abs(by_file[name]["boxes"].numpy() - np.array(boxes)).max())
                for name, boxes in expected.items())
    boxes = sum(len(t["labels"]) for t in by_file.values())
    print(f"PyTorch: {len(by_file)} images, targets of {boxes} boxes; largest difference "
          f"from the annotations {worst:.4f} px")
    assert worst < 0.01

    import tensorflow as tf

    ds = tk.load_tf_dataset(pattern, batch_size=8, sampling=tk.InOrder(),
                            read=tk.ReadOptions(schema=schema))
    same = 0
    for batch in ds:
        names = [n.decode() for n in batch["image/filename"].numpy()]
        objects = batch["image/object"]
        lengths = objects["labels"]["lengths"].numpy()[:, 0]
        for k, name in enumerate(names):
            n = int(lengths[k])
            xmin = objects["boxes"]["values"].numpy()[k, :n, 0]
            want = by_file[name]["boxes"].numpy()[:, 0] / float(batch["image/width"][k])
            same += int(np.allclose(xmin, want, atol=1e-6))
    print(f"tf.data gives the same boxes for {same} of {len(by_file)} images "
          f"(TensorFlow {tf.__version__})")
    assert same == len(by_file)


if __name__ == "__main__":
    main()
