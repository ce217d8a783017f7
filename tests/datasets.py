"""Small real datasets for tests, made with real encoders (no downloads)."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def digits_folder(root: Path, limit_per_class: int | None = None) -> dict[str, np.ndarray]:
    """scikit-learn's 8x8 digits as PNG files in ``root/<digit>/``; returns path -> pixels."""
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images * 16).clip(0, 255).astype(np.uint8)
    pixels: dict[str, np.ndarray] = {}
    per_class: dict[int, int] = {}
    for i, (image, target) in enumerate(zip(images, digits.target, strict=True)):
        if limit_per_class is not None and per_class.get(int(target), 0) >= limit_per_class:
            continue
        per_class[int(target)] = per_class.get(int(target), 0) + 1
        folder = root / str(target)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{i:04d}.png"
        Image.fromarray(image).save(path)
        pixels[str(path)] = image
    return pixels


def photos() -> dict[str, np.ndarray]:
    """scikit-image's sample photos (RGB and grayscale, different sizes), shrunk for speed."""
    from skimage import data, transform

    out = {}
    for name in ("astronaut", "camera", "coffee", "chelsea", "coins", "rocket"):
        image = getattr(data, name)()
        small = transform.resize(image, (image.shape[0] // 8, image.shape[1] // 8),
                                 anti_aliasing=True, preserve_range=True)
        out[name] = small.round().clip(0, 255).astype(np.uint8)
    return out


def encode_image(pixels: np.ndarray, fmt: str) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buffer.getvalue()


def tone(seconds: float, rate: int, hz: float, channels: int = 1) -> np.ndarray:
    """A sine tone, float32 frames x channels."""
    t = np.arange(int(seconds * rate)) / rate
    wave = (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)
    return np.stack([wave] * channels, axis=1)


def encode_audio(samples: np.ndarray, rate: int, fmt: str) -> bytes:
    import soundfile

    buffer = io.BytesIO()
    soundfile.write(buffer, samples, rate, format=fmt, subtype="PCM_16")
    return buffer.getvalue()


CLASSES = 6  # of unlabelled_files


def unlabelled_files(folder: Path, parts_of: Callable[[int], int] = lambda k: 1,
                     per_file: int = 5) -> dict[str, tuple[int, dict[str, Any]]]:
    """Files as another tool writes them when the class is only in the file name:
    ``class_<k>-<j>.tfrecord`` (``parts_of(k)`` files for class ``k``) by tf.io.TFRecordWriter,
    each record a JPEG, a caption ``"<k> <j> <i>"`` and a float, no label. Returns caption ->
    (class, row)."""
    import tensorflow as tf

    def feature(value: bytes | float) -> Any:
        if isinstance(value, bytes):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
        return tf.train.Feature(float_list=tf.train.FloatList(value=[value]))

    folder.mkdir(parents=True, exist_ok=True)
    sources = [p for p in photos().values() if p.ndim == 3]
    rows = {}
    for k in range(CLASSES):
        for j in range(parts_of(k)):
            with tf.io.TFRecordWriter(str(folder / f"class_{k}-{j}.tfrecord")) as writer:
                for i in range(per_file):
                    pixels = sources[(k + i) % len(sources)][: 16 + i, : 20 + j]
                    caption = f"{k} {j} {i}"
                    row = {"image": encode_image(pixels, "JPEG"), "caption": caption.encode(),
                           "score": k + i / 10}
                    example = tf.train.Example(features=tf.train.Features(
                        feature={name: feature(v) for name, v in row.items()}))
                    writer.write(example.SerializeToString())
                    rows[caption] = (k, row)
    return rows


def class_of(caption: bytes | str) -> int:
    """The class an :func:`unlabelled_files` caption names."""
    text = caption.decode() if isinstance(caption, bytes) else str(caption)
    return int(text.split()[0])


def own(value):
    """One record's value from a reader as the record's own array: ``{"values", "lengths"}``
    (the batch structure of a varying shape, without its batch dimension) gives its values;
    tensors become NumPy."""
    if isinstance(value, dict) and set(value) == {"values", "lengths"}:
        value = value["values"]
    return value.numpy() if hasattr(value, "numpy") else value


LOADER_RECORDS = 203  # the loader tests' shared dataset: not a multiple of any batch size used


def _mixed_schema():
    from tfrecordkit.schema import (
        Audio,
        ClassLabel,
        Image,
        Scalar,
        Schema,
        Sequence,
        Tensor,
        Text,
    )

    return Schema({
        "i8": Scalar("int8"), "u16": Scalar("uint16"), "b": Scalar("bool"), "f": Scalar("float32"),
        "d": Scalar("float64", float32_storage=True), "s": Scalar("string"),
        "label": ClassLabel(["a", "b", "c"]),
        "text": Text(), "tok": Text(token_ids=True), "seq": Sequence(Scalar("int64")),
        "words": Sequence(Text()), "t": Tensor((None, 2), "int16"),
        "fixed": Tensor((3,), "float32"),
        "png": Image("png"), "raw": Image("raw", channels=3), "pcm": Audio("pcm", sample_rate=8000),
        "wav": Audio("wav"),
    })


MIXED_SCHEMA = _mixed_schema()
"""Every feature kind and layout, for tests that need one of each (with :func:`mixed_row`)."""


def mixed_row(i, rng):
    """Record ``i`` of :data:`MIXED_SCHEMA`, its values drawn from ``rng``."""
    pixels = rng.integers(0, 256, (4 + i % 3, 5, 3), dtype=np.uint8)
    return {
        "i8": int(rng.integers(-128, 128)), "u16": int(rng.integers(0, 65536)), "b": i % 2 == 0,
        "f": float(rng.normal()), "d": float(rng.normal()), "s": b"\xff" * (i % 3),
        "label": i % 3, "text": "héllo " * (i % 4),
        "tok": {"text": f"t{i}", "ids": np.arange(i % 5)}, "seq": list(range(i % 4)),
        "words": ["w"] * (i % 3), "t": np.arange(2 * (i % 3), dtype=np.int16).reshape(-1, 2),
        "fixed": np.full(3, i, np.float32), "png": encode_image(pixels, "PNG"), "raw": pixels,
        "pcm": tone(0.01 * (1 + i % 2), 8000, 440), "wav": encode_audio(tone(0.01, 8000, 220),
                                                                        8000, "WAV"),
    }


def untagged(value: Any) -> str:
    """A manifest's splits (or file names) as JSON, with the writer id that names one append
    attempt's shards (``-a0001x1f2e3d4c-``) taken out, to compare two datasets grown alike."""
    if isinstance(value, dict) and value and hasattr(next(iter(value.values())), "shards"):
        value = {name: [vars(s) for s in info.shards] for name, info in value.items()}
    text = json.dumps(value, sort_keys=True, default=lambda v: v.hex() if isinstance(
        v, bytes) else str(v))
    return re.sub(r"-a(\d{4})x[0-9a-f]{8}-", r"-a\1-", text)
