"""The ImageNet recipe in tf.data with the TF-free readers' pixels: each record carries, as it
is read, its epoch and its id in the split (its crop key, beside it); crop windows and flips
come from the library's pure functions of (seed, epoch, record id) (``tfrecordkit.sampling``),
computed in-graph; the window is cut from the full accurate-DCT decode and resized with the
readers' arithmetic."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import tensorflow as tf

from tfrecordkit._constants import SPLITMIX_GAMMA, SPLITMIX_MUL1, SPLITMIX_MUL2, SPLITMIX_SHIFTS
from tfrecordkit.codecs import (
    CROP_DRAWS,
    CROP_SALT,
    CROP_TRIES,
    EXP_TERMS,
    LN2_HI,
    LN2_LO,
    mix_keys,
    splitmix,
)
from tfrecordkit.readers._decoding import DecodeOptions
from tfrecordkit.readers.tf_data._graph import graph_only
from tfrecordkit.readers.tf_data._kernels import crop_windows_op

__all__ = ["CROP_KEY", "EpochCounter", "crop_keys", "crop_window", "jpeg_windows", "keyed",
           "random_windows"]

#: The key each record's crop key, ``[epoch, record id]`` (int64), travels under beside the
#: serialized records (a batch's: ``[n, 2]``) to the windows; never in the output.
CROP_KEY = "__crop_key"


def keyed(options: DecodeOptions) -> bool:
    """Whether images need each record's (epoch, id): random crops or flips."""
    return options.decode and options.image_size is not None and (
        options.crop == "random" or options.flip)


class EpochCounter:
    """Counts iterations of a dataset: :meth:`starting` goes before the files of an epoch (it
    yields nothing and adds one each time it is iterated, so a dataset iterated again, or
    repeated, is in its next epoch), :meth:`value` reads the count where records are read."""

    def __init__(self) -> None:
        self._count = tf.Variable(-1, dtype=tf.int64, trainable=False)

    def starting(self, files: Any) -> Any:
        """``files`` (a dataset) with the count advanced before its first element."""
        def epoch(done: Any) -> Any:  # skips none: the skip orders the count first
            return files.skip(tf.minimum(done, 0))

        return self.iterations().flat_map(graph_only(epoch))

    def iterations(self) -> Any:
        """A dataset of one element: this iteration's number, counted when it is made. The
        number is an element (what ``flat_map`` keeps in an iterator's checkpoint to rebuild
        what it maps it to on restore), so a restored iterator does not count again."""
        return tf.data.Dataset.range(1).map(graph_only(lambda _: self.advance()))

    def value(self) -> Any:
        return self._count.read_value()

    def advance(self) -> Any:
        """In-graph: adds one to the count and gives it (the iterations before this one)."""
        return self._count.assign_add(1)

    @property
    def variable(self) -> Any:
        """The count (an iterator's checkpoint saves and restores it)."""
        return self._count


def crop_keys(epoch: Any, ids: Any) -> Any:
    """The crop keys (``[n, 2]`` int64) of records ``ids`` (``[n]``) read in ``epoch``."""
    return tf.stack([tf.fill(tf.shape(ids), tf.cast(epoch, tf.int64)), ids], axis=1)


# -- the windows, in-graph: the TF-free readers' arithmetic (tfrecordkit.sampling), op by op ----


def _splitmix(x: Any) -> Any:
    """SplitMix64's finaliser on uint64 tensors (``sampling``'s, bit for bit)."""
    first, second, third = SPLITMIX_SHIFTS
    x = x + tf.constant(SPLITMIX_GAMMA, tf.uint64)
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(first, tf.uint64)))
    x = x * tf.constant(SPLITMIX_MUL1, tf.uint64)
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(second, tf.uint64)))
    x = x * tf.constant(SPLITMIX_MUL2, tf.uint64)
    return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(third, tf.uint64)))


def _as_u64(value: Any) -> Any:
    """An int64 tensor's bits as uint64 (NumPy's ``astype(np.uint64)`` of an int64)."""
    return tf.bitcast(tf.cast(value, tf.int64), tf.uint64)


