"""The NumPy (codecs) and tf.data (its in-graph twins) image decoders return the same pixels for
the same bytes."""

from __future__ import annotations

import io

import numpy as np
import pytest

from tfrecordkit.codecs import decode_image_bytes

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
tf_data = pytest.importorskip("tfrecordkit.readers.tf_data")


def _photos() -> dict[str, np.ndarray]:
    from skimage import data

    rgb = data.astronaut()[::2, ::2]
    alpha = (np.arange(rgb.shape[0] * rgb.shape[1]) % 256).astype(np.uint8)
    return {
        "astronaut": rgb,
        "coffee": data.coffee()[::2, ::2],
        "chelsea": data.chelsea(),  # odd width: chroma upsampling at the edge
        "camera": data.camera()[::2, ::2],  # grayscale
        "rgba": np.dstack([rgb, alpha.reshape(rgb.shape[:2])]),
        "grey_alpha": np.dstack([data.camera()[::2, ::2], alpha.reshape(256, 256)]),
    }


def _encode(pixels: np.ndarray, fmt: str, **options: object) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    mode = {2: "LA", 4: "RGBA"}.get(pixels.shape[2]) if pixels.ndim == 3 else None
    Image.fromarray(pixels, mode).save(buffer, format=fmt, **options)
    return buffer.getvalue()


CASES = [(name, fmt, options) for name in ("astronaut", "coffee", "chelsea", "camera")
         for fmt, options in [("JPEG", {"quality": 90, "subsampling": 2}),
                              ("JPEG", {"quality": 95, "subsampling": 0}),
                              ("JPEG", {"quality": 75, "progressive": True}),
                              ("PNG", {})]]
CASES += [(name, "PNG", {}) for name in ("rgba", "grey_alpha")]


@pytest.mark.parametrize(("name", "fmt", "options"), CASES,
                         ids=[f"{n}-{f}-{i}" for i, (n, f, _) in enumerate(CASES)])
@pytest.mark.parametrize("channels", [None, 1, 2, 3, 4])
def test_pillow_and_tensorflow_decode_the_same_pixels(name, fmt, options, channels):
    data = _encode(_photos()[name], fmt, **options)
    numpy_pixels = decode_image_bytes(data, channels)
    for encoding in ("auto", fmt.lower()):
        tf_pixels = tf_data.decode_image_tensor(tf.constant(data), channels, encoding).numpy()
        assert tf_pixels.shape == numpy_pixels.shape
        assert np.array_equal(tf_pixels, numpy_pixels), (
            f"max difference {np.abs(tf_pixels.astype(int) - numpy_pixels).max()}")
    if channels in (1, 3) and fmt == "JPEG":
        # ... and equal TensorFlow's own decoder with its accurate DCT.
        plain = tf.io.decode_jpeg(data, channels=channels, dct_method="INTEGER_ACCURATE")
        assert np.array_equal(plain.numpy(), numpy_pixels)


def test_sixteen_bit_png_takes_the_high_byte_as_tensorflow_does():
    from PIL import Image

    values = (np.arange(64 * 64, dtype=np.uint32) * 16).astype(np.uint16).reshape(64, 64)
    buffer = io.BytesIO()
    Image.fromarray(values).save(buffer, format="PNG")
    data = buffer.getvalue()
    expected = tf.io.decode_png(data).numpy()
    assert np.array_equal(decode_image_bytes(data), expected)
    assert np.array_equal(tf_data.decode_image_tensor(tf.constant(data)).numpy(), expected)
