"""Losses for metric learning on tf.data batches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf

__all__ = ["batch_hard_triplet_loss"]



def batch_hard_triplet_loss(margin: float = 0.5, squared: bool = False) -> Callable[..., Any]:
    """The batch-hard triplet loss (Hermans et al., 2017) for ``model.compile(loss=...)``.

    ``y_true`` holds class labels, ``y_pred`` embeddings. For each anchor: the farthest positive
    and the closest negative in the batch, ``max(d_pos - d_neg + margin, 0)``, averaged over
    anchors that have both. NaN-safe: distances are clamped before the square root, and a
    batch with no valid anchor gives 0 (not 0/0).
    """
    def loss(y_true: Any, y_pred: Any) -> Any:
        labels = tf.reshape(tf.cast(y_true, tf.int64), [-1])
        embeddings = tf.cast(y_pred, tf.float32)
        dot = tf.matmul(embeddings, embeddings, transpose_b=True)
        norms = tf.linalg.diag_part(dot)
        d2 = tf.maximum(norms[:, None] - 2.0 * dot + norms[None, :], 0.0)
        if squared:
            distances = d2
        else:
            # sqrt has an infinite gradient at 0: add a tiny epsilon where the distance is 0.
            zero = tf.cast(tf.equal(d2, 0.0), tf.float32)
            distances = tf.sqrt(d2 + zero * 1e-16) * (1.0 - zero)
        same = tf.equal(labels[:, None], labels[None, :])
        eye = tf.eye(tf.shape(labels)[0], dtype=tf.bool)
        positive = tf.logical_and(same, tf.logical_not(eye))
        negative = tf.logical_not(same)
        hardest_pos = tf.reduce_max(tf.where(positive, distances, 0.0), axis=1)
        big = tf.reduce_max(distances) + 1.0
        hardest_neg = tf.reduce_min(tf.where(negative, distances, big), axis=1)
        valid = tf.logical_and(tf.reduce_any(positive, axis=1), tf.reduce_any(negative, axis=1))
        per_anchor = tf.maximum(hardest_pos - hardest_neg + margin, 0.0)
        per_anchor = tf.where(valid, per_anchor, 0.0)
        count = tf.reduce_sum(tf.cast(valid, tf.float32))
        return tf.math.divide_no_nan(tf.reduce_sum(per_anchor), count)

    return loss


