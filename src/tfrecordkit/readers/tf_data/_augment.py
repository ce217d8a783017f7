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
    return augment


def random_brightness(max_delta: float = 0.2, feature: str = "image",
                      seed: int | None = None) -> Callable[[Example], Example]:
    """Augmentation: shift brightness by up to ``max_delta`` (of 1.0), staying uint8."""
    def augment(example: Example) -> Example:
        image = tf.image.convert_image_dtype(example[feature], tf.float32)
        image = tf.clip_by_value(tf.image.random_brightness(image, max_delta, seed=seed), 0, 1)
        return {**example, feature: tf.image.convert_image_dtype(image, tf.uint8, saturate=True)}
    return augment


def random_crop(size: tuple[int, int], feature: str = "image",
                seed: int | None = None) -> Callable[[Example], Example]:
    """Augmentation: a random ``(height, width)`` crop (images must be at least that big)."""
    def augment(example: Example) -> Example:
        image = example[feature]
        crop = tf.image.random_crop(image, [size[0], size[1], tf.shape(image)[2]], seed=seed)
        return {**example, feature: crop}
    return augment


def _compose(augment: Augment) -> Callable[[Example], Example]:
    if callable(augment):
        return augment
    functions = list(augment)

    def composed(example: Example) -> Example:
        for function in functions:
            example = function(example)
        return example

    return composed
