"""Datasets written by tfrecordkit (or anyone) as ``tf.data`` pipelines; no hand-written parsing.

The pipeline, every stage AUTOTUNEd::

    shard files (manifest) → shuffle files (seeded, per epoch) → parallel interleave
    → shuffle records → batch → tf.io.parse_example on the whole batch
    → decode (vectorised; or per example in a parallel map for images, audio, variable
      tensors and augmentation) → padded or ragged batch → prefetch

Parsing specs come from the manifest's schema; files tfrecordkit did not write get a schema
inferred from a sample of their records.
"""

from __future__ import annotations

import copy
import logging
import math
import operator
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from tfrecordkit.codecs import load_soundfile, resample_audio
from tfrecordkit.errors import DatasetError, MissingDependencyError, OptionError, StateError
from tfrecordkit.format import RecordReader, Storage
from tfrecordkit.readers._decoding import DecodeOptions
from tfrecordkit.readers._layout import BatchLayout, FeatureLayout
from tfrecordkit.readers._partition import Partition
from tfrecordkit.readers._plan import plan_read
from tfrecordkit.sampling import MAX_EPOCH, state_int
from tfrecordkit.schema import (
    Audio,
    ClassLabel,
    Feature,
    Image,
    KeySpec,
    Scalar,
    Schema,
    Tensor,
    Text,
)
from tfrecordkit.store import MANIFEST_NAME, Manifest, is_dataset_dir

try:
    import tensorflow as tf
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("tensorflow", "tf", "tfrecordkit.readers.tf_data") from err

__all__ = [
    "decode_image_tensor",
    "feature_description",
    "load_tf_dataset",
    "random_brightness",
    "random_crop",
    "random_flip",
    "shuffle_buffer_size",
]

logger = logging.getLogger(__name__)

AUTOTUNE = tf.data.AUTOTUNE
Padding = Literal["pad", "ragged"]
Example = dict[str, Any]
Augment = Callable[[Example], Example] | Sequence[Callable[[Example], Example]]
"""An augmentation: a function from example dict to example dict, or a list of them."""

_TF_DTYPES = {"string": tf.string, "int64": tf.int64, "float32": tf.float32}
_SHUFFLE_BYTES = 64 << 20
_PARSE_BATCH = 256


# -- parsing specs ---------------------------------------------------------------------------


def feature_description(schema: Schema, features: Sequence[str] | None = None) -> dict[str, Any]:
    """The ``tf.io.parse_example`` spec for a schema (or the named subset of its features).

    Fixed-length keys become ``FixedLenFeature``; variable-length ones ``RaggedFeature``.
    """
    return {spec.key: _tf_spec(spec) for spec in schema.key_specs(
        list(features) if features is not None else None)}


def _tf_spec(spec: KeySpec) -> Any:
    dtype = _TF_DTYPES[spec.dtype]
    if spec.shape is None:
        return tf.io.RaggedFeature(dtype, row_splits_dtype=tf.int64)
    return tf.io.FixedLenFeature(list(spec.shape), dtype)


# -- decoding --------------------------------------------------------------------------------


def _needs_per_example_decode(feature: Feature) -> bool:
    return isinstance(feature, Image | Audio) or (
        isinstance(feature, Tensor) and feature.variable
    )


def _tf_to_channels(image: Any, channels: int | None) -> Any:
    """``[h, w, c]`` uint8 pixels (any c in 1..4) with ``channels`` channels, converted as
    :func:`~tfrecordkit.schema.convert_channels` converts them (both readers agree)."""
    if channels is None:
        return image
    have = tf.shape(image)[2]
    has_alpha = tf.logical_or(tf.equal(have, 2), tf.equal(have, 4))
    colour = tf.cond(has_alpha, lambda: image[:, :, :-1], lambda: image)
    if channels in (1, 2):
        def luma() -> Any:
            rgb = tf.cast(colour, tf.int32)
            grey = (rgb[:, :, 0] * 9798 + rgb[:, :, 1] * 19235 + rgb[:, :, 2] * 9735) // 32768
            return tf.cast(grey, tf.uint8)[:, :, None]
        colour = tf.cond(tf.equal(tf.shape(colour)[2], 3), luma, lambda: colour[:, :, :1])
    else:
        colour = tf.cond(tf.equal(tf.shape(colour)[2], 1),
                         lambda: tf.tile(colour, [1, 1, 3]), lambda: colour[:, :, :3])
    if channels in (2, 4):
        alpha = tf.cond(has_alpha, lambda: image[:, :, -1:],
                        lambda: tf.fill(tf.concat([tf.shape(image)[:2], [1]], 0),
                                        tf.constant(255, tf.uint8)))
        colour = tf.concat([colour, alpha], axis=2)
    colour.set_shape([None, None, channels])
    return colour


def decode_image_tensor(data: Any, channels: int | None = None, encoding: str = "auto") -> Any:
    """Decode JPEG/PNG (or GIF/BMP) bytes to ``[h, w, c]`` uint8, pixel for pixel as the NumPy
    readers decode them: accurate integer DCT for JPEG (TensorFlow's default is the faster,
    less exact one), and the same channel conversions."""
    def jpeg() -> Any:
        want = 1 if channels in (1, 2) else 3 if channels in (3, 4) else 0
        image = tf.io.decode_jpeg(data, channels=want, dct_method="INTEGER_ACCURATE")
        return _tf_to_channels(image, channels) if channels in (2, 4) else image

    def other() -> Any:
        image = tf.io.decode_image(data, channels=0, expand_animations=False)
        image.set_shape([None, None, None])
        return _tf_to_channels(image, channels)

    if encoding == "jpeg":
        image = jpeg()
    elif encoding == "png":
        image = _tf_to_channels(tf.io.decode_png(data, channels=0), channels)
    else:
        image = tf.cond(tf.io.is_jpeg(data), jpeg, other)
    image.set_shape([None, None, channels])
    return image


