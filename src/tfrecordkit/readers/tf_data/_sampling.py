"""Class-balanced P×K and triplet batches as tf.data pipelines, from the same samplers as the
TF-free loaders (same batches for the same seed), with exact resume."""

from __future__ import annotations

import copy
import dataclasses
import math
import operator
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tfrecordkit.errors import DatasetError, OptionError, StateError
from tfrecordkit.format import Storage
from tfrecordkit.readers import CLASS_ID, CLASS_POSITION, RECORD_ID
from tfrecordkit.readers._decoding import DecodeOptions
from tfrecordkit.readers._layout import BatchLayout, stored_layout, stored_specs
from tfrecordkit.readers._modes import PK, ReadOptions, Triplets, refuse_untaken
from tfrecordkit.readers._partition import Partition
from tfrecordkit.readers._read_plan import plan_read
from tfrecordkit.readers.tf_data._batching import (
    _DecodePlan,
    _finish,
    _no_label_hint,
    _parse_and_decode,
    _shard_entries,
    _shard_label,
    _supervised,
    _with_shard_label,
)
from tfrecordkit.readers.tf_data._crop import EpochCounter, keyed
from tfrecordkit.readers.tf_data._errors import name_errors
from tfrecordkit.readers.tf_data._exit import exit_safe
from tfrecordkit.readers.tf_data._graph import graph_only
from tfrecordkit.readers.tf_data._kernels import frame_reader
from tfrecordkit.readers.tf_data._ops import (
    AUTOTUNE,
    Example,
    feature_description,
)
from tfrecordkit.sampling import MAX_EPOCH, state_int
from tfrecordkit.schema import (
    ClassLabel,
    Schema,
)
from tfrecordkit.store import MANIFEST_NAME, Manifest, is_dataset_dir

__all__ = ["pk_dataset", "triplet_dataset"]



# -- metric learning -------------------------------------------------------------------------


def _sampling_context(path: str | os.PathLike[str], split: str, options: DecodeOptions,
                      storage: Storage, *, schema: Schema | None
                      ) -> tuple[Manifest, Schema, list[str]]:
    if not is_dataset_dir(path, storage):
        raise DatasetError(f"{os.fspath(path)}: class-balanced sampling needs a dataset "
                           f"directory with {MANIFEST_NAME}")
    read = plan_read(path, split, schema=schema, storage=storage)
    manifest, schema = read.manifest, read.schema
    assert manifest is not None and schema is not None  # a dataset directory has both
    names = list(options.features) if options.features is not None else schema.user_features
    if manifest.label_feature is not None and manifest.label_feature not in names:
        names.append(manifest.label_feature)  # batches always carry their labels
    # The names every reader gives for these options (provenance adds each record's input).
    names = BatchLayout.of(schema, dataclasses.replace(options, features=tuple(names))).names
    return manifest, schema, names


def _sampling_plan(schema: Schema, names: list[str], description: dict[str, Any],
                   options: DecodeOptions) -> _DecodePlan:
    """How P×K and triplet batches decode: in stored order, the one batch layout, each
    record's class id passed through as ``__class``."""
    options = dataclasses.replace(options, features=tuple(names))
    layout = BatchLayout.of(schema, options)
    stored = stored_layout(stored_specs(schema, names), options.padding)
    return _DecodePlan(description, {n: schema[n] for n in names}, layout, options,
                       options.augment, True, stored, passthrough=(CLASS_ID,))


def _class_entries(schema: Schema, names: list[str], description: dict[str, Any],
                   class_names: Sequence[str]) -> list[bytes]:
    """Per class id, what its records get appended: the class id as ``__class`` (every
    sampled batch carries it, as in the other readers), and the label taken from the shard
    where the features read one; their parsing specs are added to ``description``."""
    description[CLASS_ID] = tf.io.FixedLenFeature([], tf.int64)
    ids = ClassLabel(list(class_names))
    classes = range(len(class_names))
    entries = [ids.shard_entry(CLASS_ID, c) for c in classes]
    shard_label = _shard_label(schema, names, description)
    if shard_label:
        entries = [e + s for e, s in zip(entries, _shard_entries(schema, shard_label, classes),
                                         strict=True)]
    return entries


def _step_number(state: Any) -> int:
    """An integer step: a Python or NumPy int, or an integer tensor / variable (such as
    ``optimizer.iterations``); never a bool, float or string."""
    if not isinstance(state, bool | np.bool_):
        try:
            return operator.index(state)
        except TypeError:
            dtype = getattr(state, "dtype", None)
            if dtype is not None and getattr(dtype, "is_integer", False):
                return int(state)
    raise StateError("state", f"must be a global step >= 0 (an int) or a state_dict(); "
                              f"got {type(state).__name__} {state!r:.40}")


