"""``load_tf_dataset`` with ``Shuffled(buffer=n)``, TensorFlow's own shuffle: files of a split →
interleave in runs → shuffle buffer → batch → parse and decode in-graph → the batch layout →
prefetch."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tfrecordkit.errors import OptionError, SchemaError
from tfrecordkit.format import RecordReader, Storage, parse_examples
from tfrecordkit.readers._decoding import DecodeOptions
from tfrecordkit.readers._layout import BatchLayout, stored_layout, stored_specs
from tfrecordkit.readers._modes import InOrder, ReadOptions, Shuffled, refuse_untaken
from tfrecordkit.readers._partition import Partition
from tfrecordkit.readers._read_plan import ReadPlan, plan_read
from tfrecordkit.readers.tf_data._batching import (
    _DecodePlan,
    _finish,
    _parse_and_decode,
    _shard_entries,
    _shard_label,
    _supervised,
)
from tfrecordkit.readers.tf_data._crop import CROP_KEY, EpochCounter, crop_keys, keyed
from tfrecordkit.readers.tf_data._errors import name_errors
from tfrecordkit.readers.tf_data._exit import exit_safe
from tfrecordkit.readers.tf_data._graph import graph_only, unbatched
from tfrecordkit.readers.tf_data._kernels import checked_path
from tfrecordkit.readers.tf_data._ops import AUTOTUNE, TF_COMPRESSION, feature_description
from tfrecordkit.schema import Schema
from tfrecordkit.store import file_stamps

__all__ = ["records_dataset", "shuffle_buffer_size"]

_SHUFFLE_BYTES = 64 << 20
_PARSE_BATCH = 256
# Records read from one file before the interleave moves on (a parallel interleave of
# single records costs ~15 µs each).
_RUN_RECORDS = 64
# Records this large are read by TensorFlow's own parallel reader, one at a time: its
# per-record cost is nothing beside theirs, and the first shuffle buffer fills sooner (runs
# of 64 30-KB photos took 0.27 s more to fill 2,048 records: bench/first_batch.py). Smaller
# records keep whole runs: shorter ones (tried for 6-KB JPEGs) read up to 17% fewer records
# a second in bench/loaders.py.
_SINGLE_BYTES = 16 << 10


# -- sources of files ------------------------------------------------------------------------


def shuffle_buffer_size(record_bytes: float, records: int,
                        memory_bytes: int = _SHUFFLE_BYTES) -> int:
    """Records in the shuffle buffer: as many as fit in ``memory_bytes`` (64 MiB by default),
    at least 1,000 and at most 100,000 or the number of records."""
    fit = int(memory_bytes / max(record_bytes, 1.0))
    return max(1, min(records, max(1_000, min(fit, 100_000))))


# -- the pipeline ----------------------------------------------------------------------------


def records_dataset(path: str | os.PathLike[str] | Sequence[str], split: str, *,
                    batch_size: int | None, sampling: Shuffled, seed: int | None,
                    options: DecodeOptions, partition: Partition, repeat: bool,
                    reading: ReadOptions, state: int | Mapping[str, Any] | None = None) -> Any:
    """``load_tf_dataset`` with ``Shuffled(buffer=n)``: every record once per epoch, through
    TensorFlow's shuffle buffer; a ``partition`` by file when there are at least as many files
    as pipelines, else by record (tf.data's auto-sharding).

    Raises:
        OptionError: what tf.data cannot do as asked (an exact shuffle, a thread count, ...).
        DatasetError: the manifest disagrees with the files (missing shard, wrong size,
            schema mismatch), before any training starts.
    """
    _check_options(options, batch_size, sampling, reading, state)
    if batch_size is not None:
        batch_size = partition.per_rank(batch_size)  # this pipeline's share of the global batch
    shuffle: bool | int = sampling.buffer or True
    drop_last, cache = sampling.drop_last, reading.cache
    storage_options = reading.storage_options
    as_supervised = options.as_supervised
    read = plan_read(path, split, schema=reading.schema, storage_options=storage_options)
    manifest, schema = read.manifest, read.schema
    if not read.whole_files:
        raise OptionError(f"split {split!r} reads parts of splits; Shuffled(buffer=n) reads "
                          "whole files through TensorFlow's reader: read it with Shuffled()")
    compression = TF_COMPRESSION[read.compression]
    layout = BatchLayout.of(schema, options)
    names = layout.names
    description = feature_description(schema, names)

    # Distribution: by file when there are enough files, else by record.
    file_paths, counts, file_classes, by_record = read.for_rank(partition)
    records = _share_of(counts, partition if by_record else Partition())
    # A seed makes the order reproducible; without one, parallel steps may reorder.
    ordered = seed is not None or by_record
    # Random crops and flips: each record carries its epoch and id (its crop key) as it is
    # read.
    tagged = keyed(options)
    if tagged and cache:
        raise OptionError("random crops and flips are keyed by the epoch: they cannot be "
                          "cached (give cache=False)")
    # Record-level sharding needs every worker to see one and the same record order.
    files_ds, entries = _files_dataset(
        read, file_paths, file_classes, _shard_label(schema, names, description), tagged=tagged,
        shuffle=bool(shuffle), seed=seed if seed is not None else (0 if by_record else None))
    counter = EpochCounter() if tagged else None
    ds = _interleaved(files_ds, read, _file_reader(read.storage, compression, storage_options),
                      compression=compression, files=len(file_paths), counter=counter,
                      entries=entries, shuffle=bool(shuffle), ordered=ordered)
    if by_record:
        ds = ds.shard(partition.world_size, partition.rank)
    ds = _cached_shuffled(ds, cache=cache, shuffle=shuffle, seed=seed, repeat=repeat,
                          record_bytes=read.bytes_per_record, records=records)
    ds = _batched_decoded(ds, read, layout, options, description, ordered=ordered,
                          seed=seed, batch_size=batch_size, drop_last=drop_last)

    if as_supervised:
        ds = _supervised(ds, manifest, schema, ordered)
    if not repeat and records >= 0:
        ds = ds.apply(tf.data.experimental.assert_cardinality(
            _batches_of(records, batch_size, drop_last)))
    ds = _finish(ds, manifest, schema, ordered)

    if counter is not None:
        # The epoch counter is read where records are keyed: an iterator's checkpoint saves
        # and restores it itself (see name_errors), so tf.data may leave it out.
        checkpointable = tf.data.Options()
        checkpointable.experimental_external_state_policy = (
            tf.data.experimental.ExternalStatePolicy.IGNORE)
        ds = ds.with_options(checkpointable)
    return name_errors(ds, file_paths, _finder(path, split, options, read, storage_options),
                       epoch=counter)


def _finder(path: Any, split: str, options: DecodeOptions, read: Any,
            storage_options: dict[str, Any] | None) -> Callable[[], None]:
    """What names a tf.data error: the split read with the TF-free reader, which raises the
    error it meets, naming the file, record and key."""
    def find() -> None:
        from tfrecordkit.readers.numpy_data import Loader

        own_schema = read.schema if read.manifest is None and not read.inferred_from else None
        for _ in Loader(path, split, batch_size=256, sampling=InOrder(),
                        options=dataclasses.replace(options, augment=None,
                                                    as_supervised=False),
                        read=ReadOptions(schema=own_schema,
                                         storage_options=storage_options)):
            pass

    return find


def _share_of(counts: Sequence[int], partition: Partition) -> int:
    """Records this rank reads of files holding ``counts`` (-1: unknown), one record in
    ``world_size`` when the rank shares files by record."""
    if not all(n >= 0 for n in counts):
        return -1
    return len(range(partition.rank, sum(counts), partition.world_size))


def _batched_decoded(ds: Any, read: Any, layout: BatchLayout, options: DecodeOptions,
                     description: dict[str, Any], *, ordered: bool, seed: int | None,
                     batch_size: int | None, drop_last: bool) -> Any:
    """Serialized records batched, checked (files whose schema was inferred), parsed at once
    and decoded as the layout says."""
    schema, names = read.schema, layout.names
    selected = {n: schema[n] for n in names}
    stored = stored_layout(stored_specs(schema, names), options.padding)
    # Files someone else wrote, their schema inferred from a sample: a key or an image the
    # sample missed fails here as the NumPy reader refuses it (then named by it, see find).
    strict = read.inferred_from > 0 and len(names) == len(schema)
    plan = _DecodePlan(description, selected, layout, options, options.augment, ordered,
                       stored, seed=seed if seed is not None else 0, strict=strict)
    parse_size = _PARSE_BATCH if plan.per_example else (batch_size or _PARSE_BATCH)
    ds = ds.batch(parse_size, drop_remainder=drop_last and not plan.per_example
                  and batch_size is not None)
    if strict:
        fail = _undescribed_keys_fail(schema)
        ds = ds.map(graph_only(lambda e: {**e, "records": fail(e["records"])}
                               if isinstance(e, dict) else fail(e)),
                    num_parallel_calls=AUTOTUNE, deterministic=ordered)
    return _parse_and_decode(ds, plan, batch_size, drop_last)


def _cached_shuffled(ds: Any, *, cache: bool, shuffle: bool | int, seed: int | None,
                     repeat: bool, record_bytes: float, records: int) -> Any:
    """``ds`` cached after its first epoch, shuffled through a buffer (of ``shuffle``
    records, or sized from the record size), repeated: each when asked."""
    if cache:
        ds = ds.cache()
    if shuffle:
        buffer = (shuffle if not isinstance(shuffle, bool)
                  else shuffle_buffer_size(record_bytes, max(records, 1_000)))
        ds = ds.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    return ds.repeat() if repeat else ds


def _batches_of(records: int, batch_size: int | None, drop_last: bool) -> int:
    """Elements of an epoch of ``records``: batches (the last one smaller unless dropped), or
    the records themselves unbatched."""
    if batch_size is None:
        return records
    return records // batch_size if drop_last else math.ceil(records / batch_size)


def _files_dataset(read: Any, file_paths: Sequence[str], file_classes: Any,
                   shard_label: str | None, *, tagged: bool, shuffle: bool,
                   seed: int | None) -> tuple[Any, bool]:
    """The dataset of files to interleave, shuffled each epoch when asked: each file's path,
    its class entry when the label comes from the shard, its first record id when records
    are keyed for random crops; and whether entries are there."""
    files: dict[str, Any] = {"file": list(file_paths)}
    if shard_label:
        files["entry"] = _shard_entries(read.schema, shard_label, file_classes)
    if tagged:
        files["first"] = np.asarray(_first_ids(read, file_paths), np.int64)
    if read.storage.local:  # each file checked as it is opened: the one the plan checked
        files["stamp"] = file_stamps(file_paths)
    files_ds = tf.data.Dataset.from_tensor_slices(files)
    if shuffle and len(file_paths) > 1:
        files_ds = files_ds.shuffle(len(file_paths), seed=seed, reshuffle_each_iteration=True)
    if read.storage.local:
        files_ds = files_ds.map(graph_only(lambda f: {
            **{k: v for k, v in f.items() if k != "stamp"},
            "file": checked_path(f["file"], f["stamp"])}))
    return files_ds, "entry" in files


def _undescribed_keys_fail(schema: Schema) -> Callable[[Any], Any]:
    """A map over batches of serialized records that fails on a record holding a key the
    schema does not describe (``tf.io.parse_example`` would drop it without a word)."""
    # A SequenceExample's context is read as an Example's features; its feature lists are
    # another field, not keys.
    specs = [s for s in schema.key_specs() if not s.sequence]

    def check(records: np.ndarray) -> np.ndarray:
        try:
            parse_examples(list(records), specs, strict=True)
        except SchemaError as err:
            raise ValueError(f"assertion failed: [feature {err.feature!r}: {err.reason}]"
                             ) from None
        return np.array(True)

    def fail_undescribed(batch: Any) -> Any:
        # The check's result feeds an assertion (kept: a stateless op whose output only
        # orders others is pruned by Grappler); a stateful numpy_function would make the
        # iterator impossible to checkpoint.
        ok = tf.numpy_function(exit_safe(check), [batch], tf.bool, stateful=False)
        with tf.control_dependencies([tf.debugging.assert_equal(
                ok, True, message="assertion failed: [feature <record>: undescribed key]")]):
            return tf.identity(batch)

    return fail_undescribed


def _check_options(options: DecodeOptions, batch_size: int | None,
                   sampling: Shuffled, read: ReadOptions, state: Any = None) -> None:
    """Refuse what tf.data cannot do as asked."""
    if options.fast_resize:
        raise OptionError("fast_resize decodes JPEGs at a reduced DCT scale in the TF-free "
                          "readers only; tf.data decodes them whole (leave fast_resize off)")
    if options.padded_shapes and batch_size is None:
        raise OptionError("padded_shapes pads batches: give batch_size")
    if batch_size is not None and batch_size < 1:
        raise OptionError(f"batch_size must be positive; got {batch_size}")
    refuse_untaken("tf.data", ("Shuffled(buffer=)", "DecodeOptions(augment=)",
                               "DecodeOptions(as_supervised=True)", "ReadOptions(cache=True)",
                               "state="),  # state= is refused with the buffer, by name
                   sampling=sampling, options=options, read=read, state=state)


def _interleaved(files_ds: Any, read: ReadPlan, open_file: Callable[[Any], Any], *,
                 compression: str, files: int, counter: EpochCounter | None, entries: bool,
                 shuffle: bool, ordered: bool) -> Any:
    """The records of the files ``files_ds`` gives (``{"file"}``, and ``"entry"``: the shard
    label entry each record gets; ``"first"``: the id of each file's first record, to tag
    records for keyed crops and flips), read from up to 16 files at a time."""
    if counter is not None:
        files_ds = counter.starting(files_ds)
    cycle = max(1, min(files, 16)) if shuffle else 1
    run_length = _RUN_RECORDS

    # Files are interleaved in runs of records: a parallel interleave of single records
    # costs ~15 µs each (one file: 15x slower than reading it; bench/vocabulary.py found it).
    # What a run is joined with (its shard's label entry, its ids) travels beside it to one
    # map after the interleave: a map inside each file's dataset instantiated its function
    # once a file (~1.7 ms each: ~5% of the CPU of an epoch over 100 files of 32 photos).
    def runs(file: dict[str, Any]) -> Any:
        records = open_file(file["file"]).batch(run_length)
        parts = {"records": records}
        if "entry" in file:
            parts["entry"] = tf.data.Dataset.from_tensors(file["entry"]).repeat()
        if counter is not None:
            parts["first"] = tf.data.Dataset.range(file["first"], np.iinfo(np.int64).max,
                                                   run_length)
        return tf.data.Dataset.zip(parts) if len(parts) > 1 else records

    def joined(run: dict[str, Any]) -> Any:
        records = run["records"]
        if "entry" in run:
            records = tf.strings.join([records, tf.fill(tf.shape(records), run["entry"])])
        if counter is None:
            return records
        ids = run["first"] + tf.range(tf.size(records, out_type=tf.int64))
        return {"records": records, CROP_KEY: crop_keys(counter.value(), ids)}

    if (read.bytes_per_record >= _SINGLE_BYTES and not entries and counter is None
            and read.storage.local):
        # Large records, read one at a time: TensorFlow's own parallel reader (no run
        # batches to build and take apart).
        return tf.data.TFRecordDataset(files_ds.map(graph_only(lambda f: f["file"])),
                                       compression_type=compression, buffer_size=1 << 20,
                                       num_parallel_reads=cycle if cycle > 1 else None)
    ds = files_ds.interleave(graph_only(runs), cycle_length=cycle, block_length=1,
                             num_parallel_calls=AUTOTUNE, deterministic=ordered)
    if entries or counter is not None:
        ds = ds.map(graph_only(joined), num_parallel_calls=AUTOTUNE, deterministic=ordered)
    return unbatched(ds)


def _first_ids(read: ReadPlan, files: Sequence[str]) -> list[int]:
    """The split position (record id, as every reader numbers records) of each file's first
    record."""
    counts = np.asarray(read.counts, dtype=np.int64)
    if (counts < 0).any():  # files without a manifest: counted from their records
        counts = np.bincount(read.locations().shard, minlength=len(read.files))
    starts = dict(zip(read.files, np.concatenate([[0], np.cumsum(counts)[:-1]]).tolist(),
                      strict=True))
    return [int(starts[f]) for f in files]


def _file_reader(storage: Storage, compression: str,
                 storage_options: dict[str, Any] | None) -> Callable[[Any], Any]:
    """File path tensor -> dataset of its serialized records: TensorFlow's reader where TF
    reads the files itself (local, ``gs://``), else tfrecordkit's (CRC-checked) via fsspec."""
    if storage.local or (storage.protocol in ("gs", "gcs") and not storage_options):
        return lambda f: tf.data.TFRecordDataset(f, compression_type=compression,
                                                 buffer_size=1 << 20)

    def records(path: bytes) -> Iterator[bytes]:
        yield from RecordReader(path.decode(), storage=storage)

    signature = tf.TensorSpec((), tf.string)
    return lambda f: tf.data.Dataset.from_generator(records, args=(f,),
                                                    output_signature=signature)
