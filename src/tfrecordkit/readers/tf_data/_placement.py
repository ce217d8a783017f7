"""The in-graph twin of :func:`tfrecordkit.codecs.place_boxes`: boxes moved as their image was
cropped, resized or letterboxed and flipped, with the same float64 arithmetic (the same box
values as the TF-free readers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from tfrecordkit.codecs import BOX_MIN_AREA, BOX_MIN_SIZE

__all__ = ["TFPlacement", "pad_window_tf", "place_boxes_tf"]


@dataclass(frozen=True)
class TFPlacement:
    """:class:`~tfrecordkit.codecs.Placement` as tensors: the decoded ``height``, ``width``,
    the ``window`` (``[4]`` int64: top, left, height, width), the output ``size``, the
    letterbox ``pad`` (``[4]`` int64) or None, ``flip`` (a bool tensor) and ``cropped``."""

    height: Any
    width: Any
    window: Any
    size: tuple[int, int]
    pad: Any = None
    flip: Any = None
    cropped: bool = False


def pad_window_tf(height: Any, width: Any, size: tuple[int, int]) -> Any:
    """Where ``tf.image.resize_with_pad`` puts a ``height × width`` image inside ``size``:
    ``[top, left, height, width]`` int64, as :func:`~tfrecordkit.codecs.pad_window` finds it
    (float32 arithmetic, as TensorFlow's)."""
    target_h, target_w = tf.constant(size[0], tf.float32), tf.constant(size[1], tf.float32)
    h, w = tf.cast(height, tf.float32), tf.cast(width, tf.float32)
    ratio = tf.maximum(w / target_w, h / target_h)
    scaled_h, scaled_w = h / ratio, w / ratio
    top = tf.maximum(0.0, tf.floor((target_h - scaled_h) / 2.0))
    left = tf.maximum(0.0, tf.floor((target_w - scaled_w) / 2.0))
    return tf.cast(tf.stack([top, left, tf.floor(scaled_h), tf.floor(scaled_w)]), tf.int64)


def place_boxes_tf(value: dict[str, Any], placement: TFPlacement, *,
                   min_size: float = BOX_MIN_SIZE, min_area: float = BOX_MIN_AREA
                   ) -> dict[str, Any]:
    """One example's ``{"boxes": [n, 4], "labels": [n], ...}`` moved with its image (see
    :func:`~tfrecordkit.codecs.place_objects` for the rule: the rows of every part but the
    boxes dropped with the boxes a crop drops)."""
    b = tf.cast(tf.reshape(value["boxes"], [-1, 4]), tf.float64)
    window = tf.cast(placement.window, tf.float64)
    top, left, win_h, win_w = window[0], window[1], window[2], window[3]
    x = (tf.stack([b[:, 0], b[:, 2]], axis=1) * tf.cast(placement.width, tf.float64)
         - left) / win_w
    y = (tf.stack([b[:, 1], b[:, 3]], axis=1) * tf.cast(placement.height, tf.float64)
         - top) / win_h
    if placement.cropped:
        x, y = tf.clip_by_value(x, 0.0, 1.0), tf.clip_by_value(y, 0.0, 1.0)
    out_h = tf.constant(float(placement.size[0]), tf.float64)
    out_w = tf.constant(float(placement.size[1]), tf.float64)
    if placement.pad is not None:
        pad = tf.cast(placement.pad, tf.float64)
        x = (pad[1] + x * pad[3]) / out_w
        y = (pad[0] + y * pad[2]) / out_h
    if placement.flip is not None:  # both sides computed (a select, not a cond: fewer ops)
        x = tf.where(placement.flip, 1.0 - tf.reverse(x, axis=[1]), x)
    moved = tf.stack([x[:, 0], y[:, 0], x[:, 1], y[:, 1]], axis=1)
    rows = {key: part for key, part in value.items() if key != "boxes"}
    if placement.cropped:
        wide, high = (moved[:, 2] - moved[:, 0]) * out_w, (moved[:, 3] - moved[:, 1]) * out_h
        keep = tf.logical_and(tf.logical_and(wide >= min_size, high >= min_size),
                              wide * high >= min_area)
        kept = tf.reshape(tf.where(keep), [-1])  # the rows kept, found once for every part
        moved = tf.gather(moved, kept)
        rows = {key: tf.gather(part, kept) for key, part in rows.items()}
    return {"boxes": tf.cast(moved, tf.float32), **rows}