def _decode_image(feature: Image, parsed: Example, name: str,
                  image_size: tuple[int, int] | None, keep_aspect: bool) -> Any:
    data = parsed[name]
    if feature.encoding == "raw":
        shape = tf.stack([parsed[f"{name}/height"], parsed[f"{name}/width"],
                          parsed[f"{name}/channels"]])
        image = _tf_to_channels(tf.reshape(tf.io.decode_raw(data, tf.uint8), shape),
                                feature.channels)
    else:
        image = decode_image_tensor(data, feature.channels, feature.encoding)
    if image_size is None and feature.fixed_shape is not None:
        image = tf.ensure_shape(image, feature.fixed_shape)  # a static shape for Keras
    return _resize(image, image_size, keep_aspect)


def _scale_image(image: Any, dtype: str, mean: tuple[float, ...] | None,
                 std: tuple[float, ...] | None) -> Any:
    """float32 in [0, 1], then ``(x - mean) / std``: the NumPy readers' float32 operations."""
    out = tf.cast(image, tf.float32) / tf.constant(255.0, tf.float32)
    if mean is not None:
        out = out - tf.constant(mean, tf.float32)
    if std is not None:
        out = out / tf.constant(std, tf.float32)
    return out


def _resize(image: Any, image_size: tuple[int, int] | None, keep_aspect: bool) -> Any:
    if image_size is None:
        return image
    if keep_aspect:
        resized = tf.image.resize_with_pad(image, image_size[0], image_size[1])
    else:
        resized = tf.image.resize(image, image_size)
    return tf.saturate_cast(tf.round(resized), tf.uint8)


def _decode_audio_file(data: bytes) -> tuple[np.ndarray, np.int64]:
    import io

    samples, rate = load_soundfile().read(io.BytesIO(data), dtype="float32", always_2d=True)
    return samples, np.int64(rate)


def _decode_audio(feature: Audio, parsed: Example, name: str,
                  sample_rate: int | None = None) -> Any:
    """``{"samples": [frames, channels] float32, "sample_rate": int64}``, as the TF-free
    loaders give it; resampled (libsoxr, as they do) to ``sample_rate`` when given."""
    channels = tf.cast(parsed[f"{name}/channels"], tf.int64)
    rate = tf.cast(parsed[f"{name}/sample_rate"], tf.int64)
    if feature.encoding == "pcm":
        samples = tf.reshape(parsed[name], tf.stack([-1, tf.maximum(channels, 1)]))
    else:
        samples, rate = tf.numpy_function(_decode_audio_file, [parsed[name]],
                                          [tf.float32, tf.int64], stateful=False)
        samples.set_shape([None, None])
        rate.set_shape([])
    if sample_rate is not None:
        samples = tf.numpy_function(
            lambda s, r: resample_audio(s, int(r), sample_rate) if r > 0 else s,
            [samples, rate], tf.float32, stateful=False)
        samples.set_shape([None, None])
        rate = tf.where(rate > 0, tf.constant(sample_rate, tf.int64), rate)
    return {"samples": samples, "sample_rate": rate}


def _decode_tensor(feature: Tensor, data: Any, shape: Any, batched: bool) -> Any:
    raw_dtype = tf.uint8 if feature.dtype == "bool" else tf.as_dtype(feature.dtype)
    values = tf.io.decode_raw(data, raw_dtype, little_endian=True)
    values = tf.reshape(values, [-1, *feature.shape] if batched else shape)
    if not batched:
        values.set_shape(feature.shape)  # the dimensions the schema fixes are static
    return tf.cast(values, tf.bool) if feature.dtype == "bool" else values


def _token_ids(ids: Any, text_length: int | None, batched: bool) -> dict[str, Any]:
    """Token ids cut to ``text_length``, with a mask that padding will make False."""
    if text_length is not None:
        ids = ids[:, :text_length] if batched else ids[:text_length]
    mask = (tf.ones_like(ids, dtype=tf.bool) if not isinstance(ids, tf.RaggedTensor)
            else tf.ragged.map_flat_values(tf.ones_like, ids, dtype=tf.bool))
    if batched and text_length is not None and isinstance(ids, tf.RaggedTensor):
        ids = ids.to_tensor(shape=[None, text_length])
        mask = mask.to_tensor(shape=[None, text_length])
    return {"ids": ids, "mask": mask}


def _decode_common(feature: Feature, parsed: Example, name: str, batched: bool,
                   text_length: int | None = None) -> Any:
    """Decoding that works on a whole batch as well as on one example."""
    if isinstance(feature, Text):
        if feature.has_ids:
            return {"text": parsed[name],
                    **_token_ids(parsed[f"{name}/ids"], text_length, batched)}
        return parsed[name]
    if isinstance(feature, Tensor):
        shape = parsed[f"{name}/shape"] if feature.variable else list(feature.shape)
        return _decode_tensor(feature, parsed[name], shape, batched)
    if isinstance(feature, Scalar):
        value = parsed[name]
        if feature.dtype in ("string", "int64", "float32"):
            return value
        return tf.cast(value, tf.as_dtype(feature.dtype))
    return parsed[name]  # ClassLabel (int64), Sequence (ragged)


def _decode_one(feature: Feature, parsed: Example, name: str, options: DecodeOptions) -> Any:
    if isinstance(feature, Image):
        return _decode_image(feature, parsed, name, options.image_size, options.keep_aspect)
    if isinstance(feature, Audio):
        return _decode_audio(feature, parsed, name, options.sample_rate)
    return _decode_common(feature, parsed, name, batched=False,
                          text_length=options.text_length)


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


