"""``load_tf_dataset``: one entry point for every sampling mode (in order, shuffled, P×K,
triplets), each built by its own module."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from tfrecordkit.errors import OptionError
from tfrecordkit.readers._decoding import DecodeOptions, decode_options
from tfrecordkit.readers._modes import (
    PK,
    ReadOptions,
    Sampling,
    Triplets,
    batch_size_of,
    class_dataset,
    refuse_moved,
    sampling_of,
    seed_of,
)
from tfrecordkit.readers._partition import Partition
from tfrecordkit.readers.tf_data._pipeline import records_dataset
from tfrecordkit.readers.tf_data._sampling import pk_dataset, triplet_dataset

__all__ = ["load_tf_dataset"]


@refuse_moved("load_tf_dataset")
def load_tf_dataset(
    path: str | os.PathLike[str] | Sequence[str],
    split: str = "train",
    *,
    batch_size: int | None = None,
    sampling: Sampling | None = None,
    seed: int | None = 0,
    image_size: int | tuple[int, int] | None = None,
    options: DecodeOptions | None = None,
    partition: Partition | None = None,
    state: int | Mapping[str, Any] | None = None,
    repeat: bool = False,
    read: ReadOptions | None = None,
) -> Any:
    """A ``tf.data.Dataset`` of one split, parsed and decoded from its schema.

    Args:
        path: a dataset directory (with ``dataset.json``), or TFRecord files / globs that
            tfrecordkit did not write (their schema is inferred from a sample, or
            ``read.schema``). Local paths and ``gs://`` URLs are read by TensorFlow's own
            file reader; other URLs (``s3://``, ``http(s)://``, ``memory://``; ``gs://``
            with storage options) by tfrecordkit's reader through fsspec, feeding tf.data.
        split: which split.
        batch_size: records per global batch (None: unbatched examples), as in every
            reader: with a ``partition`` of ``world_size`` pipelines each one's batches hold
            ``batch_size / world_size`` (what ``ctx.get_per_replica_batch_size(batch_size)``
            gives; a batch that does not divide is refused); triplets per global batch with
            :class:`~tfrecordkit.Triplets`; left out with :class:`~tfrecordkit.PK` (P×K
            per pipeline).
        sampling: :class:`~tfrecordkit.Shuffled` (default: files shuffled every epoch and
            records through a buffer sized from the record size, see
            :func:`shuffle_buffer_size`; ``Shuffled(buffer=n)`` sets it),
            :class:`~tfrecordkit.InOrder` (the split's stored order),
            :class:`~tfrecordkit.PK` (class-balanced batches) or
            :class:`~tfrecordkit.Triplets`.
        seed: the same seed gives the same order every run (parallel steps keep their
            order, as tf.data does by default). None: a new order each run, parallel steps
            free to reorder records for speed (P×K and triplets: a fresh seed, or the one of
            a ``state_at`` state).
        image_size: resize images to ``(height, width)`` (an int: a square); the shortcut of
            ``options.image_size``.
        options: how records become values, the object every reader takes
            (:class:`~tfrecordkit.DecodeOptions`: features, decode, padding, float32 images,
            crops, ``augment`` — a function or list mapping an example dict, see
            :func:`random_flip` — and ``as_supervised`` for ``model.fit``...).
        partition: this input pipeline's share (``Partition.from_input_context(ctx)`` for a
            ``tf.distribute.InputContext``): by file when there are at least as many files as
            pipelines, else by record; P×K and triplets give each pipeline other classes.
        state: P×K and triplets: where to start, a global step (e.g.
            ``optimizer.iterations``) or ``ds.state_at(step)``. In order or shuffled, the
            position is the iterator's: save it with ``tf.train.Checkpoint``.
        repeat: repeat forever (cardinality becomes infinite); P×K and triplets continue
            with the next epochs.
        read: how files are read (:class:`~tfrecordkit.ReadOptions`: schema, storage
            options, ``cache`` of serialized records after the first epoch; P×K and
            triplets: ``max_open_files``).

    Returns:
        The dataset; it carries ``class_names`` and (for tfrecordkit datasets) ``manifest``;
        P×K and triplet datasets also ``steps_per_epoch`` and ``state_at(step)``.

    Raises:
        OptionError: an option tf.data cannot honour (named), rather than ignored.
        DatasetError: the manifest disagrees with the files (missing shard, wrong size,
            schema mismatch), before any training starts.
    """
    sampling = sampling_of(sampling)
    options = decode_options(options, image_size=image_size)
    partition = Partition.given(partition)
    reading = read or ReadOptions()
    if isinstance(sampling, PK | Triplets):
        if seed is None and state is not None and not isinstance(state, Mapping):
            raise OptionError("a global step resumes a seeded run: give the seed it ran with "
                              "(or resume from ds.state_at(step), which holds it)")
        chosen = seed_of(seed, state if isinstance(state, Mapping) else None)
        start = 0 if state is None else state
        if isinstance(sampling, PK):
            batch_size_of(sampling, batch_size)
            return pk_dataset(class_dataset(path, sampling), split, sampling=sampling,
                              seed=chosen, options=options, partition=partition,
                              state=start, repeat=repeat, reading=reading)
        if batch_size is None:
            raise OptionError("Triplets() needs batch_size (triplets per batch)")
        return triplet_dataset(class_dataset(path, sampling), split, batch_size=batch_size,
                               sampling=sampling, seed=chosen, options=options, partition=partition,
                               state=start, repeat=repeat, reading=reading)
    return records_dataset(path, split, batch_size=batch_size, sampling=sampling,
                           seed=None if seed is None else seed_of(seed),
                           options=options, partition=partition, repeat=repeat,
                           reading=reading, state=state)
