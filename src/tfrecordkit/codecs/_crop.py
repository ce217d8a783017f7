"""Crop windows and flips for image augmentation, as pure functions of (seed, epoch, record id)
and the image's size: every reader, tf.data included, crops the same pixels of a record in an
epoch, whatever its threads, workers or ranks, and resume repeats them exactly."""

from __future__ import annotations

import math

import numpy as np

from tfrecordkit._constants import (
    CROP_SALT,
    CROP_TRIES,
    EXP_TERMS,
    LN2_HI,
    LN2_LO,
    SPLITMIX_GAMMA,
    SPLITMIX_MUL1,
    SPLITMIX_MUL2,
    SPLITMIX_SHIFTS,
)

__all__ = [
    "CROP_DRAWS",
    "CROP_SALT",
    "CROP_TRIES",
    "EXP_TERMS",
    "LN2_HI",
    "LN2_LO",
    "center_crop_box",
    "center_crop_boxes",
    "crop_draws",
    "mix_keys",
    "portable_exp",
    "random_crop_box",
    "random_crop_boxes",
    "random_flips",
    "splitmix",
]

def splitmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays: a cheap, well-mixing bijection."""
    first, second, third = (np.uint64(s) for s in SPLITMIX_SHIFTS)
    x = x + np.uint64(SPLITMIX_GAMMA)
    x = (x ^ (x >> first)) * np.uint64(SPLITMIX_MUL1)
    x = (x ^ (x >> second)) * np.uint64(SPLITMIX_MUL2)
    return x ^ (x >> third)  # type: ignore[no-any-return]


def mix_keys(*parts: np.ndarray | int) -> np.ndarray:
    """uint64 keys from integer arrays (or ints), element by element."""
    with np.errstate(over="ignore"):
        key = np.zeros(1, dtype=np.uint64)
        for part in parts:
            key = splitmix(key ^ np.asarray(part).astype(np.uint64))
    return key


# CROP_TRIES (tries at a random window before the centred fallback, torchvision's rule),
# CROP_SALT (what the draws' key is mixed with), LN2_HI / LN2_LO (ln 2 split in two, Cody and
# Waite: ``n * LN2_HI`` is exact for the ``n`` used here) and EXP_TERMS (Taylor terms of
# ``exp(r)`` for ``|r| <= ln 2 / 2``) come from tfrecordkit._constants, shared with the kernel.
_DRAWS = 4 * CROP_TRIES + 1  # per try: area, aspect, top, left; then the flip
#: Draws per record (:func:`crop_draws`' columns).
CROP_DRAWS = _DRAWS


def portable_exp(x: float) -> float:
    """``exp(x)`` by range reduction and a Taylor polynomial of IEEE additions,
    multiplications and one exact power of two: the same bits in any language that does
    float64 arithmetic in order (tf.data's in-graph windows do it with TensorFlow ops), where
    libm's ``exp`` and TensorFlow's differ in the last bit. Within 4 ulp of ``math.exp``."""
    n = round(x / LN2_HI)
    r = (x - n * LN2_HI) - n * LN2_LO
    term, total = 1.0, 1.0
    for k in range(1, EXP_TERMS):
        term = term * r / k
        total = total + term
    return math.ldexp(total, n)


def _uniforms(seed: int, epoch: int, ids: np.ndarray) -> np.ndarray:
    """``[n, _DRAWS]`` float64 draws in [0, 1), keyed by (seed, epoch, record id)."""
    ids = np.asarray(ids, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        key = mix_keys(int(seed), int(epoch), CROP_SALT)
        per_record = splitmix(key ^ splitmix(ids))
        counters = np.arange(_DRAWS, dtype=np.uint64)
        bits = splitmix(per_record[:, None] ^ splitmix(counters + np.uint64(1))[None, :])
    return (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def crop_draws(seed: int, epoch: int, ids: np.ndarray) -> np.ndarray:
    """The uniform draws random windows and flips are made of: ``[n, 41]`` float64 in
    [0, 1) per record, keyed by (seed, epoch, record id) (counter-based: a record's draws do
    not depend on the others asked with it)."""
    return _uniforms(seed, epoch, ids)


def random_crop_box(height: int, width: int, draws: np.ndarray | list[float], *,
                    scale: tuple[float, float] = (0.08, 1.0),
                    ratio: tuple[float, float] = (3 / 4, 4 / 3),
                    flip: bool = False) -> tuple[int, int, int, int, int]:
    """One record's window from its :func:`crop_draws`: ``(top, left, height, width,
    flip)``, by torchvision's ``RandomResizedCrop`` rule (see :func:`random_crop_boxes`).
    Scalar arithmetic (Python floats): every reader computes the same window with it."""
    u = draws.tolist() if isinstance(draws, np.ndarray) else draws
    area = float(height * width)
    low, high = math.log(ratio[0]), math.log(ratio[1])
    flipped = int(flip and u[_DRAWS - 1] < 0.5)
    for t in range(CROP_TRIES):
        u_area, u_aspect, u_top, u_left = u[4 * t : 4 * t + 4]
        target = area * (scale[0] + (scale[1] - scale[0]) * u_area)
        aspect = portable_exp(low + (high - low) * u_aspect)
        w = round(math.sqrt(target * aspect))
        h = round(math.sqrt(target / aspect))
        if 0 < w <= width and 0 < h <= height:
            return (int(u_top * (height - h + 1)), int(u_left * (width - w + 1)), h, w,
                    flipped)
    # The fallback: the whole image, cut to the nearest aspect inside ratio, centred.
    in_ratio = width / max(height, 1)
    if in_ratio < min(ratio):
        w, h = width, round(width / min(ratio))
    elif in_ratio > max(ratio):
        h, w = height, round(height * max(ratio))
    else:
        w, h = width, height
    h, w = min(max(h, 1), height), min(max(w, 1), width)
    return (height - h) // 2, (width - w) // 2, h, w, flipped


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
    draws = crop_draws(seed, epoch, ids)
    boxes = [random_crop_box(int(h), int(w), d, scale=scale, ratio=ratio, flip=flip)
             for h, w, d in zip(np.asarray(heights).tolist(), np.asarray(widths).tolist(),
                                draws, strict=True)]
    return np.array(boxes, dtype=np.int64).reshape(len(boxes), 5)


def random_flips(*, seed: int, epoch: int, ids: np.ndarray) -> np.ndarray:
    """Whether each record is mirrored left to right (int64 0/1, probability 1/2): the same
    draw :func:`random_crop_boxes` gives with ``flip=True``."""
    return (_uniforms(seed, epoch, ids)[:, -1] < 0.5).astype(np.int64)


def center_crop_box(height: int, width: int, size: tuple[int, int],
                    fraction: float = 0.875) -> tuple[int, int, int, int, int]:
    """One image's evaluation window (see :func:`center_crop_boxes`), in scalar arithmetic."""
    aspect = size[1] / size[0]
    full_h = min(float(height), width / aspect)
    h = min(max(round(full_h * fraction), 1), height)
    w = min(max(round(full_h * aspect * fraction), 1), width)
    return (height - h) // 2, (width - w) // 2, h, w, 0


def center_crop_boxes(heights: np.ndarray, widths: np.ndarray, size: tuple[int, int],
                      fraction: float = 0.875) -> np.ndarray:
    """Evaluation windows: the largest centred window of ``size``'s aspect, its sides cut to
    ``fraction`` (0.875: a 224 crop of an image resized to 256), as ``[n, 5]`` int64
    ``top, left, height, width, flip`` (flip always 0)."""
    boxes = [center_crop_box(int(h), int(w), size, fraction)
             for h, w in zip(np.asarray(heights).tolist(), np.asarray(widths).tolist(),
                             strict=True)]
    return np.array(boxes, dtype=np.int64).reshape(len(boxes), 5)
