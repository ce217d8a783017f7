"""Augmentations for tf.data pipelines: functions from example dict to example dict."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tensorflow as tf

from tfrecordkit.codecs import BOX_MIN_AREA, BOX_MIN_SIZE
from tfrecordkit.readers.tf_data._ops import (
    Example,
)
from tfrecordkit.readers.tf_data._placement import TFPlacement, place_boxes_tf

__all__ = ["Augment", "random_brightness", "random_crop", "random_flip"]

Augment = Callable[[Example], Example] | Sequence[Callable[[Example], Example]]
"""An augmentation: a function from example dict to example dict, or a list of them."""


# -- augmentation ----------------------------------------------------------------------------


def _boxes_of(example: Example) -> list[str]:
    """The example's boxes values (``{"boxes", "labels"}``, a ``Boxes`` feature's): they move
    with the image."""
    return [k for k, v in example.items()
            if isinstance(v, dict) and set(v) == {"boxes", "labels"}]


def random_flip(feature: str = "image", seed: int | None = None) -> Callable[[Example], Example]:
    """Augmentation: flip the image left-right with probability 1/2; the example's boxes (a
    ``Boxes`` feature's values) are mirrored with it."""
    def augment(example: Example) -> Example:
        image = example[feature]
        flip = tf.random.uniform([], seed=seed) < 0.5
        out = {**example, feature: tf.cond(flip, lambda: tf.image.flip_left_right(image),
                                           lambda: image)}
        for name in _boxes_of(example):
            window = tf.stack([0, 0, 1, 1])
            placement = TFPlacement(1, 1, window, (1, 1), flip=flip)
            out[name] = place_boxes_tf(example[name], placement)
        return out
    augment._tfrecordkit_graph_ready = True  # type: ignore[attr-defined]
    return augment


def random_brightness(max_delta: float = 0.2, feature: str = "image",
                      seed: int | None = None) -> Callable[[Example], Example]:
    """Augmentation: shift brightness by up to ``max_delta`` (of 1.0), staying uint8."""
    def augment(example: Example) -> Example:
        image = tf.image.convert_image_dtype(example[feature], tf.float32)
        image = tf.clip_by_value(tf.image.random_brightness(image, max_delta, seed=seed), 0, 1)
        return {**example, feature: tf.image.convert_image_dtype(image, tf.uint8, saturate=True)}
    augment._tfrecordkit_graph_ready = True  # type: ignore[attr-defined]
    return augment


def random_crop(size: tuple[int, int], feature: str = "image",
                seed: int | None = None, *, box_min_size: float = BOX_MIN_SIZE,
                box_min_area: float = BOX_MIN_AREA) -> Callable[[Example], Example]:
    """Augmentation: a random ``(height, width)`` crop (images must be at least that big).
    The example's boxes (a ``Boxes`` feature's values) follow: clipped to the window, and the
    ones left narrower or lower than ``box_min_size`` pixels, or smaller than
    ``box_min_area``, dropped with their labels (as ``DecodeOptions`` crops do)."""
    def augment(example: Example) -> Example:
        image = example[feature]
        shape = tf.shape(image, out_type=tf.int64)
        check = tf.debugging.assert_greater_equal(
            shape[:2], tf.constant(size, tf.int64),
            message=f"random_crop({size}): an image of {feature!r} is smaller than the crop")
        with tf.control_dependencies([check]):
            top = tf.random.uniform([], 0, shape[0] - size[0] + 1, tf.int64, seed=seed)
            left = tf.random.uniform([], 0, shape[1] - size[1] + 1, tf.int64,
                                     seed=None if seed is None else seed + 1)
        crop = tf.ensure_shape(image[top : top + size[0], left : left + size[1]],
                               [size[0], size[1], image.shape[2]])
        out = {**example, feature: crop}
        window = tf.stack([top, left, tf.constant(size[0], tf.int64),
                           tf.constant(size[1], tf.int64)])
        for name in _boxes_of(example):
            placement = TFPlacement(shape[0], shape[1], window, size, cropped=True)
            out[name] = place_boxes_tf(example[name], placement, min_size=box_min_size,
                                       min_area=box_min_area)
        return out
    augment._tfrecordkit_graph_ready = True  # type: ignore[attr-defined]
    return augment


def _compose(augment: Augment) -> Callable[[Example], Example]:
    """The augmentation as one function. Functions of the user's are converted by AutoGraph
    (they may branch on tensors), the library's own map functions are not (see
    ``_graph.graph_only``)."""
    functions = [_autograph(f) for f in ([augment] if callable(augment) else augment)]
    if len(functions) == 1:
        return functions[0]

    def composed(example: Example) -> Example:
        for function in functions:
            example = function(example)
        return example

    return composed


def _autograph(function: Callable[[Example], Example]) -> Callable[[Example], Example]:
    """``function`` converted by AutoGraph (Python ``if``/``for`` on tensors work), or as it
    is when its source can't be read (a builtin, a lambda typed at a prompt)."""
    if getattr(function, "_tfrecordkit_graph_ready", False):
        return function
    try:
        return tf.autograph.to_graph(function)  # type: ignore[no-any-return]
    except Exception:
        return function
