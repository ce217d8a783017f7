"""``load_tf_dataset``: one entry point for every sampling mode (in order, shuffled, P×K,
triplets), each built by its own module."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from tfrecordkit.errors import OptionError
from tfrecordkit.readers._decoding import DecodeOptions, decode_options
from tfrecordkit.readers._mix import Mix
from tfrecordkit.readers._modes import (
    PK,
    InOrder,
    ReadOptions,
    Sampling,
    Shuffled,
    Triplets,
    batch_size_of,
    class_dataset,
    implementation,
    refuse_moved,
    sampling_of,
    seed_of,
)
from tfrecordkit.readers._partition import Partition
from tfrecordkit.readers.tf_data._pipeline import records_dataset
from tfrecordkit.readers.tf_data._sampling import pk_dataset, triplet_dataset
from tfrecordkit.readers.tf_data._steps import ordered_dataset
from tfrecordkit.store import SplitArg, split_text

__all__ = ["load_tf_dataset"]


@refuse_moved("load_tf_dataset")
def load_tf_dataset(
    path: str | os.PathLike[str] | Sequence[str] | Mix,
    split: SplitArg = "train",
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
            ``read.schema``); URLs (``s3://``, ``gs://``, ``http(s)://``, ...) too; or a
            :class:`~tfrecordkit.Mix` of several, read as one by weight. Records
            are read by offset with tfrecordkit's CRC-checked reader, feeding tf.data (with
            ``Shuffled(buffer=n)``, local and ``gs://`` files by TensorFlow's own reader).
        split: which split, or a split expression read as one: ``"train+val"`` (or
            ``["train", "val"]``), ``"train[:10%]"``, ``"train[-1000:]"`` (TFDS's meaning:
            see :func:`~tfrecordkit.store.resolve_split`).
        batch_size: records per global batch (None: unbatched examples), as in every
            reader: with a ``partition`` of ``world_size`` pipelines each one's batches hold
            ``batch_size / world_size`` (what ``ctx.get_per_replica_batch_size(batch_size)``
            gives; a batch that does not divide is refused); triplets per global batch with
            :class:`~tfrecordkit.Triplets`; left out with :class:`~tfrecordkit.PK` (P×K
            per pipeline).
        sampling: :class:`~tfrecordkit.Shuffled` (default) or
            :class:`~tfrecordkit.InOrder`: the library's order, the batches every reader
            gives for the same seed, partition and batch size, each carrying ``"__id"``
            (and ``"__valid"`` unless ``drop_last``); each iteration of the dataset is the
            next epoch. ``Shuffled(buffer=n)``: TensorFlow's own shuffle buffer instead
            (files interleaved, records read in sequence; no ``state=``).
            :class:`~tfrecordkit.PK` (class-balanced batches) or
            :class:`~tfrecordkit.Triplets`.
        seed: the same seed gives the same batches every run, in every reader. None: a
            fresh seed (with a ``state_dict()`` state: the one it holds), parallel steps
            free to finish out of order.
        image_size: resize images to ``(height, width)`` (an int: a square); the shortcut of
            ``options.image_size``.
        options: how records become values, the object every reader takes
            (:class:`~tfrecordkit.DecodeOptions`: features, decode, padding, float32 images,
            crops, ``augment`` — a function or list mapping an example dict, see
            :func:`random_flip` — and ``as_supervised`` for ``model.fit``...).
        partition: this input pipeline's share (``Partition.from_input_context(ctx)`` for a
            ``tf.distribute.InputContext``): its part of every global batch, as in every
            reader; P×K and triplets give each pipeline other classes.
        state: where to start: a global step (e.g. ``optimizer.iterations``; with
            ``batch_size=None`` a record count), a loader's ``state_dict()`` (the NumPy and
            PyTorch loaders' too) or ``ds.state_at(step)``; the iterator itself checkpoints
            with ``tf.train.Checkpoint(iterator=...)``.
        repeat: repeat forever (cardinality becomes infinite), each epoch after the last.
        read: how files are read (:class:`~tfrecordkit.ReadOptions`: schema, storage
            options, ``max_open_files``; with ``Shuffled(buffer=n)``, ``cache`` of serialized
            records after the first epoch).

    Returns:
        The dataset; it carries ``class_names`` and (for tfrecordkit datasets) ``manifest``;
        all but ``Shuffled(buffer=n)`` also ``steps_per_epoch`` and ``state_at(step)``.

    Raises:
        OptionError: an option tf.data cannot honour (named), rather than ignored.
        DatasetError: the manifest disagrees with the files (missing shard, wrong size,
            schema mismatch), before any training starts.
    """
    sampling = sampling_of(sampling)
    options = decode_options(options, image_size=image_size)
    batch_size = batch_size_of(sampling, batch_size)
    return implementation(sampling.tf_dataset)(
        sampling, path, split_text(split), batch_size=batch_size, seed=seed, state=state,
        options=options, partition=Partition.given(partition), repeat=repeat,
        reading=read or ReadOptions())