def _first_and_count(state: int | Mapping[str, Any], steps: int, repeat: bool,
                  sampler: Any) -> tuple[int, int | None]:
    """The first global step and how many follow in its epoch (None: endlessly) for
    ``state``."""
    if isinstance(state, Mapping):
        probe = copy.copy(sampler)
        probe.load_state_dict(dict(state))  # refuses a malformed one, or other settings
        first = (state_int(state, "epoch", 0, MAX_EPOCH) * steps
                 + state_int(state, "step", 0, steps))
    else:
        first = _step_number(state)
        if not 0 <= first <= MAX_EPOCH * max(1, steps):
            raise StateError("state", f"{first} is not a global step >= 0")
    return first, None if repeat else steps - first % steps


def global_steps(first: int, per_epoch: int, counter: EpochCounter | None) -> Any:
    """Global steps from ``first``: endlessly (``counter`` None: ``repeat=True``), or one
    epoch per iteration of the dataset, the first from ``first``, the next ones whole
    (``counter`` counts the iterations; the iterator's checkpoint saves it, see
    :func:`~._errors.name_errors`)."""
    if counter is None:
        return tf.data.Dataset.range(first, 2**62)
    first_epoch = first // per_epoch

    def epoch_steps(done: Any) -> Any:  # done: the iterations before this one
        start = tf.where(done == 0, tf.constant(first, tf.int64),
                         (first_epoch + done) * per_epoch)
        return tf.data.Dataset.range(start, (first_epoch + done + 1) * per_epoch)

    # The iteration's number is flat_map's element: a restored iterator rebuilds its steps
    # from the number it saved, and counts no iteration more.
    return counter.iterations().flat_map(graph_only(epoch_steps))


def checkpointable(ds: Any, counter: EpochCounter | None) -> Any:
    """``ds`` whose iterators checkpoint with an epoch counter read in the graph (their
    checkpoint saves and restores it itself, see :func:`~._errors.name_errors`)."""
    if counter is None:
        return ds
    options = tf.data.Options()
    options.experimental_external_state_policy = (
        tf.data.experimental.ExternalStatePolicy.IGNORE)
    return ds.with_options(options)


def _step_dataset(steps: Any, positions_of: Callable[[int], np.ndarray], *, index: Any,
                  fetcher: Any, entries: list[bytes], size: int) -> Any:
    """``steps`` (a dataset of global step numbers, see :func:`global_steps`) mapped to their
    serialized records, each with its class's entries appended, and the records' positions
    in ``index`` (``{"records", "__id"}``): a pure function of the step, so
    tf.train.Checkpoint can save and restore the iterator. Local uncompressed files are read
    by the compiled frame reader (a Python call gives the locations); otherwise the Python
    call reads the records."""
    class_of = np.repeat(index.classes, index.counts)
    frames = frame_reader(index.files, fetcher.storage, index.restarts, fetcher.stamps)
    if frames is None:
        def fetch(g: np.int64) -> tuple[np.ndarray, np.ndarray]:
            positions = np.asarray(positions_of(int(g)), np.int64)
            return (_with_shard_label(fetcher.fetch(positions), class_of[positions], entries),
                    positions)

        def read(g: Any) -> dict[str, Any]:
            records, ids = tf.numpy_function(exit_safe(fetch), [g], (tf.string, tf.int64),
                                             stateful=False)
            return {"records": tf.ensure_shape(records, [size]),
                    RECORD_ID: tf.ensure_shape(ids, [size])}

        return steps.map(graph_only(read))
    table = tf.constant(entries)

    def locate(g: np.int64) -> tuple[np.ndarray, ...]:
        positions = np.asarray(positions_of(int(g)), np.int64)
        return (index.shard[positions].astype(np.int32, copy=False), index.offset[positions],
                index.length[positions], positions, class_of[positions].astype(np.int64))

    def read_frames(g: Any) -> dict[str, Any]:
        shards, offsets, lengths, ids, classes = (
            tf.ensure_shape(t, [size]) for t in tf.numpy_function(
                exit_safe(locate), [g], (tf.int32, tf.int64, tf.int64, tf.int64, tf.int64),
                stateful=False))
        records = frames(shards, offsets, lengths)
        return {"records": tf.strings.join([records, tf.gather(table, classes)]),
                RECORD_ID: ids}

    return steps.map(graph_only(read_frames))


def _attach_state(ds: Any, sampler: Any, fetcher: Any, steps: int, first: int) -> Any:
    ds.sampler, ds.fetcher = sampler, fetcher
    ds.steps_per_epoch, ds.start = steps, first

    def state_at(step: int) -> dict[str, Any]:
        """The JSON state to resume at global step ``step`` (e.g. ``optimizer.iterations``)."""
        state = sampler.state_dict()
        state["epoch"], state["step"] = divmod(int(step), steps)
        return dict(state)

    ds.state_at = state_at
    return ds


