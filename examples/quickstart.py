"""Quickstart: real images into TFRecords, then inspect, verify and read them back.

Uses the 1,797 real 8x8 grayscale digits that scikit-learn ships, encoded as PNG.
Run: python examples/quickstart.py [OUT_DIR]
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits

from tfrecordkit import RecordReader, RecordWriter, build_index, decode_example, encode_example
from tfrecordkit.cli import main as cli


def png_bytes(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "digits.tfrecord"
    digits = load_digits()
    images = (digits.images * 16).clip(0, 255).astype(np.uint8)  # 0..16 -> 0..255
    with RecordWriter(path) as writer:
        for pixels, label in zip(images, digits.target, strict=True):
            writer.write(encode_example({
                "image": png_bytes(pixels), "label": int(label),
                "height": pixels.shape[0], "width": pixels.shape[1],
            }))
    print(f"wrote {len(images)} digit images to {path}\n")
    for argv in (["inspect", str(path)], ["verify", str(path)], ["head", "-n", "2", str(path)]):
        print(f"$ tfrecordkit {' '.join(argv)}")
        if cli([*argv, "--quiet"]) != 0:
            sys.exit(1)
        print()
    build_index(path)
    record = decode_example(RecordReader(path).read(1000))
    pixels = np.asarray(Image.open(io.BytesIO(record["image"][0])))
    assert np.array_equal(pixels, images[1000]), "record 1000 does not round-trip"
    print(f"record 1000 read back through the index: label {record['label'][0]}, "
          f"pixels {pixels.shape} identical to the source")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "demo_output")