# -- sources of files ------------------------------------------------------------------------


def shuffle_buffer_size(record_bytes: float, records: int,
                        memory_bytes: int = _SHUFFLE_BYTES) -> int:
    """Records in the shuffle buffer: as many as fit in ``memory_bytes`` (64 MiB by default),
    at least 1,000 and at most 100,000 or the number of records."""
    fit = int(memory_bytes / max(record_bytes, 1.0))
    return max(1, min(records, max(1_000, min(fit, 100_000))))


# -- the pipeline ----------------------------------------------------------------------------


def load_tf_dataset(
    path: str | os.PathLike[str] | Sequence[str],
    split: str = "train",
    *,
    batch_size: int | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    repeat: bool = False,
    decode: bool = True,
    features: Sequence[str] | None = None,
    image_size: tuple[int, int] | None = None,
    keep_aspect_ratio: bool = False,
    augment: Augment | None = None,
    padding: Padding = "pad",
    drop_remainder: bool = False,
    cache: bool = False,
    input_context: Any = None,
    deterministic: bool = False,
    as_supervised: bool = False,
    schema: Schema | None = None,
    shuffle_buffer: int | None = None,
    options: DecodeOptions | None = None,
    storage_options: dict[str, Any] | None = None,
    image_dtype: Literal["uint8", "float32"] = "uint8",
    padded_shapes: Mapping[str, tuple[int | None, ...]] | None = None,
    padding_values: Mapping[str, float] | None = None,
) -> Any:
    """A ``tf.data.Dataset`` of one split of a dataset, parsed and decoded from its manifest.

    Args:
        path: a dataset directory (with ``dataset.json``), or TFRecord files / globs that
            tfrecordkit did not write (their schema is inferred from a sample, or ``schema``).
            Local paths and ``gs://`` URLs are read by TensorFlow's own file reader; other
            URLs (``s3://``, ``http(s)://``, ``memory://``; ``gs://`` with
            ``storage_options``) by tfrecordkit's reader through fsspec, feeding tf.data.
        split: which split.
        batch_size: records per batch (None: unbatched examples).
        shuffle: shuffle files every epoch and records through a buffer sized from the record
            size (see :func:`shuffle_buffer_size`) or ``shuffle_buffer``.
        seed: seeds the shuffles; with ``deterministic=True`` the same seed gives the same order.
        repeat: repeat forever (cardinality becomes infinite).
        decode: decode images, audio, tensors; False leaves the parsed raw values.
        features: parse only these features (the others are never parsed).
        image_size: resize images to ``(height, width)``; ``keep_aspect_ratio`` pads instead of
            stretching.
        augment: a function (or list) mapping an example dict to an example dict, run per
            example after decoding and resizing, before batching, in the parallel map; see
            :func:`random_flip`, :func:`random_brightness`, :func:`random_crop`.
        padding: variable-length values in a batch are padded to the longest (``"pad"``) or
            returned as ``tf.RaggedTensor`` (``"ragged"``).
        padded_shapes: per feature, the shape to pad to in a batch, ``None`` for a dimension
            padded to the batch's longest: ``{"image": (256, None, 3)}`` (audio: the samples'
            ``(frames, channels)``; token ids: ``(length,)``). A larger value fails naming
            the feature.
        padding_values: per feature, the value padding fills in (default 0, or "").
        drop_remainder: drop the last smaller batch (static batch dimension).
        cache: cache serialized records in memory after the first epoch.
        input_context: a ``tf.distribute.InputContext``: shard by file when there are at least
            as many files as input pipelines, else by record. ``batch_size`` is then per
            replica (``input_context.get_per_replica_batch_size(global_batch)``).
        deterministic: fixed element order (slower); needed for reproducible runs.
        as_supervised: yield ``(inputs, label)`` for ``model.fit``; ``inputs`` is the one
            remaining feature, or a dict of them.
        schema: the schema for foreign files (default: inferred).
        shuffle_buffer: override the shuffle buffer size (records).
        options: ``decode``, ``features``, ``image_size``, ``keep_aspect_ratio`` and
            ``padding`` as one :class:`~tfrecordkit.readers.numpy_data.DecodeOptions` (the
            TF-free loaders' object; then leave those keywords at their defaults).
        storage_options: options for a URL's filesystem (fsspec).
        image_dtype: ``"float32"`` scales images to [0, 1] (``options`` adds ``mean``/``std``
            normalisation); the TF-free loaders give the same values.

    Returns:
        The dataset; it carries ``class_names`` and (for tfrecordkit datasets) ``manifest``.

    Raises:
        DatasetError: the manifest disagrees with the files (missing shard, wrong size,
            schema mismatch), before any training starts.
    """
    if options is not None:
        if (decode, features, image_size, keep_aspect_ratio, padding, image_dtype,
                padded_shapes, padding_values) != (True, None, None, False, "pad", "uint8",
                                                   None, None):
            raise OptionError("give either options= or the decode keywords, not both")
    else:
        options = DecodeOptions(decode=decode, image_size=image_size,
                                features=None if features is None else tuple(features),
                                keep_aspect=keep_aspect_ratio, padding=padding,
                                image_dtype=image_dtype, padded_shapes=padded_shapes,
                                padding_values=padding_values)  # validates them
    if options.padded_shapes and batch_size is None:
        raise OptionError("padded_shapes pads batches: give batch_size")
    if batch_size is not None and batch_size < 1:
        raise OptionError(f"batch_size must be positive; got {batch_size}")
    read = plan_read(path, split, schema=schema, storage_options=storage_options)
    manifest, schema = read.manifest, read.schema
    compression = {"gzip": "GZIP", "zlib": "ZLIB", None: ""}[read.compression]
    open_file = _file_reader(read.storage, compression, storage_options)
    layout = BatchLayout.of(schema, options, read.specs, read.images)
    names = layout.names
    if schema is not None:
        description = feature_description(schema, names)
    else:
        description = {spec.key: _tf_spec(spec) for spec in read.specs if spec.key in names}

    # Distribution: by file when there are enough files, else by record.
    partition = (Partition.from_input_context(input_context) if input_context is not None
                 else Partition())
    workers, worker = partition.world_size, partition.rank
    file_paths, counts, file_classes, by_record = read.for_rank(partition)
    records = sum(counts) if all(n >= 0 for n in counts) else -1
    if by_record and records >= 0:
        records = len(range(worker, records, workers))

    # Record-level sharding needs every worker to see one and the same record order.
    file_seed = seed if seed is not None else (0 if by_record else None)
    # shuffle=False is the split's stored order, as in every reader: files one after another.
    ordered = deterministic or by_record or not shuffle
    # A label taken from the shard: each file's records get it appended (_with_shard_label).
    shard_label = _shard_label(schema, names, description)
    files_ds = tf.data.Dataset.from_tensor_slices(
        (list(file_paths), _shard_entries(schema, shard_label, file_classes)) if shard_label
        else list(file_paths))
    if shuffle and len(file_paths) > 1:
        files_ds = files_ds.shuffle(len(file_paths), seed=file_seed, reshuffle_each_iteration=True)
    cycle = max(1, min(len(file_paths), 16)) if shuffle else 1

    # Files are interleaved in runs of records: a parallel interleave of single records
    # costs ~15 µs each (one file: 15x slower than reading it; bench/vocabulary.py found it).
    def runs(file: Any, entry: Any = None) -> Any:
        records = open_file(file).batch(_INTERLEAVE_RUN)
        return records if entry is None else records.map(
            lambda r: tf.strings.join([r, tf.fill(tf.shape(r), entry)]))

    ds = files_ds.interleave(runs, cycle_length=cycle, block_length=1,
                             num_parallel_calls=AUTOTUNE, deterministic=ordered).unbatch()
    if by_record:
        ds = ds.shard(workers, worker)
    if cache:
        ds = ds.cache()
    if shuffle:
        buffer = shuffle_buffer or shuffle_buffer_size(read.bytes_per_record,
                                                       max(records, 1_000))
        ds = ds.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()

    selected = {n: schema[n] for n in names} if schema is not None else {}
    plan = _DecodePlan(description, selected, layout, options, augment, ordered)
    parse_size = _PARSE_BATCH if plan.per_example else (batch_size or _PARSE_BATCH)
    ds = ds.batch(parse_size, drop_remainder=drop_remainder and not plan.per_example
                  and batch_size is not None)
    ds = _parse_and_decode(ds, plan, batch_size, drop_remainder)

    if as_supervised:
        ds = _supervised(ds, manifest, schema, ordered)
    if not repeat and records >= 0:
        if batch_size is None:
            cardinality = records
        elif drop_remainder:
            cardinality = records // batch_size
        else:
            cardinality = math.ceil(records / batch_size)
        ds = ds.apply(tf.data.experimental.assert_cardinality(cardinality))
    return _finish(ds, manifest, schema, ordered)


