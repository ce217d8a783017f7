"""Writes the datasets in this folder with the tfrecordkit release they are named after, so
later releases prove they still read them (run with that release on the path:
``PYTHONPATH=<checkout of 2dafdb6>/src python make_release_datasets.py``).

``mixed/`` holds every feature kind (a float64 scalar as that release stored it, as float32;
PNG images; text with a vocabulary; tensors; sequences; a class label) and ``per_class/``
the per-class layout; ``adopted/`` files whose class is only in their name. ``values.json``
is what each record held when written, keyed by its ``n``.
"""

import io
import json
import os
import shutil

import numpy as np
from PIL import Image as PILImage

import tfrecordkit as tk
from tfrecordkit.format import RecordWriter, encode_example

HERE = os.path.dirname(os.path.abspath(__file__))


def png(pixels):
    out = io.BytesIO()
    PILImage.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


def main():
    rng = np.random.default_rng(20261124)
    schema = tk.Schema({
        "n": tk.Scalar("int64"),
        "f64": tk.Scalar("float64"),
        "f16": tk.Scalar("float16"),
        "small": tk.Scalar("int8"),
        "image": tk.Image("png"),
        "text": tk.Text(),
        "tokens": tk.Sequence(tk.Scalar("int64")),
        "grid": tk.Tensor((None, 2), "float32"),
        "label": tk.ClassLabel(["cat", "dog", "emu"]),
    })
    rows, values = [], {}
    for n in range(12):
        pixels = rng.integers(0, 256, size=(4 + n % 3, 5, 3), dtype=np.uint8)
        grid = rng.normal(size=(n % 4, 2)).astype(np.float32)
        row = {"n": n, "f64": 0.1 * n, "f16": 0.5 * n, "small": -n, "image": png(pixels),
               "text": f"record {n} ünï", "tokens": list(range(n % 5)), "grid": grid,
               "label": n % 3}
        rows.append(row)
        values[n] = {"f64": float(np.float32(0.1 * n)), "f16": 0.5 * n, "small": -n,
                     "pixels": pixels.tolist(), "text": row["text"], "tokens": row["tokens"],
                     "grid": grid.tolist(), "label": n % 3}
    for layout in ("mixed", "per_class"):
        out = os.path.join(HERE, layout)
        shutil.rmtree(out, ignore_errors=True)
        tk.write_dataset(rows, out, schema, layout=layout, seed=3, num_shards=2,
                         progress=False)
    adopted = os.path.join(HERE, "adopted")
    shutil.rmtree(adopted, ignore_errors=True)
    os.makedirs(adopted)
    for k in range(3):
        with RecordWriter(os.path.join(adopted, f"class_{k}.tfrecord")) as writer:
            for i in range(4):
                writer.write(encode_example({"x": [10 * k + i]}))
    tk.adopt(adopted, class_pattern=r"class_(\d+)")
    with open(os.path.join(HERE, "values.json"), "w") as f:
        json.dump({"release": "2dafdb6", "records": values}, f, indent=1)


if __name__ == "__main__":
    main()
