"""Small real datasets for tests, made with real encoders (no downloads)."""

from __future__ import annotations

import io
from pathlib import Path

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