@dataclass(frozen=True)
class _DecodePlan:
    """What to parse, how to decode it, and the batch layout it ends in."""

    description: dict[str, Any]
    selected: dict[str, Feature]
    layout: BatchLayout
    options: DecodeOptions
    augment: Any
    ordered: bool

    @property
    def decode(self) -> bool:
        return self.options.decode

    @property
    def foreign_images(self) -> list[str]:
        """Images of files without a schema (keys holding one encoded image)."""
        return self.layout.images if not self.selected else []

    @property
    def structured(self) -> bool:
        """Whether values take the layout's structure (decoded, padded)."""
        return self.decode and self.options.padding == "pad"

    @property
    def per_example(self) -> bool:
        """Whether decoding needs a per-example map (images, audio, ragged tensors, augment,
        fixed padded shapes)."""
        return self.augment is not None or bool(self.options.padded_shapes) or (
            self.decode and (any(_needs_per_example_decode(f) for f in self.selected.values())
                             or bool(self.foreign_images)))


def _parse_and_decode(ds: Any, plan: _DecodePlan, batch_size: int | None,
                      drop_remainder: bool) -> Any:
    """Batches of serialized records → parsed (whole batch at once) → decoded examples,
    re-batched to ``batch_size`` (None: single examples), in the layout's structure."""
    ordered, layout, options = plan.ordered, plan.layout, plan.options

    def parse_batch(serialized: Any) -> Example:
        return dict(tf.io.parse_example(serialized, plan.description))

    if plan.per_example:
        # Parse in big batches (fast), then decode each example in a parallel map.
        ds = ds.map(parse_batch, num_parallel_calls=AUTOTUNE, deterministic=ordered).unbatch()
        # Dimensions the schema leaves open but that can't vary (channels) must agree
        # within a padded batch: padding would otherwise fill them with zeros.
        open_axes = {n: f.open_axes for n, f in layout.features.items()
                     if f.open_axes and f.kind in ("image", "audio")}
        checked = batch_size is not None and plan.structured and bool(open_axes)

        def decode_example_tf(parsed: Example) -> Example:
            if not plan.decode or not plan.selected:
                out = dict(parsed)
                for key in plan.foreign_images if plan.decode else ():
                    out[key] = _resize(decode_image_tensor(out[key]), options.image_size,
                                       options.keep_aspect)
            else:
                out = {n: _decode_one(f, parsed, n, options) for n, f in plan.selected.items()}
            if plan.decode and options.image_dtype != "uint8":
                for key in layout.images:
                    out[key] = _scale_image(out[key], options.image_dtype, options.mean,
                                            options.std)
            out = _compose(plan.augment)(out) if plan.augment is not None else out
            if not plan.decode:
                return out
            out = _check_padded_shapes(out, layout)
            sizes = ({_OPEN + n: tf.gather(tf.shape(_array(out[n])), list(axes))
                      for n, axes in open_axes.items()} if checked else {})
            if plan.structured:
                out = {n: _structure(v, layout[n]) if n in layout.features else v
                       for n, v in out.items()}
            return {**out, **sizes}

        ds = ds.map(decode_example_tf, num_parallel_calls=AUTOTUNE, deterministic=ordered)
        if batch_size is not None:
            if options.padding == "ragged":
                ds = ds.ragged_batch(batch_size, drop_remainder=drop_remainder)
            else:
                shapes, fills = _padding(ds.element_spec, layout)
                ds = ds.padded_batch(batch_size, padded_shapes=shapes, padding_values=fills,
                                     drop_remainder=drop_remainder)
                if checked:
                    ds = ds.map(lambda b: _check_open_axes(b, open_axes),
                                num_parallel_calls=AUTOTUNE, deterministic=ordered)
        elif options.padding == "pad":
            ds = ds.map(_to_dense, num_parallel_calls=AUTOTUNE, deterministic=ordered)
        return ds

    def parse_and_decode(serialized: Any) -> Example:
        parsed = parse_batch(serialized)
        if not plan.decode or not plan.selected:
            out = dict(parsed)
        else:
            out = {n: _decode_common(f, parsed, n, batched=True,
                                     text_length=options.text_length)
                   for n, f in plan.selected.items()}
        if batch_size is None or options.padding != "pad":
            return out  # single examples: structured one by one after unbatching
        if not plan.structured:
            return dict(_to_dense(out))
        return {n: _batch_structure(v, layout[n]) if n in layout.features else _to_dense(v)
                for n, v in out.items()}

    ds = ds.map(parse_and_decode, num_parallel_calls=AUTOTUNE, deterministic=ordered)
    if batch_size is not None:
        return ds
    # Unbatching ragged values (never a dense [n, 0] tensor: TensorFlow 2.21 segfaults
    # unbatching one), then a map that turns the rank-0 ragged rows into plain tensors.
    def row(example: Any) -> Any:
        example = _rows_as_tensors(example)
        if not plan.structured:
            return example
        return {n: _structure(v, layout[n]) if n in layout.features else v
                for n, v in example.items()}

    return ds.unbatch().map(row, num_parallel_calls=AUTOTUNE, deterministic=ordered)


