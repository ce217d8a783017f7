"""Makes docs/img/digits_grid.png, the guide's picture of tfrecordkit.show_examples: the 1,797
scikit-learn digits (what scripts/demo converts) as a dataset, 16 records sampled with seed 0.

Run: python scripts/make_grid_figure.py [OUT.png]   (tests/readers/test_grid_figure.py checks
that it reproduces the committed file byte for byte)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import tfrecordkit as tk

FIGURE = Path(__file__).resolve().parent.parent / "docs" / "img" / "digits_grid.png"


def make(out: Path) -> None:
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images * 16).clip(0, 255).astype(np.uint8)
    names = [str(k) for k in range(10)]
    schema = tk.Schema({"image": tk.Image("png"), "label": tk.ClassLabel(names)})
    with tempfile.TemporaryDirectory() as folder:
        rows = ({"image": image, "label": int(target)}
                for image, target in zip(images, digits.target, strict=True))
        tk.write_dataset(rows, Path(folder) / "digits", schema, shards=tk.ShardOptions(seed=0),
                         progress=False)
        grid = tk.show_examples(Path(folder) / "digits", n=16, seed=0)
    grid.save(out, format="PNG", optimize=False)


if __name__ == "__main__":
    make(Path(sys.argv[1]) if len(sys.argv) > 1 else FIGURE)