def _draws(seed: int, epoch: Any, record: Any) -> Any:
    """:func:`~tfrecordkit.sampling.crop_draws` of one record (``[41]`` float64 in [0, 1)),
    or of ``[n]`` records (``[n, 41]``)."""
    # mix_keys(seed, epoch, salt); the parts that are constants are computed here, once,
    # by the NumPy functions (fewer ops to trace and optimize).
    seeded = tf.constant(mix_keys(seed)[0], tf.uint64)
    with np.errstate(over="ignore"):
        counters = tf.constant(splitmix(np.arange(1, CROP_DRAWS + 1, dtype=np.uint64)))
    key = _splitmix(tf.bitwise.bitwise_xor(seeded, _as_u64(epoch)))
    key = _splitmix(tf.bitwise.bitwise_xor(key, tf.constant(CROP_SALT, tf.uint64)))
    per_record = _splitmix(tf.bitwise.bitwise_xor(key, _splitmix(_as_u64(record))))
    bits = _splitmix(tf.bitwise.bitwise_xor(per_record[..., None], counters))
    return tf.cast(tf.bitwise.right_shift(bits, tf.constant(11, tf.uint64)),
                   tf.float64) * (1.0 / (1 << 53))


def _exp(x: Any) -> Any:
    """:func:`~tfrecordkit.sampling.portable_exp` with TensorFlow's float64 ops."""
    n = tf.round(x / LN2_HI)
    r = (x - n * LN2_HI) - n * LN2_LO
    term = tf.ones_like(x)
    total = tf.ones_like(x)
    for k in range(1, EXP_TERMS):
        term = term * r / float(k)
        total = total + term
    power = tf.bitcast(tf.bitwise.left_shift(tf.cast(n, tf.int64) + 1023, 52), tf.float64)
    return total * power


def _random_window(height: Any, width: Any, u: Any, options: DecodeOptions) -> Any:
    """:func:`~tfrecordkit.sampling.random_crop_box`: ``[5]`` int64 (one image of
    :func:`_random_windows`)."""
    return _random_windows(tf.reshape(height, [1]), tf.reshape(width, [1]), u[None],
                           options)[0]