_OPEN = "__open__/"
_INTERLEAVE_RUN = 64  # records read from one file before the interleave moves on


def _array(value: Any) -> Any:
    """The array a feature's value holds (audio: its samples)."""
    return value["samples"] if isinstance(value, dict) and "samples" in value else value


def _structure(value: Any, layout: FeatureLayout) -> Any:
    """One example's value in the layout's structure: varying shapes as ``{"values",
    "lengths"}`` (the lengths of the varying dimensions, int64)."""
    if not layout.varies:
        return value
    if layout.kind == "audio":
        return {**value, "samples": _structure(value["samples"], _SAMPLES)}
    axes = list(layout.length_axes)
    return {"values": value,
            "lengths": tf.cast(tf.gather(tf.shape(value), axes), tf.int64)}


_SAMPLES = FeatureLayout("samples", "numbers", np.dtype(np.float32), (None, None), (0,))


def _batch_structure(value: Any, layout: FeatureLayout) -> Any:
    """A batch of one feature, parsed as a whole (fixed shapes, sequences, token ids), in
    the layout's structure: ragged values padded with the layout's fill, and their lengths."""
    if layout.varies and isinstance(value, tf.RaggedTensor):
        fill = layout.fill.decode() if isinstance(layout.fill, bytes) else layout.fill
        return {"values": value.to_tensor(default_value=tf.cast(fill, value.dtype)),
                "lengths": tf.cast(value.row_lengths(), tf.int64)[:, None]}
    return _to_dense(value)


def _check_padded_shapes(example: Example, layout: BatchLayout) -> Example:
    """The example, failing (naming the feature) if a value is larger than its padded
    shape."""
    checks = []
    for name, feature in layout.features.items():
        if feature.padded_shape is None:
            continue
        value = example[name]
        value = value["ids"] if feature.kind == "tokens" else _array(value)
        for axis, size in enumerate(feature.padded_shape):
            if size is not None:
                checks.append(tf.debugging.assert_less_equal(
                    tf.shape(value)[axis], size,
                    message=f"feature {name!r}: a value is larger than its padded shape "
                            f"{feature.padded_shape} (axis {axis})"))
    if not checks:
        return example
    with tf.control_dependencies(checks):
        return dict(tf.nest.map_structure(tf.identity, example))


