"""Variable-size images with fixed padded shapes (the tutorials' ``padded_batch`` with
``padded_shapes=([256, None, 3], [])``), from real photos.

scikit-image's sample photos (RGB and grayscale, different sizes) are cut into crops of random
sizes and written as PNG with their class (the photo's name). tf.data pads every batch to a
height of 256 and the batch's widest image; the NumPy loader gives the same pixels plus each
image's true shape. Checks that both readers agree and that no pixel was changed.
Run: python examples/variable_size_images.py [OUT_DIR]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tfrecordkit as tk

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera", "coins")


def crops(seed: int = 0) -> list[dict]:
    from skimage import data

    rng = np.random.default_rng(seed)
    rows = []
    for label, name in enumerate(PHOTOS):
        photo = getattr(data, name)()
        photo = photo if photo.ndim == 3 else np.repeat(photo[:, :, None], 3, axis=2)
        for _ in range(8):
            h, w = rng.integers(64, 256, size=2)
            y, x = rng.integers(0, photo.shape[0] - h), rng.integers(0, photo.shape[1] - w)
            rows.append({"image": photo[y : y + h, x : x + w, :3], "label": label})
    return rows


def main(out: Path) -> None:
    rows = crops()
    schema = tk.Schema({"image": tk.Image("png", channels=3),
                        "label": tk.ClassLabel(list(PHOTOS))})
    tk.write_dataset(rows, out / "crops", schema,
                     shards=tk.ShardOptions(shuffle=False), overwrite=True)
    shapes = {"image": (256, None, 3)}

    ds = tk.load_tf_dataset(out / "crops", batch_size=8, sampling=tk.InOrder(),
                            options=tk.DecodeOptions(padded_shapes=shapes))
    loader = tk.load_numpy_dataset(out / "crops", batch_size=8, sampling=tk.InOrder(),
                                   options=tk.DecodeOptions(padded_shapes=shapes))
    for step, (tf_batch, np_batch) in enumerate(zip(ds, loader, strict=True)):
        pixels, true_shapes = np_batch["image"]["values"], np_batch["image"]["lengths"]
        assert np.array_equal(tf_batch["image"]["values"].numpy(), pixels)
        assert np.array_equal(tf_batch["image"]["lengths"].numpy(), true_shapes)
        for i, (h, w) in enumerate(true_shapes):
            source = rows[step * 8 + i]["image"]
            assert np.array_equal(pixels[i, :h, :w], source) and not pixels[i, h:].any()
        print(f"batch {step}: padded to {tuple(pixels.shape)}; images "
              f"{', '.join(f'{h}x{w}' for h, w in true_shapes)}")
    print("tf.data and the NumPy loader agree; every crop is unchanged under its padding")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
