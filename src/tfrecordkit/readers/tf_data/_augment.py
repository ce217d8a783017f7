"""Augmentations for tf.data pipelines: functions from example dict to example dict."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tensorflow as tf

from tfrecordkit.readers.tf_data._ops import (
    Example,
)

__all__ = ["Augment", "random_brightness", "random_crop", "random_flip"]

Augment = Callable[[Example], Example] | Sequence[Callable[[Example], Example]]
"""An augmentation: a function from example dict to example dict, or a list of them."""


# -- augmentation ----------------------------------------------------------------------------


def random_flip(feature: str = "image", seed: int | None = None) -> Callable[[Example], Example]:
    """Augmentation: flip the image left-right with probability 1/2."""
    def augment(example: Example) -> Example:
        return {**example, feature: tf.image.random_flip_left_right(example[feature], seed=seed)}
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
                seed: int | None = None) -> Callable[[Example], Example]:
    """Augmentation: a random ``(height, width)`` crop (images must be at least that big)."""
    def augment(example: Example) -> Example:
        image = example[feature]
        crop = tf.image.random_crop(image, [size[0], size[1], tf.shape(image)[2]], seed=seed)
        return {**example, feature: crop}
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