def _class_seed(seed: int | None, state: int | Mapping[str, Any] | None) -> int:
    """The seed P×K and triplets run with (a global step resumes a seeded run).

    Raises:
        OptionError: a global step with no seed.
    """
    if seed is None and state is not None and not isinstance(state, Mapping):
        raise OptionError("a global step resumes a seeded run: give the seed it ran with "
                          "(or resume from ds.state_at(step), which holds it)")
    return seed_of(seed, state if isinstance(state, Mapping) else None)


def pk_tf(sampling: PK, path: Any, split: str, *, batch_size: int | None, seed: int | None,
          state: int | Mapping[str, Any] | None, options: DecodeOptions,
          partition: Partition, repeat: bool, reading: ReadOptions) -> Any:
    """:class:`PK`'s tf.data builder."""
    return pk_dataset(class_dataset(path, sampling), split, sampling=sampling,
                      seed=_class_seed(seed, state), options=options, partition=partition,
                      state=0 if state is None else state, repeat=repeat, reading=reading)


def triplets_tf(sampling: Triplets, path: Any, split: str, *, batch_size: int | None,
                seed: int | None, state: int | Mapping[str, Any] | None,
                options: DecodeOptions, partition: Partition, repeat: bool,
                reading: ReadOptions) -> Any:
    """:class:`Triplets`' tf.data builder."""
    assert batch_size is not None  # Triplets.batch_size_for refuses None
    return triplet_dataset(class_dataset(path, sampling), split, batch_size=batch_size,
                           sampling=sampling, seed=_class_seed(seed, state), options=options,
                           partition=partition, state=0 if state is None else state,
                           repeat=repeat, reading=reading)


def ordered_tf(sampling: InOrder | Shuffled, path: Any, split: str, *, batch_size: int | None,
               seed: int | None, state: int | Mapping[str, Any] | None,
               options: DecodeOptions, partition: Partition, repeat: bool,
               reading: ReadOptions) -> Any:
    """:class:`InOrder`'s and :class:`Shuffled`'s tf.data builder: the library's order by
    the step reader, or with ``Shuffled(buffer=n)`` TensorFlow's own shuffle."""
    if isinstance(sampling, Shuffled) and sampling.buffer is not None:
        if isinstance(path, Mix):
            raise OptionError("tk.Mix draws each position from a source by weight in the "
                              "library's order: Shuffled(buffer=n) would shuffle whole files "
                              "instead (leave buffer= out)")
        return records_dataset(path, split, batch_size=batch_size, sampling=sampling,
                               seed=None if seed is None else seed_of(seed),
                               options=options, partition=partition, repeat=repeat,
                               reading=reading, state=state)
    return steps_dataset(sampling, path, split, batch_size=batch_size, seed=seed, state=state,
                         options=options, partition=partition, repeat=repeat, reading=reading)


def steps_dataset(sampling: Sampling, path: Any, split: str, *, batch_size: int | None,
                  seed: int | None, state: int | Mapping[str, Any] | None,
                  options: DecodeOptions, partition: Partition, repeat: bool,
                  reading: ReadOptions) -> Any:
    """The step reader over ``sampling``'s own NumPy loader: each global step's records as
    that loader orders them, read by offset and decoded in-graph (the tf.data builder of
    any mode whose loader is a :class:`~tfrecordkit.readers.numpy_data.Loader`)."""
    if seed is None and state is not None and not isinstance(state, Mapping):
        raise OptionError("a global step resumes a seeded run: give the seed it ran with "
                          "(or resume from a state_dict(), which holds it)")
    return ordered_dataset(path, split, batch_size=batch_size, sampling=sampling,
                           seed=seed_of(seed, state if isinstance(state, Mapping) else None),
                           options=options, partition=partition, repeat=repeat,
                           reading=reading, state=state, deterministic=seed is not None)
