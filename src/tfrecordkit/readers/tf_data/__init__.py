"""Datasets written by tfrecordkit (or anyone) as ``tf.data`` pipelines; no hand-written parsing.

The pipeline, every stage AUTOTUNEd::

    shard files (manifest) → shuffle files (seeded, per epoch) → parallel interleave
    → shuffle records → batch → tf.io.parse_example on the whole batch
    → decode (vectorised; or per example in a parallel map for images, audio, variable
      tensors and augmentation) → padded or ragged batch → prefetch

Parsing specs come from the manifest's schema; files tfrecordkit did not write get a schema
inferred from a sample of their records.

A package: ``_ops`` (in-graph decoding), ``_batching`` (the layout's structure), ``_load``
(``load_tf_dataset``), ``_pipeline`` (in order, shuffled), ``_sampling`` (P×K, triplets),
``_augment``, ``_losses``.
"""

from tfrecordkit.errors import MissingDependencyError

try:
    import tensorflow  # noqa: F401
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("tensorflow", "tf", "tfrecordkit.readers.tf_data") from err

from tfrecordkit.readers.tf_data._augment import (
    Augment,
    random_brightness,
    random_crop,
    random_flip,
)
from tfrecordkit.readers.tf_data._load import load_tf_dataset, steps_dataset
from tfrecordkit.readers.tf_data._losses import batch_hard_triplet_loss
from tfrecordkit.readers.tf_data._ops import AUTOTUNE, decode_image_tensor, feature_description
from tfrecordkit.readers.tf_data._pipeline import shuffle_buffer_size

__all__ = [
    "AUTOTUNE",
    "Augment",
    "batch_hard_triplet_loss",
    "decode_image_tensor",
    "feature_description",
    "load_tf_dataset",
    "random_brightness",
    "random_crop",
    "random_flip",
    "shuffle_buffer_size",
    "steps_dataset",
]