def _padding(spec: Any, layout: BatchLayout) -> tuple[Any, Any]:
    """``padded_batch``'s shapes and padding values for examples of ``spec``: the layout's
    padded shapes (else each component's own, ``None`` padding to the batch's longest) and
    fills (strings: "", masks: False)."""
    def leaf(part: Any, feature: FeatureLayout | None, key: str) -> tuple[Any, Any]:
        padded = feature is not None and key in ("values", "ids", "mask", "") and (
            feature.padded_shape is not None or feature.cut_to is not None)
        shape = part.shape
        if padded and feature is not None:
            shape = tf.TensorShape(feature.padded_shape if feature.padded_shape is not None
                                   else (feature.cut_to,))
        fill: Any = 0
        if part.dtype == tf.string:
            fill = ""
        elif feature is not None and key in ("values", "ids", ""):
            fill = feature.fill
        return shape, tf.cast(tf.constant(fill), part.dtype)

    def walk(part: Any, feature: FeatureLayout | None, key: str) -> tuple[Any, Any]:
        if isinstance(part, dict):
            pairs = {k: walk(v, feature, k) for k, v in part.items()}
            return {k: v[0] for k, v in pairs.items()}, {k: v[1] for k, v in pairs.items()}
        return leaf(part, feature, key)

    shapes, fills = {}, {}
    for name, part in spec.items():
        shapes[name], fills[name] = walk(part, layout.features.get(name), "")
    return shapes, fills


def _check_open_axes(batch: Example, open_axes: Mapping[str, tuple[int, ...]]) -> Example:
    """Drop the per-example sizes of open dimensions, failing if a record of the batch had
    another size than the batch (its padding would be zeros, not pixels or samples)."""
    out = {k: v for k, v in batch.items() if not k.startswith(_OPEN)}
    for key, axes in open_axes.items():
        have = batch[_OPEN + key]
        value = _array(out[key])
        value = value["values"] if isinstance(value, dict) else value
        batch_sizes = tf.gather(tf.shape(value)[1:], list(axes))
        check = tf.debugging.assert_equal(
            have, tf.broadcast_to(batch_sizes, tf.shape(have)),
            message=f"feature {key!r}: records of one batch have different channel counts "
                    "and the schema does not fix it: pass channels=... in the schema, or "
                    "padding='ragged'")
        with tf.control_dependencies([check]):
            out[key] = tf.nest.map_structure(tf.identity, out[key])
    return out


def _rows_as_tensors(example: Any) -> Any:
    return tf.nest.map_structure(
        lambda t: t if isinstance(t, tf.Tensor) else tf.identity(t), example)


def _label_feature(manifest: Manifest | None, schema: Schema | None) -> str | None:
    label = manifest.label_feature if manifest is not None else None
    if label is None and schema is not None and (found := schema.class_label()):
        label = found[0]
    return label


def _no_label_hint(schema: Schema | None) -> str:
    """Why ``as_supervised`` can't run, and what to write instead."""
    message = "as_supervised needs a class-label feature (tk.ClassLabel) in the schema"
    if schema is None:
        return message
    kinds = ", ".join(f"{n}: {type(f).__name__}" for n, f in schema.items())
    integers = [n for n, f in schema.items()
                if isinstance(f, Scalar | Tensor) and f.dtype.startswith(("int", "uint"))
                and (isinstance(f, Scalar) or f.shape == (1,))]
    hint = (f"; {integers[0]!r} holds integers: write it as tk.ClassLabel(names) (integer "
            "arrays of shape (N,) or (N, 1) named label, labels, class, target or y become "
            "class labels by themselves)") if integers else ""
    return f"{message}; this one has {kinds}{hint}"


def _supervised(ds: Any, manifest: Manifest | None, schema: Schema | None,
                ordered: bool) -> Any:
    label = _label_feature(manifest, schema)
    if label is None:
        raise DatasetError(_no_label_hint(schema))

    def split_label(example: Example) -> tuple[Any, Any]:
        inputs = {k: v for k, v in example.items() if k != label}
        return (next(iter(inputs.values())) if len(inputs) == 1 else inputs), example[label]

    return ds.map(split_label, num_parallel_calls=AUTOTUNE, deterministic=ordered)


def _finish(ds: Any, manifest: Manifest | None, schema: Schema | None, ordered: bool) -> Any:
    ds = ds.prefetch(AUTOTUNE)
    options = tf.data.Options()
    options.deterministic = ordered
    options.experimental_optimization.map_parallelization = True
    ds = ds.with_options(options)
    label = _label_feature(manifest, schema)
    class_feature = schema[label] if schema is not None and label else None
    ds.class_names = list(class_feature.names) if isinstance(class_feature, ClassLabel) else []
    ds.manifest = manifest
    return ds


def _to_dense(example: Any) -> Any:
    """Ragged values padded to dense tensors (zeros / empty strings)."""
    return tf.nest.map_structure(
        lambda t: t.to_tensor() if isinstance(t, tf.RaggedTensor) else t, example)





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


# -- metric learning -------------------------------------------------------------------------


def _sampling_context(path: str | os.PathLike[str], split: str, features: Sequence[str] | None,
                      input_context: Any, storage: Storage
                      ) -> tuple[Manifest, Schema, list[str], int, int]:
    if not is_dataset_dir(path, storage):
        raise DatasetError(f"{os.fspath(path)}: class-balanced sampling needs a dataset "
                           f"directory with {MANIFEST_NAME}")
    read = plan_read(path, split, storage=storage)
    manifest, schema = read.manifest, read.schema
    assert manifest is not None and schema is not None  # a dataset directory has both
    names = list(features) if features is not None else list(schema)
    if manifest.label_feature is not None and manifest.label_feature not in names:
        names.append(manifest.label_feature)  # batches always carry their labels
    partition = (Partition.from_input_context(input_context) if input_context is not None
                 else Partition())
    return manifest, schema, names, partition.rank, partition.world_size


def _sampling_plan(schema: Schema, names: list[str], description: dict[str, Any], *,
                   decode: bool, image_size: tuple[int, int] | None, keep_aspect: bool,
                   augment: Augment | None, padding: Padding) -> _DecodePlan:
    """How P×K and triplet batches decode: in stored order, the one batch layout."""
    options = DecodeOptions(decode=decode, features=tuple(names), image_size=image_size,
                            keep_aspect=keep_aspect, padding=padding)
    layout = BatchLayout.of(schema, options)
    return _DecodePlan(description, {n: schema[n] for n in names}, layout, options, augment,
                       True)


