"""``load_tf_dataset`` in order or shuffled, in the library's own order: global step ``g`` →
this rank's record ids (what ``Loader.step_ids`` gives every TF-free loader) → the records,
read by offset → parsed and decoded in-graph. The
same batches as the NumPy and PyTorch loaders for the same seed, partition and batch size, and
each a pure function of the step: ``state=`` resumes anywhere."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tfrecordkit.errors import OptionError, StateError
from tfrecordkit.format import RecordSlices
from tfrecordkit.readers._decoding import DecodeOptions
from tfrecordkit.readers._examples import UNBATCHED_STEP, Examples, check_unbatched
from tfrecordkit.readers._keys import RECORD_ID, VALID
from tfrecordkit.readers._layout import BatchLayout, stored_layout, stored_specs
from tfrecordkit.readers._mix import Mix, MixPlan
from tfrecordkit.readers._modes import (
    InOrder,
    ReadOptions,
    Sampling,
    implementation,
    refuse_untaken,
)
from tfrecordkit.readers._partition import Partition
from tfrecordkit.readers.tf_data._batching import (
    FIRST_ID,
    FIRST_ID_MARKED,
    _DecodePlan,
    _finish,
    _shard_entries,
    _shard_label,
    _supervised,
)
from tfrecordkit.readers.tf_data._batching import (
    _parse_and_decode as parse_and_decode,
)
from tfrecordkit.readers.tf_data._crop import CROP_KEY, EpochCounter, crop_keys, keyed
from tfrecordkit.readers.tf_data._errors import name_errors
from tfrecordkit.readers.tf_data._exit import exit_safe
from tfrecordkit.readers.tf_data._graph import graph_only
from tfrecordkit.readers.tf_data._kernels import frame_reader, stamp_checked
from tfrecordkit.readers.tf_data._ops import AUTOTUNE, TF_COMPRESSION, feature_description
from tfrecordkit.readers.tf_data._sampling import _step_number, checkpointable, global_steps
from tfrecordkit.store import SplitRecords

__all__ = ["ordered_dataset"]

_TAKES = ("DecodeOptions(augment=)",
          "DecodeOptions(as_supervised=True)", "ReadOptions(max_open_files=)", "state=")


def ordered_dataset(path: str | os.PathLike[str] | Sequence[str] | Mix, split: str, *,
                    batch_size: int | None, sampling: Sampling, seed: int,
                    options: DecodeOptions, partition: Partition, repeat: bool,
                    reading: ReadOptions, state: int | Mapping[str, Any] | None = None,
                    deterministic: bool = True) -> Any:
    """``load_tf_dataset`` in order or shuffled (see it): each rank's share of every global
    step, as the TF-free loaders read it; ``__id`` (and ``__valid`` unless ``drop_last``)
    beside the features, as there.

    Without ``repeat``, each iteration of the dataset is the next epoch (the first from
    ``state``), counted with the iterator (``tf.train.Checkpoint(iterator=...)`` saves it).

    Raises:
        OptionError: what tf.data cannot do as asked (named), or a ``batch_size`` that does
            not divide between the ranks.
        StateError: a ``state`` of another dataset, seed, batch size or order.
    """
    _check(options, batch_size, sampling, reading, state=state, partition=partition)
    unbatched = batch_size is None
    step_size = UNBATCHED_STEP if batch_size is None else batch_size
    if unbatched and hasattr(sampling, "drop_last"):  # single examples: none is dropped
        sampling = dataclasses.replace(sampling, drop_last=False)  # type: ignore[type-var]
    # The mode's own NumPy loader gives each step's record ids (the built-in orders' is
    # the Loader): the same batches as the TF-free readers.
    loader = implementation(sampling.numpy_loader)(
        sampling, path, split, batch_size=step_size, seed=seed, partition=partition,
        options=dataclasses.replace(options, augment=None, as_supervised=False),
        read=ReadOptions(schema=reading.schema, storage_options=reading.storage_options,
                         max_open_files=reading.max_open_files))
    read, steps = loader.plan, len(loader)
    schema = read.schema
    layout = BatchLayout.of(schema, options)
    names = layout.names
    description = feature_description(schema, names)
    tagged = keyed(options)
    label = _shard_label(schema, names, description)
    entries = (tf.constant(_shard_entries(schema, label, range(len(schema.class_names(label)))))
               if label is not None else None)
    examples = Examples(loader) if unbatched else None
    first, skip = _first_step(state, loader, examples)
    drop_last = getattr(sampling, "drop_last", False) and not unbatched
    marked = not drop_last and not unbatched  # one rank's single examples are all real

    sequential = (isinstance(sampling, InOrder) and first == 0 and not skip and not tagged
                  and label is None and _in_sequence(read, partition))
    counter = None if sequential else EpochCounter()
    if sequential:
        ds = _sequential(read, loader.records, step_size, drop_last=drop_last, marked=marked)
    else:
        steps_reader = _StepReader(loader, entries, tagged=tagged, marked=marked)
        ds = global_steps(first, steps, counter)
        ds = ds.map(graph_only(steps_reader.read), num_parallel_calls=AUTOTUNE,
                    deterministic=True)
    strict = read.inferred_from > 0 and len(names) == len(schema)
    if strict:
        from tfrecordkit.readers.tf_data._pipeline import _undescribed_keys_fail

        fail = _undescribed_keys_fail(schema)
        ds = ds.map(graph_only(lambda e: {**e, "records": fail(e["records"])}),
                    num_parallel_calls=AUTOTUNE, deterministic=deterministic)
    plan = _DecodePlan(description, {n: schema[n] for n in names}, layout, options,
                       options.augment, deterministic,
                       stored_layout(stored_specs(schema, names), options.padding),
                       seed=seed, strict=strict)
    ds = parse_and_decode(ds, plan, None if unbatched else partition.per_rank(step_size),
                          drop_last)
    ds = _relabelled_epochs(ds, loader.mix, repeat=repeat, deterministic=deterministic)
    ds = _finished(ds, loader, examples, skip=skip, first=first, repeat=repeat,
                   counter=counter, options=options, deterministic=deterministic)
    return name_errors(ds, read.files, _finder(loader), epoch=counter)


def _in_sequence(read: Any, partition: Partition) -> bool:
    """Whether TensorFlow's own reader, reading the files one after another, gives the steps
    in order on this rank: one rank, whole local files. It reads them with no Python call
    per step and no copy of a step's records into one buffer (through the step reader a step
    of 32 raw 224x224x3 images cost 1.9x the CPU, 6 KB JPEG records 1.2x)."""
    return partition.world_size == 1 and read.whole_files and read.storage.local


class _StepReader:
    """Global step ``g`` -> this rank's records of it, with their ids (and ``__valid``), each
    record's shard label entry and crop key beside. Local uncompressed files: a Python call
    gives the step's locations and the compiled op reads and checks the frames (no bytes
    through Python); otherwise the call reads the records itself."""

    def __init__(self, loader: Any, entries: Any, *, tagged: bool, marked: bool) -> None:
        self.loader, self.entries = loader, entries
        self.tagged, self.marked = tagged, marked
        self.steps = len(loader)
        # The records opened here, by the caller: not in tf.data's first calls of the step
        # reader (index files read in Python calls inside tf.data, under a lock, would still
        # be in flight when a process that read a few steps exits).
        self.records = records = loader.records
        self.frames = (frame_reader(records.files, records.storage, records.restarts,
                                    records.stamps)
                       if isinstance(records, SplitRecords) else None)

    def _step(self, g: np.int64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        epoch, step = divmod(int(g), self.steps)
        ids, valid = self.loader.step_ids(epoch, step)
        classes = (self.records.shard_classes(ids) if self.entries is not None
                   else np.zeros(0, np.int64))
        return ids.astype(np.int64), valid, classes.astype(np.int64)

    @exit_safe
    def fetch(self, g: np.int64) -> tuple[Any, ...]:
        """The step's records as one buffer, their offsets and lengths, ids, whether each
        is real, and their shards' classes."""
        ids, valid, classes = self._step(g)
        buffer, offsets, lengths = _joined(self.records.get_slices(ids))
        return buffer, offsets, lengths, ids, valid, classes

    @exit_safe
    def locate(self, g: np.int64) -> tuple[np.ndarray, ...]:
        """The step's frames' files (positions in ``records.files``), byte offsets and
        lengths, ids, whether each is real, and their shards' classes."""
        ids, valid, classes = self._step(g)
        records = self.records
        return (records.shard[ids].astype(np.int32, copy=False), records.offset[ids],
                records.length[ids], ids, valid, classes)

    def read(self, g: Any) -> dict[str, Any]:
        """In-graph: ``{"records", "__id"[, "__valid"]}`` of global step ``g``."""
        if self.frames is None:
            buffer, offsets, lengths, ids, valid, classes = tf.numpy_function(
                self.fetch, [g], (tf.string, tf.int64, tf.int64, tf.int64, tf.bool, tf.int64),
                stateful=False)
            serialized = tf.strings.substr(tf.ensure_shape(buffer, []),
                                           tf.ensure_shape(offsets, [None]),
                                           tf.ensure_shape(lengths, [None]))
        else:
            shards, offsets, lengths, ids, valid, classes = tf.numpy_function(
                self.locate, [g], (tf.int32, tf.int64, tf.int64, tf.int64, tf.bool, tf.int64),
                stateful=False)
            serialized = self.frames(tf.ensure_shape(shards, [None]),
                                     tf.ensure_shape(offsets, [None]),
                                     tf.ensure_shape(lengths, [None]))
        ids, valid, classes = (tf.ensure_shape(t, [None]) for t in (ids, valid, classes))
        if self.entries is not None:  # the label of the record's shard, as its entry
            serialized = tf.strings.join([serialized, tf.gather(self.entries, classes)])
        element = {"records": serialized, RECORD_ID: ids}
        if self.tagged:  # random crops and flips: keyed by (seed, epoch, record id)
            element[CROP_KEY] = crop_keys(g // self.steps, ids)
        if self.marked:
            element[VALID] = valid
        return element


def _finished(ds: Any, loader: Any, examples: Examples | None, *, skip: int, first: int,
              repeat: bool, counter: EpochCounter | None, options: DecodeOptions,
              deterministic: bool) -> Any:
    """Decoded batches made a dataset as every tf.data entry point gives it: the examples
    a state skips, ``as_supervised``, a known cardinality, ``steps_per_epoch``,
    ``state_at``."""
    read, steps = loader.plan, len(loader)
    if skip:
        ds = ds.skip(skip)
    if options.as_supervised:
        ds = _supervised(ds, read.manifest, read.schema, deterministic)
    if not repeat and first % steps == 0 and not skip:
        ds = ds.apply(tf.data.experimental.assert_cardinality(len(examples or loader)))
    ds = _finish(checkpointable(ds, counter), read.manifest, read.schema, deterministic)
    ds.steps_per_epoch, ds.start, ds.mix = steps, first, loader.mix

    def state_at(step: int) -> dict[str, Any]:
        """The JSON state to resume at global step ``step`` (e.g. ``optimizer.iterations``;
        single examples: the example count)."""
        state = (examples or loader).state_dict()
        state["epoch"], state["step"] = divmod(int(step), len(examples or loader))
        return state

    ds.state_at = state_at
    return ds


def _sequential(read: Any, records: Any, step_size: int, *, drop_last: bool,
                marked: bool) -> Any:
    """The records of the plan's files in order, in steps of ``step_size``, each with its first
    record's id (the parse makes the step's ids, and ``__valid``, all real on one rank, from
    it): the step reader's steps, read by TensorFlow's reader, one file after another (no
    interleave: nothing to take turns with, no runs to batch and take apart)."""
    compression = TF_COMPRESSION[read.compression]
    files: Any = list(read.files)
    if read.storage.local:  # each checked as it is opened: the file the split opened
        files = stamp_checked(read.files, records.stamps
                              if isinstance(records, SplitRecords) else None)
    ds = tf.data.TFRecordDataset(files, compression_type=compression, buffer_size=1 << 20)
    ds = ds.batch(step_size, drop_remainder=drop_last)
    firsts = tf.data.Dataset.range(0, np.iinfo(np.int64).max, step_size)  # each step's first id
    return tf.data.Dataset.zip({"records": ds, FIRST_ID_MARKED if marked else FIRST_ID: firsts})


def _relabelled_epochs(ds: Any, mix: MixPlan | None, *, repeat: bool,
                       deterministic: bool) -> Any:
    """Decoded batches with a mix's class ids joined by name, epoch after epoch when
    ``repeat`` (each a new iteration of the one-epoch dataset: no batch spans two)."""
    if mix is not None and mix.joins:
        ds = ds.map(graph_only(_relabel(mix)), num_parallel_calls=AUTOTUNE,
                    deterministic=deterministic)
    return ds.repeat() if repeat else ds


def _relabel(mix: MixPlan) -> Any:
    """In-graph :meth:`MixPlan.relabelled`: each record's class id as the joined names' id,
    by the source its ``__id`` falls in."""
    starts = tf.constant(mix.offsets[1:])
    table = tf.constant(mix.relabel) if mix.relabel is not None else None
    label = mix.label
    boxes = {name: tf.constant(t) for name, t in mix.boxes.items()}

    def relabel(element: dict[str, Any]) -> dict[str, Any]:
        source = tf.cast(tf.searchsorted(starts, tf.reshape(element[RECORD_ID], [-1]),
                                         side="right"), tf.int64)
        out = dict(element)
        if table is not None and label in element:
            values = element[label]
            joined = tf.gather_nd(table, tf.stack(
                [source, tf.reshape(tf.cast(values, tf.int64), [-1])], axis=1))
            out[label] = tf.reshape(tf.cast(joined, values.dtype), tf.shape(values))
        for name, box_table in boxes.items():
            if name in element:
                out[name] = {**element[name], "labels": _joined_box_labels(
                    box_table, element[name]["labels"], source)}
        return out

    return relabel


def _joined_box_labels(table: Any, labels: Any, source: Any) -> Any:
    """In-graph box labels as joined category ids by each row's source (padding stays 0):
    a padded ``{"values", "lengths"}`` (batched ``[B, n]`` or one example's ``[n]``) or a
    ragged batch."""
    if isinstance(labels, tf.RaggedTensor):
        rows = tf.repeat(source, labels.row_lengths())
        joined = tf.gather_nd(table, tf.stack([rows, labels.flat_values], axis=1))
        return labels.with_flat_values(tf.cast(joined, labels.dtype))
    values = labels["values"]
    batch = tf.reshape(values, [tf.shape(source)[0], -1])  # one example: a batch of one
    width = tf.shape(batch)[1]
    rows = tf.repeat(source[:, None], width, axis=1)
    joined = tf.gather_nd(table, tf.stack([rows, tf.cast(batch, tf.int64)], axis=2))
    kept = tf.range(width)[None, :] < tf.cast(tf.reshape(labels["lengths"], [-1, 1]), tf.int32)
    joined = tf.where(kept, tf.cast(joined, values.dtype), tf.zeros_like(batch))
    return {**labels, "values": tf.reshape(joined, tf.shape(values))}


def _finder(loader: Any) -> Any:
    """What names an error: the split read with the TF-free reader, which raises the error
    it meets, naming the file, record and key."""
    def find() -> None:
        for _ in loader.batches(len(loader)):
            pass

    return find


def _first_step(state: int | Mapping[str, Any] | None, loader: Any,
                examples: Examples | None) -> tuple[int, int]:
    """The global step to start at, and the examples to skip in it, for ``state``: a global
    step (e.g. ``optimizer.iterations``; single examples: an example count) or a loader's
    ``state_dict()`` (checked as every loader checks it)."""
    if state is None:
        return 0, 0
    if isinstance(state, Mapping):
        checked = (examples or loader).check_state(state)
        step = int(checked["epoch"]) * len(examples or loader) + int(checked["step"])
    else:
        step = _step_number(state)
        if step < 0:
            raise StateError("state", f"{step} is not a global step >= 0")
    if examples is None:
        return step, 0
    epoch, record = divmod(step, len(examples))
    return epoch * len(loader) + record // UNBATCHED_STEP, record % UNBATCHED_STEP


def _joined(records: RecordSlices | list[bytes]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """Records as one buffer, each record's offset in it and its length."""
    if isinstance(records, RecordSlices):
        buffer = records.buffer
        data = buffer if type(buffer) is bytes else bytes(memoryview(buffer).cast("B"))
        return data, records.offsets.astype(np.int64), records.lengths.astype(np.int64)
    lengths = np.fromiter(map(len, records), np.int64, len(records))
    offsets = np.zeros(len(records), np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    return b"".join(records), offsets, lengths


def _check(options: DecodeOptions, batch_size: int | None, sampling: Sampling,
           read: ReadOptions, *, state: Any, partition: Partition) -> None:
    """Refuse what this pipeline cannot do as asked."""
    if options.fast_resize:
        raise OptionError("fast_resize decodes JPEGs at a reduced DCT scale in the TF-free "
                          "readers only; tf.data decodes them whole (leave fast_resize off)")
    if batch_size is None:
        if options.padded_shapes:
            raise OptionError("padded_shapes pads batches: give batch_size")
        check_unbatched(partition)
    else:
        partition.per_rank(batch_size)
    refuse_untaken("tf.data", _TAKES, sampling=sampling, options=options, read=read,
                   state=state)