def pk_dataset(path: str | os.PathLike[str], split: str, *, sampling: PK, seed: int,
               options: DecodeOptions, partition: Partition, state: int | Mapping[str, Any],
               repeat: bool, reading: ReadOptions) -> Any:
    """``load_tf_dataset`` with ``sampling=PK(p, k)``: class-balanced batches of P classes ×
    K examples, class-major, drawn by :class:`~tfrecordkit.sampling.PKSampler`; records read
    by offset (at most ``max_open_files`` open), parsed as a batch and decoded as
    ``load_tf_dataset`` does. Each input pipeline of a ``partition`` gets other classes
    every step.

    The batch at global step ``g`` (step ``g % ds.steps_per_epoch`` of epoch
    ``g // ds.steps_per_epoch``) is a pure function of the seed and ``g``: the dataset holds
    no hidden state, ``tf.train.Checkpoint(iterator=it)`` saves and restores an iterator
    exactly, and ``state`` (a global step such as ``optimizer.iterations``, or
    ``ds.state_at(step)``, JSON) resumes anywhere. Without ``repeat`` the dataset is the rest
    of ``state``'s epoch; with it, every later epoch follows.
    """
    from tfrecordkit.sampling import ClassIndex, PKSampler
    from tfrecordkit.store import RecordFetcher

    _refuse_keyed(options, reading)
    storage = Storage.of(path, reading.storage_options)
    manifest, schema, names = _sampling_context(path, split, options, storage,
                                                schema=reading.schema)
    index = ClassIndex.from_dataset(path, split, manifest, storage=storage)
    sampler = PKSampler(index, sampling.classes_per_batch, sampling.examples_per_class,
                        seed=seed, exclude_small=sampling.exclude_small, epoch=sampling.epoch,
                        rank=partition.rank, world_size=partition.world_size)
    fetcher = RecordFetcher(index, reading.max_open_files, storage=storage)
    size = sampling.size
    steps = sampler.steps_per_epoch
    first, count = _first_and_count(state, steps, repeat, sampler)

    description = feature_description(schema, names)
    entries = _class_entries(schema, names, description, manifest.class_names)

    def positions_of(g: int) -> np.ndarray:
        return sampler.batch(*divmod(g, steps))

    counter = None if repeat else EpochCounter()
    ds = _step_dataset(global_steps(first, steps, counter), positions_of, index=index,
                       fetcher=fetcher, entries=entries, size=size)
    plan = _sampling_plan(schema, names, description, options)
    ds = _parse_and_decode(ds, plan, size, drop_remainder=True)
    # Which of the P classes each record belongs to, as every reader's PxK batches say.
    class_positions = tf.constant(np.repeat(np.arange(sampling.classes_per_batch, dtype=np.int64),
                                            sampling.examples_per_class))
    ds = ds.map(graph_only(lambda b: {**b, CLASS_POSITION: class_positions}),
                num_parallel_calls=AUTOTUNE, deterministic=True)
    if options.as_supervised:
        ds = _supervised(ds, manifest, schema, True)
    if count == steps:  # a whole epoch each iteration (resumed mid-epoch: the rest, first)
        ds = ds.apply(tf.data.experimental.assert_cardinality(count))
    ds = _finish(checkpointable(ds, counter), manifest, schema, True)
    return name_errors(_attach_state(ds, sampler, fetcher, steps, first), index.files,
                       lambda: None, epoch=counter)


