"""Writes this folder's dataset with the tfrecordkit of commit 573a86e (before COCO records were
keyed by image folder and file name, and before the key rule was recorded in the manifest):

    git worktree add /tmp/old 573a86e && (cd /tmp/old && python setup.py build_ext --inplace)
    PYTHONPATH=/tmp/old/src python tests/golden/coco_before_key_rule/make.py

It converts ``coco/instances.json`` (three 8x8 PNGs in ``coco/images``, two objects) into
``dataset/``; tests append to a copy of it.
"""

import json
import os
import shutil

import numpy as np
from PIL import Image

import tfrecordkit as tk

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    coco = os.path.join(HERE, "coco")
    images = os.path.join(coco, "images")
    os.makedirs(images, exist_ok=True)
    rng = np.random.default_rng(7)
    entries = []
    for k in range(1, 4):
        Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(
            os.path.join(images, f"{k:04d}.png"))
        entries.append({"id": k, "file_name": f"{k:04d}.png", "width": 8, "height": 8})
    annotations = [{"id": 10, "image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 4],
                    "area": 16.0, "iscrowd": 0},
                   {"id": 11, "image_id": 2, "category_id": 2, "bbox": [0, 2, 6, 5],
                    "area": 30.0, "iscrowd": 0}]
    with open(os.path.join(coco, "instances.json"), "w") as f:
        json.dump({"images": entries, "annotations": annotations,
                   "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]}, f)
    out = os.path.join(HERE, "dataset")
    shutil.rmtree(out, ignore_errors=True)
    tk.convert(tk.Coco(os.path.join(coco, "instances.json"), images=images), out,
               split={"train": 0.5, "val": 0.5}, progress=False)
    print("wrote", out, tk.__file__)


if __name__ == "__main__":
    main()
