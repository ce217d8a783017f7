"""Crop windows and flips for image augmentation, as pure functions of (seed, epoch, record id)
and the image's size: every reader, tf.data included, crops the same pixels of a record in an
epoch, whatever its threads, workers or ranks, and resume repeats them exactly."""

from __future__ import annotations

import math

import numpy as np

from tfrecordkit.sampling._order import _splitmix, mix_keys

__all__ = ["CROP_TRIES", "center_crop_boxes", "random_crop_boxes", "random_flips"]

#: Tries at a random window before the fallback to a centred one (torchvision's rule).
CROP_TRIES = 10
_DRAWS = 4 * CROP_TRIES + 1  # per try: area, aspect, top, left; then the flip


def _uniforms(seed: int, epoch: int, ids: np.ndarray) -> np.ndarray:
    """``[n, _DRAWS]`` float64 draws in [0, 1), keyed by (seed, epoch, record id)."""
    ids = np.asarray(ids, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        key = mix_keys(int(seed), int(epoch), 0x6372_6F70)  # "crop"
        per_record = _splitmix(key ^ _splitmix(ids))
        counters = np.arange(_DRAWS, dtype=np.uint64)
        bits = _splitmix(per_record[:, None] ^ _splitmix(counters + np.uint64(1))[None, :])
    return (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def random_crop_boxes(heights: np.ndarray, widths: np.ndarray, *, seed: int, epoch: int,
                      ids: np.ndarray, scale: tuple[float, float] = (0.08, 1.0),
                      ratio: tuple[float, float] = (3 / 4, 4 / 3),
                      flip: bool = False) -> np.ndarray:
    """Random-resized-crop windows, torchvision's ``RandomResizedCrop`` rule: up to 10 tries at
    an area of ``scale`` times the image's and an aspect (width / height) log-uniform in
    ``ratio``, placed uniformly; else the largest centred window within ``ratio``.

    Returns:
        int64 ``[n, 5]``: ``top, left, height, width`` of each record's window and ``flip``
        (1: mirror left to right, with probability 1/2 when ``flip``, else 0).
    """
    heights = np.asarray(heights, dtype=np.int64)
    widths = np.asarray(widths, dtype=np.int64)
    u = _uniforms(seed, epoch, ids)
    n = len(heights)
    area = (heights * widths).astype(np.float64)[:, None]
    tries = u[:, : 4 * CROP_TRIES].reshape(n, CROP_TRIES, 4)
    target = area * (scale[0] + (scale[1] - scale[0]) * tries[:, :, 0])
    low, high = math.log(ratio[0]), math.log(ratio[1])
    aspect = np.exp(low + (high - low) * tries[:, :, 1])
    w = np.rint(np.sqrt(target * aspect)).astype(np.int64)
    h = np.rint(np.sqrt(target / aspect)).astype(np.int64)
    fits = (w > 0) & (w <= widths[:, None]) & (h > 0) & (h <= heights[:, None])
    first = np.argmax(fits, axis=1)
    found = fits[np.arange(n), first]
    h, w = h[np.arange(n), first], w[np.arange(n), first]
    top = np.floor(tries[np.arange(n), first, 2] * (heights - h + 1)).astype(np.int64)
    left = np.floor(tries[np.arange(n), first, 3] * (widths - w + 1)).astype(np.int64)
    # The fallback: the whole image, cut to the nearest aspect inside ratio, centred.
    in_ratio = widths / np.maximum(heights, 1)
    fb_w, fb_h = widths.copy(), heights.copy()
    narrow, wide = in_ratio < min(ratio), in_ratio > max(ratio)
    fb_h[narrow] = np.rint(widths[narrow] / min(ratio)).astype(np.int64)
    fb_w[wide] = np.rint(heights[wide] * max(ratio)).astype(np.int64)
    fb_h, fb_w = np.clip(fb_h, 1, heights), np.clip(fb_w, 1, widths)
    h, w = np.where(found, h, fb_h), np.where(found, w, fb_w)
    top = np.where(found, top, (heights - h) // 2)
    left = np.where(found, left, (widths - w) // 2)
    flips = (u[:, -1] < 0.5).astype(np.int64) if flip else np.zeros(n, np.int64)
    return np.stack([top, left, h, w, flips], axis=1)


def random_flips(*, seed: int, epoch: int, ids: np.ndarray) -> np.ndarray:
    """Whether each record is mirrored left to right (int64 0/1, probability 1/2): the same
    draw :func:`random_crop_boxes` gives with ``flip=True``."""
    return (_uniforms(seed, epoch, ids)[:, -1] < 0.5).astype(np.int64)


def center_crop_boxes(heights: np.ndarray, widths: np.ndarray, size: tuple[int, int],
                      fraction: float = 0.875) -> np.ndarray:
    """Evaluation windows: the largest centred window of ``size``'s aspect, its sides cut to
    ``fraction`` (0.875: a 224 crop of an image resized to 256), as ``[n, 5]`` int64
    ``top, left, height, width, flip`` (flip always 0)."""
    heights = np.asarray(heights, dtype=np.int64)
    widths = np.asarray(widths, dtype=np.int64)
    aspect = size[1] / size[0]
    full_h = np.minimum(heights.astype(np.float64), widths / aspect)
    h = np.clip(np.rint(full_h * fraction).astype(np.int64), 1, heights)
    w = np.clip(np.rint(full_h * aspect * fraction).astype(np.int64), 1, widths)
    zeros = np.zeros(len(heights), np.int64)
    return np.stack([(heights - h) // 2, (widths - w) // 2, h, w, zeros], axis=1)