def triplet_dataset(path: str | os.PathLike[str], split: str, *, batch_size: int,
                    sampling: Triplets, seed: int, options: DecodeOptions,
                    partition: Partition, state: int | Mapping[str, Any], repeat: bool,
                    reading: ReadOptions) -> Any:
    """``load_tf_dataset`` with ``sampling=Triplets()``: batches of ``{"anchor", "positive",
    "negative"}`` examples, every anchor once per epoch (see
    :class:`~tfrecordkit.sampling.TripletSampler`). Each part keeps its label feature unless
    ``Triplets(with_labels=False)``; ``augment`` runs on each part; ``as_supervised`` gives
    ``((anchor, positive, negative), anchor_label)``. A step is a batch of ``batch_size``
    triplets, as in every reader (``ds.steps_per_epoch`` of them an epoch, the last the
    rest); as with P×K, step ``g`` is a pure function of the seed: ``state`` (a global step,
    a NumPy or PyTorch loader's state, or ``ds.state_at(n)``) resumes anywhere; without
    ``repeat`` the dataset is the rest of ``state``'s epoch.
    """
    from tfrecordkit.sampling import ClassIndex, TripletSampler
    from tfrecordkit.store import RecordFetcher

    _refuse_keyed(options, reading)
    batch_size = partition.per_rank(batch_size)  # this pipeline's share of the global batch
    storage = Storage.of(path, reading.storage_options)
    manifest, schema, names = _sampling_context(path, split, options, storage,
                                                schema=reading.schema)
    label, as_supervised = manifest.label_feature, options.as_supervised
    if as_supervised and label is None:
        raise DatasetError(_no_label_hint(schema))
    if not sampling.with_labels and not as_supervised and label in names and (
            options.features is None or label not in options.features):
        names.remove(label)
    index = ClassIndex.from_dataset(path, split, manifest, storage=storage)
    sampler = TripletSampler(index, seed=seed, rank=partition.rank,
                             world_size=partition.world_size)
    fetcher = RecordFetcher(index, reading.max_open_files, storage=storage)
    # A step is a batch, as in every reader: every rank takes as many triplets as the first
    # (one short wraps to its epoch's start), ``batch_size`` a step, the last one the rest.
    per_rank = math.ceil(sampler.total_anchors / partition.world_size)
    steps = math.ceil(per_rank / batch_size)
    first, count = _first_and_count(state, steps, repeat, sampler)
    cache: dict[int, np.ndarray] = {}
    description = feature_description(schema, names)
    entries = _class_entries(schema, names, description, manifest.class_names)

    def positions_of(t: int) -> np.ndarray:  # t: a triplet number, epoch * per_rank + i
        epoch, i = divmod(t, per_rank)
        if epoch not in cache:  # an epoch's triplets, drawn once (a pure function of it)
            triplets = sampler.triplets(epoch)
            cache.clear()
            cache[epoch] = np.concatenate([triplets, triplets[: per_rank - len(triplets)]])
        return np.asarray(cache[epoch][i], np.int64)

    plan = _sampling_plan(schema, names, description, options)
    roles = ("anchor", "positive", "negative")

    def as_parts(e: Example) -> Any:
        if as_supervised:
            assert label is not None
            parts = [{k: v[i] for k, v in e.items() if k not in (label, CLASS_ID, RECORD_ID)}
                     for i in range(3)]
            inputs = tuple(next(iter(p.values())) if len(p) == 1 else p for p in parts)
            return inputs, e[label][0]
        return {role: tf.nest.map_structure(lambda t, i=i: t[i], e)
                for i, role in enumerate(roles)}

    first_epoch, first_step = divmod(first, steps)

    def epoch_batches(epoch: Any) -> Any:
        """Epoch ``epoch``'s steps as batches (from ``first``'s step in its own epoch)."""
        start = epoch * per_rank + tf.where(epoch == first_epoch,
                                            tf.constant(first_step * batch_size, tf.int64),
                                            tf.constant(0, tf.int64))
        triplets = _step_dataset(tf.data.Dataset.range(start, (epoch + 1) * per_rank),
                                 positions_of, index=index, fetcher=fetcher, entries=entries,
                                 size=3)
        parts = _parse_and_decode(triplets, plan, 3, drop_remainder=True)  # a triplet each
        parts = parts.map(graph_only(as_parts), num_parallel_calls=AUTOTUNE,
                          deterministic=True)
        return (parts.ragged_batch(batch_size) if options.padding == "ragged"
                else parts.padded_batch(batch_size))

    # Batched epoch by epoch, so a step never takes triplets of two epochs.
    counter = None if repeat else EpochCounter()
    epochs = (tf.data.Dataset.range(first_epoch, MAX_EPOCH) if counter is None else
              counter.iterations().map(graph_only(lambda done: first_epoch + done)))
    ds = epochs.flat_map(graph_only(epoch_batches))
    if count == steps:  # a whole epoch each iteration (resumed mid-epoch: the rest, first)
        ds = ds.apply(tf.data.experimental.assert_cardinality(count))
    ds = _finish(checkpointable(ds, counter), manifest, schema, True)
    return name_errors(_attach_state(ds, sampler, fetcher, steps, first), index.files,
                       lambda: None, epoch=counter)


def _refuse_keyed(options: DecodeOptions, reading: ReadOptions) -> None:
    """What sampled tf.data batches cannot do: random crops and flips need each record's
    tag, which they lack; records are read by offset, with no cache or thread count."""
    if keyed(options) or options.fast_resize:
        raise OptionError("P×K and triplet datasets in tf.data take neither random crops and "
                          "flips nor fast_resize: use crop='center' here, or the NumPy and "
                          "PyTorch loaders, which key them by (seed, step, record)")
    refuse_untaken("tf.data's P×K and triplet datasets",
                   ("DecodeOptions(augment=)", "DecodeOptions(as_supervised=True)",
                    "ReadOptions(max_open_files=)"), options=options, read=reading)