def _center_window(height: Any, width: Any, options: DecodeOptions) -> Any:
    """:func:`~tfrecordkit.sampling.center_crop_box`: ``[4]`` int64."""
    assert options.image_size is not None
    size, fraction = options.image_size, options.crop_fraction
    aspect = size[1] / size[0]
    h64, w64 = tf.cast(height, tf.float64), tf.cast(width, tf.float64)
    full_h = tf.minimum(h64, w64 / aspect)
    h = tf.minimum(tf.maximum(tf.round(full_h * fraction), 1.0), h64)
    w = tf.minimum(tf.maximum(tf.round(full_h * aspect * fraction), 1.0), w64)
    h_i, w_i = tf.cast(h, tf.int64), tf.cast(w, tf.int64)
    return tf.stack([(tf.cast(height, tf.int64) - h_i) // 2,
                     (tf.cast(width, tf.int64) - w_i) // 2, h_i, w_i])


def _random_windows(heights: Any, widths: Any, u: Any, options: DecodeOptions) -> Any:
    """:func:`_random_window` of ``[n]`` images at once, ``u`` ``[n, 41]``: ``[n, 4]`` int64
    (the same operations elementwise, a few ops for a whole batch)."""
    scale, ratio = options.crop_scale, options.crop_ratio
    h64, w64 = tf.cast(heights, tf.float64), tf.cast(widths, tf.float64)
    tries = tf.reshape(u[:, : 4 * CROP_TRIES], [-1, CROP_TRIES, 4])
    area = tf.cast(heights * widths, tf.float64)[:, None]
    low, high = math.log(ratio[0]), math.log(ratio[1])
    target = area * (scale[0] + (scale[1] - scale[0]) * tries[:, :, 0])
    aspect = _exp(low + (high - low) * tries[:, :, 1])
    w = tf.round(tf.sqrt(target * aspect))
    h = tf.round(tf.sqrt(target / aspect))
    fits = (w > 0) & (w <= w64[:, None]) & (h > 0) & (h <= h64[:, None])
    first = tf.argmax(tf.cast(fits, tf.int32), axis=1, output_type=tf.int32)

    def chosen(values: Any) -> Any:  # each image's value at its first fitting try
        return tf.gather(values, first, axis=1, batch_dims=1)

    h_first, w_first = chosen(h), chosen(w)
    top = tf.floor(chosen(tries[:, :, 2]) * (h64 - h_first + 1.0))
    left = tf.floor(chosen(tries[:, :, 3]) * (w64 - w_first + 1.0))
    tried = tf.cast(tf.stack([top, left, h_first, w_first], axis=1), tf.int64)
    in_ratio = w64 / tf.maximum(h64, 1.0)
    narrow, wide = in_ratio < min(ratio), in_ratio > max(ratio)
    fw = tf.where(narrow, w64, tf.where(wide, tf.round(h64 * max(ratio)), w64))
    fh = tf.where(narrow, tf.round(w64 / min(ratio)), h64)
    fh = tf.minimum(tf.maximum(fh, 1.0), h64)
    fw = tf.minimum(tf.maximum(fw, 1.0), w64)
    fh_i, fw_i = tf.cast(fh, tf.int64), tf.cast(fw, tf.int64)
    fallback = tf.stack([(tf.cast(heights, tf.int64) - fh_i) // 2,
                         (tf.cast(widths, tf.int64) - fw_i) // 2, fh_i, fw_i], axis=1)
    return tf.where(tf.reduce_any(fits, axis=1)[:, None], tried, fallback)


def random_windows(heights: Any, widths: Any, keys: Any, seed: int, options: DecodeOptions
                   ) -> tuple[Any, Any]:
    """:func:`window_of` of ``[n]`` records with a random crop, at once: windows ``[n, 4]``
    and flips ``[n]`` from the images' sizes and the records' crop keys (``[n, 2]``; the
    per-record ops cost ~0.7 ms an image in a tf.data map; here a few ops serve a batch)."""
    u = _draws(seed, keys[:, 0], keys[:, 1])
    windows = _random_windows(tf.cast(heights, tf.int64), tf.cast(widths, tf.int64), u,
                              options)
    flips = tf.logical_and(tf.constant(options.flip), u[:, CROP_DRAWS - 1] < 0.5)
    return windows, flips


def jpeg_windows(images: Any, keys: Any, seed: int, options: DecodeOptions, *,
                 any_format: bool) -> tuple[Any, Any, Any]:
    """A batch of encoded images' ``[n, 2]`` sizes (from their JPEG headers; ``[1, 1]`` for
    a non-JPEG where ``any_format``), random windows ``[n, 4]`` and flips ``[n]``, for the
    records' crop keys ``[n, 2]``: one compiled op where it is built, else TensorFlow ops
    (the JPEG sizes one image at a time, then :func:`random_windows`)."""
    op = crop_windows_op()
    if op is not None:
        scale, ratio = options.crop_scale, options.crop_ratio
        params = tf.constant([scale[0], scale[1], math.log(ratio[0]), math.log(ratio[1]),
                              min(ratio), max(ratio), float(options.flip), float(any_format)],
                             tf.float64)
        return op(images, keys, tf.constant(seed, tf.int64), params)  # type: ignore[no-any-return]
    if any_format:
        size = tf.map_fn(lambda d: tf.cond(
            tf.io.is_jpeg(d),
            lambda: tf.io.extract_jpeg_shape(d, output_type=tf.int64)[:2],
            lambda: tf.ones([2], tf.int64)), images,
            fn_output_signature=tf.TensorSpec([2], tf.int64))
    else:
        size = tf.map_fn(lambda d: tf.io.extract_jpeg_shape(d, output_type=tf.int64)[:2],
                         images, fn_output_signature=tf.TensorSpec([2], tf.int64))
    windows, flips = random_windows(size[:, 0], size[:, 1], keys, seed, options)
    return size, windows, flips


def window_of(height: Any, width: Any, key: Any, seed: int, options: DecodeOptions
              ) -> tuple[Any, Any]:
    """A record's window (``[4]`` int64: top, left, height, width) and flip, in-graph, from its
    crop key (``[epoch, record id]``): what the TF-free readers' pure functions give, no
    Python call per record."""
    height, width = tf.cast(height, tf.int64), tf.cast(width, tf.int64)
    u = _draws(seed, key[0], key[1])
    if options.crop == "random":
        window = _random_window(height, width, u, options)
    elif options.crop == "center":
        window = _center_window(height, width, options)
    else:
        window = tf.stack([tf.constant(0, tf.int64), tf.constant(0, tf.int64), height, width])
    flip = tf.logical_and(tf.constant(options.flip), u[CROP_DRAWS - 1] < 0.5)
    return window, flip


def crop_window(image: Any, key: Any, seed: int, options: DecodeOptions
                ) -> tuple[Any, Any, Any]:
    """``image`` (``[h, w, c]`` uint8) cut to the record's window, whether to flip it, and
    the window (``[4]`` int64: top, left, height, width)."""
    shape = tf.shape(image, out_type=tf.int64)
    box, flip = window_of(shape[0], shape[1], key, seed, options)
    window = image[box[0] : box[0] + box[2], box[1] : box[1] + box[3]]
    return window, flip, box
