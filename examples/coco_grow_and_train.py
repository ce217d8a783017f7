"""A detection team's month: COCO in, grown by a category, trained on.

1. Week 1: a COCO-style ``instances_train.json`` (real photos from scikit-image with coloured
   rectangles pasted in as the objects, two categories, some crowd regions) converted with
   ``tk.Coco``: every object keeps its COCO annotation id, crowd flag and area beside its box.
2. Week 2: a second JSON with a third category ("green box"), new images and one image of
   week 1 again; ``tk.append`` gives the new category the next id (old ids keep their
   names) and leaves the repeated image out.
3. Trains a small PyTorch model on the grown dataset with random-resized crops and flips
   (the boxes follow every crop, and so do their crowd flags): it predicts which categories an
   image holds, crowd regions left out as the torchvision and detectron2 recipes leave them.
   Prints the held-out accuracy before and after training.

Run: python examples/coco_grow_and_train.py [folder]
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

import tfrecordkit as tk

COLOURS = {1: (220, 30, 30), 2: (30, 30, 220), 3: (30, 200, 30)}
NAMES = {1: "red box", 2: "blue box", 3: "green box"}


def make_week(root: Path, name: str, first_id: int, count: int, categories: list[int],
              seed: int, repeat: dict | None = None) -> Path:
    """``count`` photos with 1-3 coloured rectangles of ``categories`` (a fifth of them
    crowd regions), and their COCO annotation file ``root/<name>.json``."""
    from PIL import Image
    from skimage import data

    photos = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket()]
    rng = np.random.default_rng(seed)
    images, annotations = [], []
    (root / "images").mkdir(parents=True, exist_ok=True)
    for image_id in range(first_id, first_id + count):
        photo = photos[image_id % len(photos)]
        height, width = int(rng.integers(64, 96)), int(rng.integers(64, 96))
        pixels = np.asarray(Image.fromarray(photo).resize((width, height))).copy()
        for _ in range(int(rng.integers(1, 4))):
            w, h = int(rng.integers(16, width // 2)), int(rng.integers(16, height // 2))
            x, y = int(rng.integers(0, width - w)), int(rng.integers(0, height - h))
            category = int(rng.choice(categories))
            pixels[y: y + h, x: x + w] = COLOURS[category]
            annotations.append({"id": 1000 * image_id + len(annotations), "image_id": image_id,
                                "category_id": category, "bbox": [x, y, w, h],
                                "area": float(w * h), "iscrowd": int(rng.random() < 0.2)})
        file_name = f"{image_id:05d}.jpg"
        Image.fromarray(pixels).save(root / "images" / file_name, quality=92)
        images.append({"id": image_id, "file_name": file_name, "height": height,
                       "width": width})
    if repeat is not None:  # an image of an earlier week, annotated as it was
        images.append(repeat["image"])
        annotations += repeat["annotations"]
    path = root / f"{name}.json"
    path.write_text(json.dumps({"images": images, "annotations": annotations, "categories": [
        {"id": c, "name": NAMES[c]} for c in sorted({1, 2, *categories})]}))
    return path


def presence(batch: dict, classes: int) -> np.ndarray:
    """Which categories each image holds, crowd regions left out: ``[B, classes]`` of 0/1."""
    objects = batch["image/object"]
    labels = np.asarray(objects["labels"]["values"])
    crowd = np.asarray(objects["is_crowd"]["values"])
    lengths = np.asarray(objects["labels"]["lengths"])[:, 0]
    out = np.zeros((len(lengths), classes), np.float32)
    for k, n in enumerate(lengths):
        kept = labels[k, :n][crowd[k, :n] == 0]  # padding rows are 0, a class too: lengths
        out[k, kept] = 1.0
    return out


def main() -> int:
    import torch

    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    week1 = make_week(root, "week1", 1, 60, [1, 2], seed=1)
    first = json.loads(week1.read_text())
    repeat = {"image": first["images"][0],
              "annotations": [a for a in first["annotations"] if a["image_id"] == 1]}
    week2 = make_week(root, "week2", 100, 60, [1, 2, 3], seed=2, repeat=repeat)
    dataset = root / "coco_ds"
    tk.convert(tk.Coco(week1, images=root / "images"), dataset,
               split={"train": 0.8, "val": 0.2}, progress=False)
    grown = tk.append(dataset, tk.Coco(week2, images=root / "images"))
    boxes = grown.manifest.schema["image/object"]
    print(f"week 1: {len(first['images'])} images, categories {list(boxes.names[:2])}; "
          f"week 2 appended {grown.added} images "
          f"({grown.present} already there), categories now {list(boxes.names)} with COCO "
          f"ids {list(boxes.ids)}; per-object fields {sorted(boxes.fields)}")
    classes = len(boxes.names)
    options = tk.DecodeOptions(image_size=32, crop="random", flip=True, image_dtype="float32")
    train = tk.load_numpy_dataset(dataset, "train", batch_size=16, seed=0, options=options)
    val = tk.load_numpy_dataset(dataset, "val", batch_size=64, sampling=tk.InOrder(),
                                options=tk.DecodeOptions(image_size=32, crop="center",
                                                         image_dtype="float32"))
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveMaxPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    def images(batch: dict) -> torch.Tensor:
        return torch.from_numpy(np.asarray(batch["image"])).permute(0, 3, 1, 2)

    def accuracy() -> float:
        model.eval()
        right = total = 0
        with torch.no_grad():
            for batch in val:
                want = presence(batch, classes)
                got = (model(images(batch)) > 0).numpy()
                right += int((got == (want > 0)).sum())
                total += want.size
        model.train()
        return right / total

    before = accuracy()
    for _ in range(25):
        for batch in train:
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                model(images(batch)), torch.from_numpy(presence(batch, classes)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    after = accuracy()
    print(f"trained on {len(train) * 16} crops a pass with boxes and crowd flags following "
          f"each crop; held-out per-category accuracy {before:.2f} before training, "
          f"{after:.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