def _step_number(start: Any) -> int:
    """An integer step: a Python or NumPy int, or an integer tensor / variable (such as
    ``optimizer.iterations``); never a bool, float or string."""
    if not isinstance(start, bool | np.bool_):
        try:
            return operator.index(start)
        except TypeError:
            dtype = getattr(start, "dtype", None)
            if dtype is not None and getattr(dtype, "is_integer", False):
                return int(start)
    raise StateError("start", f"must be a global step >= 0 (an int) or a state_dict(); "
                              f"got {type(start).__name__} {start!r:.40}")


def _global_steps(start: int | Mapping[str, Any], steps: int, repeat: bool,
                  sampler: Any) -> tuple[int, int | None]:
    """The first global step and how many follow (None: endlessly) for ``start``."""
    if isinstance(start, Mapping):
        probe = copy.copy(sampler)
        probe.load_state_dict(dict(start))  # refuses a malformed one, or other settings
        first = (state_int(start, "epoch", 0, MAX_EPOCH) * steps
                 + state_int(start, "step", 0, steps))
    else:
        first = _step_number(start)
        if not 0 <= first <= MAX_EPOCH * max(1, steps):
            raise StateError("start", f"{first} is not a global step >= 0")
    return first, None if repeat else steps - first % steps


def _step_dataset(first: int, count: int | None, fetch: Callable[[int], np.ndarray],
                  size: int) -> Any:
    """Global steps ``first, first + 1, ...`` mapped to their serialized records: a pure
    function of the step, so tf.train.Checkpoint can save and restore the iterator."""
    steps = tf.data.Dataset.range(first, first + count if count is not None else 2**62)
    return steps.map(lambda g: tf.ensure_shape(
        tf.numpy_function(lambda x: fetch(int(x)), [g], tf.string, stateful=False), [size]))


def _shard_label(schema: Schema | None, names: Sequence[str],
                 description: dict[str, Any]) -> str | None:
    """The label taken from the shard among ``names``, if any; its parsing spec is added to
    ``description`` (records get it appended before parsing)."""
    label = schema.shard_label if schema is not None else None
    if label is None or label not in names:
        return None
    description[label] = tf.io.FixedLenFeature([], tf.int64)
    return label


def _shard_entries(schema: Schema | None, label: str, classes: Sequence[int]) -> list[bytes]:
    """Per class (or file), the serialized label entry appended to its records: concatenated
    Example messages merge, so the parser reads the label as if the record held it."""
    feature = schema[label] if schema is not None else None
    assert isinstance(feature, ClassLabel)
    return [feature.shard_entry(label, int(c)) for c in classes]


def _with_shard_label(records: list[bytes], classes: np.ndarray, entries: list[bytes]
                      ) -> np.ndarray:
    """Records with their class's label entry appended (see :func:`_shard_entries`)."""
    return np.array([r + entries[c] for r, c in zip(records, classes.tolist(), strict=True)],
                    dtype=object)


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


def load_tf_pk_dataset(
    path: str | os.PathLike[str],
    split: str = "train",
    *,
    classes_per_batch: int,
    examples_per_class: int,
    seed: int = 0,
    decode: bool = True,
    features: Sequence[str] | None = None,
    image_size: tuple[int, int] | None = None,
    keep_aspect_ratio: bool = False,
    augment: Augment | None = None,
    padding: Padding = "pad",
    as_supervised: bool = False,
    epoch: Literal["classes", "examples"] = "classes",
    exclude_small: bool = False,
    repeat: bool = False,
    start: int | Mapping[str, Any] = 0,
    input_context: Any = None,
    max_open_files: int = 64,
    storage_options: dict[str, Any] | None = None,
) -> Any:
    """Class-balanced batches of P classes × K examples as a ``tf.data.Dataset``.

    Batches are class-major (K consecutive examples per class) and are drawn by
    :class:`~tfrecordkit.sampling.PKSampler` (see it for rounds, reshuffling, small classes and
    ``epoch``). Records are read by offset, with at most ``max_open_files`` files open, then
    parsed as a batch and decoded as :func:`load_tf_dataset` does. With ``input_context``
    each input pipeline gets different classes every step.

    The batch at global step ``g`` (step ``g % ds.steps_per_epoch`` of epoch
    ``g // ds.steps_per_epoch``) is a pure function of the seed and ``g``, so the dataset
    holds no hidden state: ``tf.train.Checkpoint(iterator=it)`` saves and restores an
    iterator exactly, and ``start`` (a global step such as ``optimizer.iterations``, or
    ``ds.state_at(step)``, JSON) resumes anywhere. Without ``repeat`` the dataset is the rest
    of ``start``'s epoch; with it, every later epoch follows (for ``model.fit``, give
    ``steps_per_epoch=ds.steps_per_epoch`` so each Keras epoch continues the plan).
    """
    from tfrecordkit.sampling import ClassIndex, PKSampler, RecordFetcher

    storage = Storage.of(path, storage_options)
    manifest, schema, names, rank, world = _sampling_context(path, split, features,
                                                            input_context, storage)
    index = ClassIndex.from_dataset(path, split, manifest, storage=storage)
    sampler = PKSampler(index, classes_per_batch, examples_per_class, seed=seed,
                        exclude_small=exclude_small, epoch=epoch, rank=rank, world_size=world)
    fetcher = RecordFetcher(index, max_open_files, storage=storage)
    size = classes_per_batch * examples_per_class
    steps = sampler.steps_per_epoch
    first, count = _global_steps(start, steps, repeat, sampler)

    description = feature_description(schema, names)
    shard_label = _shard_label(schema, names, description)
    entries = _shard_entries(schema, shard_label, range(len(manifest.class_names))
                             ) if shard_label else []
    class_of = np.repeat(index.classes, index.counts)

    def fetch(g: int) -> np.ndarray:
        positions = sampler.batch(*divmod(g, steps))
        records = fetcher.fetch(positions)
        if shard_label:
            return _with_shard_label(records, class_of[positions], entries)
        return np.array(records, dtype=object)

    ds = _step_dataset(first, count, fetch, size)
    plan = _sampling_plan(schema, names, description, decode=decode, image_size=image_size,
                          keep_aspect=keep_aspect_ratio, augment=augment, padding=padding)
    ds = _parse_and_decode(ds, plan, size, drop_remainder=True)
    if as_supervised:
        ds = _supervised(ds, manifest, schema, True)
    if count is not None:
        ds = ds.apply(tf.data.experimental.assert_cardinality(count))
    return _attach_state(_finish(ds, manifest, schema, True), sampler, fetcher, steps, first)


