"""Image resizing without a framework, with the arithmetic of ``tf.image.resize`` (bilinear,
half-pixel centres, no antialiasing) so every reader gives the same pixels."""

from __future__ import annotations

import math

import numpy as np

from tfrecordkit.errors import OptionError

__all__ = ["resize_image", "resize_image_with_pad"]


def _weights(in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output position: lower and upper source index and the weight of the upper one."""
    scale = np.float32(in_size) / np.float32(out_size)
    centre = (np.arange(out_size, dtype=np.float32) + np.float32(0.5)) * scale - np.float32(0.5)
    floor = np.floor(centre)
    lower = np.maximum(floor.astype(np.int64), 0)
    upper = np.minimum(np.ceil(centre).astype(np.int64), in_size - 1)
    return lower, upper, (centre - floor).astype(np.float32)


def _resize_float(pixels: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bilinear resize of ``[h, w, c]`` to float32 ``[height, width, c]``."""
    source = pixels.astype(np.float32)
    top, bottom, y_lerp = _weights(pixels.shape[0], height)
    left, right, x_lerp = _weights(pixels.shape[1], width)
    x_lerp = x_lerp[None, :, None]
    rows_top, rows_bottom = source[top], source[bottom]
    top_row = rows_top[:, left] + (rows_top[:, right] - rows_top[:, left]) * x_lerp
    bottom_row = rows_bottom[:, left] + (rows_bottom[:, right] - rows_bottom[:, left]) * x_lerp
    return top_row + (bottom_row - top_row) * y_lerp[:, None, None]  # type: ignore[no-any-return]


def _to_uint8(values: np.ndarray) -> np.ndarray:
    # tf.round rounds half to even, as np.rint does; then saturate.
    return np.clip(np.rint(values), 0, 255).astype(np.uint8)  # type: ignore[no-any-return]


def resize_image(pixels: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """uint8 ``[h, w, c]`` pixels resized to ``size=(height, width)``, as
    ``tf.saturate_cast(tf.round(tf.image.resize(pixels, size)), tf.uint8)`` gives them."""
    return _to_uint8(_resize_float(pixels, size[0], size[1]))


def resize_image_with_pad(pixels: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """uint8 pixels scaled to fit ``size`` keeping the aspect ratio, centred and padded with
    zeros, as ``tf.image.resize_with_pad`` (then rounded to uint8) gives them."""
    height, width = pixels.shape[:2]
    target_h, target_w = np.float32(size[0]), np.float32(size[1])
    ratio = max(np.float32(width) / target_w, np.float32(height) / target_h)
    scaled_h, scaled_w = np.float32(height) / ratio, np.float32(width) / ratio
    new_h, new_w = math.floor(scaled_h), math.floor(scaled_w)
    if new_h < 1 or new_w < 1:
        raise OptionError(f"a {height}x{width} image scaled into {size[0]}x{size[1]} keeping "
                         f"its aspect ratio would be {new_h}x{new_w}")
    pad_top = max(0, math.floor((target_h - scaled_h) / np.float32(2)))
    pad_left = max(0, math.floor((target_w - scaled_w) / np.float32(2)))
    out = np.zeros((size[0], size[1], pixels.shape[2]), dtype=np.float32)
    out[pad_top : pad_top + new_h, pad_left : pad_left + new_w] = _resize_float(
        pixels, new_h, new_w)
    return _to_uint8(out)
