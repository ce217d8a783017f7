"""Image resizing without a framework, with the arithmetic of ``tf.image.resize`` (bilinear,
half-pixel centres, no antialiasing) so every reader gives the same pixels.

A compiled kernel (``_resample``, C, without the GIL) does the work when it was built; the
NumPy version here is its twin, used without a compiler or with
``TFRECORDKIT_PURE_PYTHON=1``, and gives the same bits."""

from __future__ import annotations

import math

import numpy as np

from tfrecordkit._native import load_compiled
from tfrecordkit.errors import OptionError

__all__ = ["pad_window", "resize_image", "resize_image_with_pad", "resize_into",
           "resize_kernel_name"]


_KERNEL = load_compiled("tfrecordkit.codecs._resample")


def resize_kernel_name() -> str:
    """Which resize runs: ``"compiled"`` or ``"numpy"``."""
    return "compiled" if _KERNEL is not None else "numpy"


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


def _per_channel(values: tuple[float, ...] | None, channels: int) -> np.ndarray | None:
    if values is None:
        return None
    if len(values) not in (1, channels):
        raise OptionError(f"{len(values)} mean/std values for {channels}-channel images")
    return np.asarray(values, dtype=np.float32)


def resize_into(pixels: np.ndarray, out: np.ndarray, *, flip: bool = False,
                mean: tuple[float, ...] | None = None,
                std: tuple[float, ...] | None = None) -> np.ndarray:
    """uint8 ``[h, w, c]`` pixels resized into ``out`` (``[H, W, c]``, e.g. a batch's row or a
    window of it) and ``out`` returned: uint8 as
    ``tf.saturate_cast(tf.round(tf.image.resize(pixels, (H, W))), tf.uint8)`` gives them,
    or, for a float32 ``out``, those values scaled to ``(v / 255 - mean) / std``;
    ``flip`` mirrors the result left to right.

    Raises:
        ValueError: shapes or dtypes that do not fit (channels differ, an empty source).
    """
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or 0 in pixels.shape[:2]:
        raise ValueError(f"expected non-empty uint8 [h, w, c] pixels, got {pixels.dtype} "
                         f"{pixels.shape}")
    if out.ndim != 3 or out.shape[2] != pixels.shape[2] or out.dtype not in (np.uint8,
                                                                            np.float32):
        raise ValueError(f"cannot resize {pixels.shape} pixels into {out.dtype} {out.shape}")
    if (mean is not None or std is not None) and out.dtype != np.float32:
        raise ValueError("mean and std scale float32 pixels")
    if _KERNEL is not None and out.flags.writeable:
        source = pixels if pixels.strides[1:] == (pixels.shape[2], 1) else pixels.copy()
        _KERNEL.resize_into(source, out, flip, mean, std)
        return out
    if 0 in out.shape[:2]:
        return out
    values = _to_uint8(_resize_float(pixels, out.shape[0], out.shape[1]))
    if flip:
        values = values[:, ::-1]
    if out.dtype == np.uint8:
        out[...] = values
        return out
    scaled = values.astype(np.float32) / np.float32(255.0)
    channels = pixels.shape[2]
    mean_values, std_values = _per_channel(mean, channels), _per_channel(std, channels)
    if mean_values is not None:
        scaled = scaled - mean_values
    if std_values is not None:
        scaled = scaled / std_values
    out[...] = scaled
    return out


def resize_image(pixels: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """uint8 ``[h, w, c]`` pixels resized to ``size=(height, width)``, as
    ``tf.saturate_cast(tf.round(tf.image.resize(pixels, size)), tf.uint8)`` gives them."""
    out = np.empty((size[0], size[1], pixels.shape[2]), dtype=np.uint8)
    return resize_into(pixels, out)


def pad_window(height: int, width: int, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """Where ``tf.image.resize_with_pad`` puts a ``height × width`` image inside ``size``,
    keeping its aspect ratio: ``(top, left, scaled height, scaled width)``.

    Raises:
        OptionError: the scaled image would be empty.
    """
    target_h, target_w = np.float32(size[0]), np.float32(size[1])
    ratio = max(np.float32(width) / target_w, np.float32(height) / target_h)
    scaled_h, scaled_w = np.float32(height) / ratio, np.float32(width) / ratio
    new_h, new_w = math.floor(scaled_h), math.floor(scaled_w)
    if new_h < 1 or new_w < 1:
        raise OptionError(f"a {height}x{width} image scaled into {size[0]}x{size[1]} keeping "
                          f"its aspect ratio would be {new_h}x{new_w}")
    pad_top = max(0, math.floor((target_h - scaled_h) / np.float32(2)))
    pad_left = max(0, math.floor((target_w - scaled_w) / np.float32(2)))
    return pad_top, pad_left, new_h, new_w


def resize_image_with_pad(pixels: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """uint8 pixels scaled to fit ``size`` keeping the aspect ratio, centred and padded with
    zeros, as ``tf.image.resize_with_pad`` (then rounded to uint8) gives them."""
    top, left, new_h, new_w = pad_window(pixels.shape[0], pixels.shape[1], size)
    out = np.zeros((size[0], size[1], pixels.shape[2]), dtype=np.uint8)
    resize_into(pixels, out[top : top + new_h, left : left + new_w])
    return out