def load_tf_triplet_dataset(
    path: str | os.PathLike[str],
    split: str = "train",
    *,
    batch_size: int,
    seed: int = 0,
    decode: bool = True,
    features: Sequence[str] | None = None,
    image_size: tuple[int, int] | None = None,
    keep_aspect_ratio: bool = False,
    augment: Augment | None = None,
    padding: Padding = "pad",
    with_labels: bool = True,
    as_supervised: bool = False,
    repeat: bool = False,
    start: int | Mapping[str, Any] = 0,
    input_context: Any = None,
    max_open_files: int = 64,
    storage_options: dict[str, Any] | None = None,
) -> Any:
    """Batches of ``{"anchor", "positive", "negative"}`` examples as a ``tf.data.Dataset``.

    Every anchor is used once per epoch; the positive is another record of its class, the
    negative one of a different class (see :class:`~tfrecordkit.sampling.TripletSampler`).
    Each part keeps its label feature unless ``with_labels=False``; ``augment`` runs on each
    part. ``as_supervised`` gives ``((anchor, positive, negative), anchor_label)`` for
    ``model.fit``, each part its one remaining feature (or a dict of them).

    As with :func:`load_tf_pk_dataset`, triplet ``g`` (anchor ``g % anchors`` of epoch
    ``g // anchors``) is a pure function of the seed: the iterator can be checkpointed with
    ``tf.train.Checkpoint``, and ``start`` (a triplet number, or ``ds.state_at(n)``) resumes
    anywhere. Without ``repeat`` the dataset is the rest of ``start``'s epoch.
    """
    from tfrecordkit.sampling import ClassIndex, RecordFetcher, TripletSampler

    storage = Storage.of(path, storage_options)
    manifest, schema, names, rank, world = _sampling_context(path, split, features,
                                                            input_context, storage)
    label = manifest.label_feature
    if as_supervised and label is None:
        raise DatasetError(_no_label_hint(schema))
    if not with_labels and not as_supervised and label in names and (
            features is None or label not in features):
        names.remove(label)
    index = ClassIndex.from_dataset(path, split, manifest, storage=storage)
    sampler = TripletSampler(index, seed=seed, rank=rank, world_size=world)
    fetcher = RecordFetcher(index, max_open_files, storage=storage)
    anchors = sampler.anchors_per_epoch
    first, count = _global_steps(start, anchors, repeat, sampler)
    cache: dict[int, np.ndarray] = {}
    description = feature_description(schema, names)
    shard_label = _shard_label(schema, names, description)
    entries = _shard_entries(schema, shard_label, range(len(manifest.class_names))
                             ) if shard_label else []
    class_of = np.repeat(index.classes, index.counts)

    def fetch(g: int) -> np.ndarray:
        epoch, i = divmod(g, anchors)
        if epoch not in cache:  # an epoch's triplets, drawn once (a pure function of it)
            cache.clear()
            cache[epoch] = sampler.triplets(epoch)
        positions = cache[epoch][i]
        records = fetcher.fetch(positions)
        if shard_label:
            return _with_shard_label(records, class_of[positions], entries)
        return np.array(records, dtype=object)

    ds = _step_dataset(first, count, fetch, 3)
    plan = _sampling_plan(schema, names, description, decode=decode, image_size=image_size,
                          keep_aspect=keep_aspect_ratio, augment=augment, padding=padding)
    ds = _parse_and_decode(ds, plan, 3, drop_remainder=True)  # one triplet per element
    roles = ("anchor", "positive", "negative")
    if as_supervised:
        assert label is not None

        def supervised(e: Example) -> Any:
            parts = [{k: v[i] for k, v in e.items() if k != label} for i in range(3)]
            inputs = tuple(next(iter(p.values())) if len(p) == 1 else p for p in parts)
            return inputs, e[label][0]

        ds = ds.map(supervised, num_parallel_calls=AUTOTUNE, deterministic=True)
    else:
        ds = ds.map(lambda e: {role: tf.nest.map_structure(lambda t, i=i: t[i], e)
                               for i, role in enumerate(roles)},
                    num_parallel_calls=AUTOTUNE, deterministic=True)
    ds = ds.ragged_batch(batch_size) if padding == "ragged" else ds.padded_batch(batch_size)
    if count is not None:
        ds = ds.apply(tf.data.experimental.assert_cardinality(math.ceil(count / batch_size)))
    return _attach_state(_finish(ds, manifest, schema, True), sampler, fetcher, anchors, first)


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


__all__ += ["batch_hard_triplet_loss", "load_tf_pk_dataset", "load_tf_triplet_dataset"]
