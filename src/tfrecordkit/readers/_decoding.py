"""From serialized records to a batch of NumPy values, the same way for every TF-free reader
(NumPy, PyTorch, grain): which features, decoded or raw, images resized, shapes padded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Sequence as Names
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from tfrecordkit.errors import DatasetError, OptionError, SchemaError
from tfrecordkit.format._columns import parse_examples
from tfrecordkit.readers._image import resize_image, resize_image_with_pad
from tfrecordkit.schema import (
    Audio,
    ClassLabel,
    Feature,
    Image,
    KeySpec,
    Scalar,
    Schema,
    Sequence,
    Tensor,
    Text,
    decode_image_bytes,
)

__all__ = ["DecodeOptions", "Padding", "RecordDecoder", "batch_values", "decode_options"]

Padding = Literal["pad", "ragged"]
_CHUNK = 32  # records per decoding task: small enough to share a batch between threads


@dataclass(frozen=True)
class DecodeOptions:
    """How records become values.

    Attributes:
        decode: False returns the serialized records (``"record"``) instead of values.
        features: the features to return (default: all of the schema's).
        image_size: resize every image to ``(height, width)`` with ``tf.image.resize``'s
            arithmetic (bilinear, half-pixel centres); ``keep_aspect`` fits and pads instead.
        padding: variable shapes in a batch are zero-padded with a ``lengths`` array
            (``"pad"``) or kept as a list of arrays (``"ragged"``).
        fast_resize: with ``image_size``, decode JPEGs at 1/2, 1/4 or 1/8 scale when the
            target allows (several times faster; pixels then differ slightly from a full
            decode + resize, and from what ``load_tf_dataset`` gives). Off by default, so
            every reader gives the same pixels.
        image_dtype: ``"uint8"`` pixels as stored, or ``"float32"`` scaled to [0, 1].
        mean, std: with ``"float32"``, normalise to ``(x - mean) / std`` (one value, or one
            per channel), e.g. ImageNet's ``(0.485, 0.456, 0.406)``, ``(0.229, 0.224, 0.225)``.
            Augmentations see the images after this.
        sample_rate: resample every audio feature to this rate in Hz (libsoxr, high
            quality); audio always comes with its ``sample_rate``.
        padded_shapes: per feature, the shape its values are padded to in a batch, ``None``
            for a dimension padded to the batch's longest, e.g. ``{"image": (256, None, 3)}``
            (for audio, the samples' ``(frames, channels)``; for token ids, ``(length,)``).
            A value larger than its shape is an error naming the record. Batches then give
            ``{"values", "lengths"}`` for these features.
        padding_values: per feature, the value padding fills in (default 0).
        text_length: texts with token ids: cut the ids to at most this many, and pad every
            batch to exactly this many (else to the batch's longest). Batches give
            ``{"text", "ids", "mask"}``; ``mask`` is False on padding.
    """

    decode: bool = True
    features: tuple[str, ...] | None = None
    image_size: tuple[int, int] | None = None
    keep_aspect: bool = False
    padding: Padding = "pad"
    fast_resize: bool = False
    image_dtype: Literal["uint8", "float32"] = "uint8"
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    sample_rate: int | None = None
    padded_shapes: Mapping[str, tuple[int | None, ...]] | None = None
    padding_values: Mapping[str, float] | None = None
    text_length: int | None = None

    def __post_init__(self) -> None:
        if self.text_length is not None and (
                not isinstance(self.text_length, int | np.integer) or self.text_length < 1):
            raise OptionError(f"text_length must be a positive number of tokens; got "
                             f"{self.text_length!r}")
        if self.padded_shapes is not None:
            shapes = {}
            for name, shape in dict(self.padded_shapes).items():
                dims = (shape,) if isinstance(shape, int) or shape is None else tuple(shape)
                if not all(d is None or (isinstance(d, int | np.integer) and d > 0)
                           for d in dims):
                    raise OptionError(f"padded_shapes[{name!r}] must hold positive sizes or "
                                     f"None; got {shape!r}")
                shapes[name] = tuple(None if d is None else int(d) for d in dims)
            object.__setattr__(self, "padded_shapes", shapes)
            if self.padding != "pad":
                raise OptionError("padded_shapes pads batches: it needs padding='pad'")
        if self.padding_values is not None:
            object.__setattr__(self, "padding_values", dict(self.padding_values))
        if self.sample_rate is not None and (
                not isinstance(self.sample_rate, int | np.integer) or self.sample_rate <= 0):
            raise OptionError(f"sample_rate must be a positive number of Hz; got "
                             f"{self.sample_rate!r}")
        if self.image_dtype not in ("uint8", "float32"):
            raise OptionError(f"image_dtype must be 'uint8' or 'float32'; got "
                             f"{self.image_dtype!r}")
        for name in ("mean", "std"):
            value = getattr(self, name)
            if value is None:
                continue
            if self.image_dtype != "float32":
                raise OptionError(f"{name} normalises float32 images: give "
                                 "image_dtype='float32'")
            values = (float(value),) if isinstance(value, int | float) else tuple(
                float(v) for v in value)
            if not 1 <= len(values) <= 4 or (name == "std" and min(values) <= 0):
                raise OptionError(f"{name} must be 1 to 4 numbers{' above 0' * (name == 'std')}"
                                 f"; got {value!r}")
            object.__setattr__(self, name, values)
        if self.features is not None:
            if isinstance(self.features, str):
                raise OptionError(f"features must be a list of names; got {self.features!r}")
            object.__setattr__(self, "features", tuple(self.features))
        if self.image_size is not None:
            size = tuple(int(d) for d in self.image_size)
            if len(size) != 2 or min(size) < 1:
                raise OptionError(f"image_size must be (height, width), both positive; got "
                                 f"{self.image_size!r}")
            object.__setattr__(self, "image_size", size)
        if self.padding not in ("pad", "ragged"):
            raise OptionError(f"padding must be 'pad' or 'ragged'; got {self.padding!r}")


def scale_image(pixels: np.ndarray, options: DecodeOptions) -> np.ndarray:
    """Pixels as :class:`DecodeOptions` asks: uint8 as they are, or float32 in [0, 1],
    normalised by ``mean``/``std`` (the same float32 operations tf.data runs)."""
    if options.image_dtype == "uint8":
        return pixels
    out: np.ndarray = pixels.astype(np.float32) / np.float32(255.0)
    if options.mean is not None:
        out = out - np.asarray(options.mean, dtype=np.float32)
    if options.std is not None:
        out = out / np.asarray(options.std, dtype=np.float32)
    return out


def batch_values(values: list[Any], padding: str = "pad", dtype: Any = None, *,
                 shape: tuple[int | None, ...] | None = None, fill: float = 0,
                 varies: bool = False) -> Any:
    """Per-record values of one feature as a batch: arrays stacked; variable shapes padded
    with ``fill`` (plus a ``lengths`` array of each record's shape) or kept as a list
    (``padding="ragged"``); dicts batched key by key; text and bytes as lists. ``dtype`` is
    the numbers' type (else each value's own). ``shape`` fixes the padded shape (``None``
    dimensions: the batch's longest); a value larger than it raises ``ValueError`` naming
    its position in the batch. ``varies`` (a feature whose shape the schema leaves open)
    pads or lists even a batch whose values happen to agree, so every batch of a feature
    has one structure."""
    first = values[0]
    if isinstance(first, dict):
        return {k: batch_values([v[k] for v in values], padding,
                                shape=shape if k in PADDED_KEYS else None, fill=fill,
                                varies=varies and k in PADDED_KEYS)
                for k in first}
    if dtype is None and (isinstance(first, str | bytes) or (isinstance(first, list) and (
            not first or isinstance(first[0], str | bytes)))):
        return list(values)
    arrays = [np.asarray(v, dtype=dtype) for v in values]
    shapes = {a.shape for a in arrays}
    if shape is None and not varies and len(shapes) == 1:
        return np.stack(arrays)
    if padding == "ragged":
        return arrays
    ndim = arrays[0].ndim
    lengths = np.array([a.shape for a in arrays], dtype=np.int64).reshape(len(arrays), ndim)
    target = lengths.max(axis=0).tolist() if arrays else [0] * ndim
    if shape is not None:
        if len(shape) != ndim:
            raise OptionError(f"padded shape {shape} has {len(shape)} dimension(s); the "
                             f"values have {ndim}")
        for axis, size in enumerate(shape):
            if size is None:
                continue
            too_big = np.flatnonzero(lengths[:, axis] > size)
            if too_big.size:
                raise OptionError(f"value {int(too_big[0])} of the batch has shape "
                                 f"{tuple(lengths[too_big[0]].tolist())}, larger than the "
                                 f"padded shape {shape}")
            target[axis] = size
    out = np.full((len(arrays), *target), fill, dtype=arrays[0].dtype)
    for i, a in enumerate(arrays):
        region: tuple[int | slice, ...] = (i, *[slice(0, d) for d in a.shape])
        out[region] = a
    return {"values": out, "lengths": lengths}


PADDED_KEYS = ("samples", "ids", "mask")  # what a padded shape applies to in dict values


def shape_varies(feature: Feature, options: DecodeOptions) -> bool:
    """Whether the schema leaves the shape of a feature's decoded values open (so batches
    pad them, or list them when ragged, always)."""
    if isinstance(feature, Image):
        return options.image_size is None and feature.fixed_shape is None
    if isinstance(feature, Tensor):
        return feature.variable
    return isinstance(feature, Audio | Sequence)


def number_dtype(feature: Feature) -> np.dtype[Any] | None:
    """The NumPy type of a numeric feature's values as ``load_tf_dataset`` gives them
    (scalars cast to their dtype, sequences as their int64/float32 list), else None."""
    inner = feature.feature if isinstance(feature, Sequence) else feature
    if isinstance(inner, ClassLabel):
        return np.dtype(np.int64)
    if isinstance(inner, Scalar) and inner.dtype != "string":
        if isinstance(feature, Sequence):
            return np.dtype(np.float32 if inner.list_kind == "float" else np.int64)
        return np.dtype(inner.dtype)
    return None


class RecordDecoder:
    """Decodes lists of serialized records into batches, per :class:`DecodeOptions`: with a
    schema, or, for files without one, with parsing specs (plus the keys holding images)."""

    def __init__(self, schema: Schema | None, options: DecodeOptions,
                 specs: Names[KeySpec] = (), images: Names[str] = ()) -> None:
        known = list(schema) if schema is not None else [s.key for s in specs]
        names = list(options.features) if options.features is not None else known
        unknown = [f for f in names if f not in known]
        if unknown:
            what = "the schema has" if schema is not None else "the records hold"
            raise DatasetError(f"unknown features {unknown}; {what} {known}")
        self.schema, self.options, self.features = schema, options, names
        self._specs = {s.key: s for s in specs if s.key in names}
        if schema is not None:
            self._images = {n for n in names if isinstance(schema[n], Image)}
            self._dtypes = {n: t for n in names if (t := number_dtype(schema[n])) is not None}
        else:
            self._images = {n for n in images if n in names}
            self._dtypes = {n: np.dtype(s.dtype) for n, s in self._specs.items()
                            if s.dtype != "string" and n not in self._images}
        self._padded = dict(options.padded_shapes or {})
        if schema is not None:
            self._varies = {n for n in names if shape_varies(schema[n], options)}
        else:
            self._varies = {n for n, s in self._specs.items() if s.shape is None} | (
                self._images if options.image_size is None else set())
        self._token_ids = {n for n in names if schema is not None
                           and isinstance(f := schema[n], Text) and f.has_ids}
        label = schema.shard_label if schema is not None else None
        self.shard_label = label if label in names else None
        unknown = [n for n in (*self._padded, *(options.padding_values or {})) if n not in names]
        if unknown:
            raise DatasetError(f"padded_shapes/padding_values name {unknown}, which are not "
                               f"among the features read: {names}")
        size = options.image_size
        self._min_size = size if size is not None and options.fast_resize else None
        if size is not None and not self._images:
            raise DatasetError(f"image_size={size} given, but none of {names} is an image")

    def number_dtype(self, name: str) -> np.dtype[Any] | None:
        """The NumPy type of feature ``name``'s numbers (None: not numbers)."""
        return self._dtypes.get(name)

    @property
    def heavy(self) -> bool:
        """Whether records take long to decode (images, audio): worth splitting finely."""
        if self.schema is None:
            return bool(self._images)
        return any(isinstance(self.schema[n], Image | Audio) for n in self.features)

    def decode_columns(self, records: list[bytes], where: Callable[[int], Any],
                       classes: np.ndarray | None = None) -> dict[str, Any]:
        """The records' values feature by feature (arrays for numbers, else per-record
        lists), through one columnar pass; ``where(i)`` names record ``i`` in errors;
        ``classes`` are the records' shard classes (needed when :attr:`shard_label` is
        set: a label taken from the shard)."""
        if self.schema is not None:
            columns = self.schema.decode_batch(records, features=self.features, where=where,
                                               image_min_size=self._min_size,
                                               audio_sample_rate=self.options.sample_rate,
                                               shard_classes=classes)
        else:
            columns = self._columns_by_specs(records, where)
        if self.options.image_size is not None:
            resize = resize_image_with_pad if self.options.keep_aspect else resize_image
            for name in self._images:
                images = columns[name]
                for i, image in enumerate(images):
                    try:
                        images[i] = resize(image, self.options.image_size)
                    except ValueError as err:
                        raise SchemaError(name, str(err), record=where(i)) from None
        if self.options.image_dtype != "uint8":
            for name in self._images:
                columns[name] = [scale_image(image, self.options) for image in columns[name]]
        return columns

    def _columns_by_specs(self, records: list[bytes], where: Callable[[int], Any]
                          ) -> dict[str, Any]:
        """Files without a schema: the inferred specs' columns as values (images decoded)."""
        columns = parse_examples(records, list(self._specs.values()), where=where)
        out: dict[str, Any] = {}
        for name, spec in self._specs.items():
            column, n = columns[name], len(records)
            if name in self._images:  # one encoded image per record (its spec's shape is ())
                images = []
                for i, data in enumerate(column.to_bytes()):
                    try:
                        images.append(decode_image_bytes(data, min_size=self._min_size))
                    except (OSError, ValueError) as err:
                        raise SchemaError(name, f"cannot decode: {err}",
                                          record=where(i)) from None
                out[name] = images
            elif spec.dtype == "string":
                out[name] = (column.to_bytes() if spec.shape == ()
                             else [column.row(i) for i in range(n)])
            elif spec.shape is None:
                out[name] = [column.row(i) for i in range(n)]
            else:
                out[name] = column.values
        return out

    def decode_rows(self, records: list[bytes], where: Callable[[int], Any],
                    classes: np.ndarray | None = None) -> list[dict[str, Any]]:
        """Each record's values, as :meth:`decode_columns` finds them."""
        columns = self.decode_columns(records, where, classes)
        return [{name: columns[name][i] for name in self.features}
                for i in range(len(records))]

    def decode_one(self, record: bytes, source: str | int | None = None,
                   shard_class: int | None = None) -> dict[str, Any]:
        """One record's values (images resized per the options)."""
        classes = None if shard_class is None else np.array([shard_class])
        return self.decode_rows([record], lambda _: source, classes)[0]

    def assemble_columns(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        """Parts from :meth:`decode_columns` as one batch, as :meth:`assemble` makes it."""
        batch = {}
        for name in self.features:
            pieces = [p[name] for p in parts]
            dtype = self._dtypes.get(name)
            if name not in self._padded and name not in self._varies and all(
                    isinstance(x, np.ndarray) and x.ndim >= 1 for x in pieces):
                joined = np.concatenate(pieces)
                batch[name] = joined.astype(dtype) if dtype is not None else joined
            else:
                batch[name] = self._batch(name, [v for x in pieces for v in x], dtype)
        return batch

    def _batch(self, name: str, values: list[Any], dtype: Any) -> Any:
        """One feature's values as a batch, padded as the options say."""
        if name in self._token_ids:
            return self._batch_token_ids(name, values)
        try:
            return batch_values(values, self.options.padding, dtype,
                                shape=self._padded.get(name),
                                fill=(self.options.padding_values or {}).get(name, 0),
                                varies=name in self._varies)
        except ValueError as err:
            raise SchemaError(name, str(err)) from None

    def _batch_token_ids(self, name: str, values: list[dict[str, Any]]) -> dict[str, Any]:
        """Texts with token ids as a batch: ``{"text", "ids", "mask"}``, ids cut to
        ``text_length`` and padded (to it, or to the longest) with ``0``; ragged: lists."""
        limit = self.options.text_length
        ids = [np.asarray(v["ids"], np.int64)[:limit] for v in values]
        texts = [v["text"] for v in values]
        if self.options.padding == "ragged":
            return {"text": texts, "ids": ids, "mask": [np.ones(len(i), bool) for i in ids]}
        fixed = self._padded.get(name)
        width = limit if limit is not None else max((len(i) for i in ids), default=0)
        if fixed is not None and fixed[0] is not None:
            too_long = [k for k, i in enumerate(ids) if len(i) > fixed[0]]
            if too_long:
                raise SchemaError(name, f"value {too_long[0]} of the batch has "
                                        f"{len(ids[too_long[0]])} token ids, more than the "
                                        f"padded shape {fixed} (give text_length to cut)")
            width = fixed[0]
        padded = np.zeros((len(ids), width), np.int64)
        mask = np.zeros((len(ids), width), bool)
        for k, row in enumerate(ids):
            padded[k, : len(row)] = row
            mask[k, : len(row)] = True
        return {"text": texts, "ids": padded, "mask": mask}

    def assemble(self, rows: list[Any]) -> dict[str, Any]:
        """Rows from :meth:`decode_rows` (or serialized records, without decoding) as a batch."""
        if not self.options.decode:
            return {"record": np.array(rows, dtype=object)}
        return {name: self._batch(name, [r[name] for r in rows], self._dtypes.get(name))
                for name in self.features}

    def decode_batch(self, records: list[bytes], where: Callable[[int], Any],
                     pool: Executor | None = None, classes: np.ndarray | None = None
                     ) -> dict[str, Any]:
        """A batch of records; ``where(i)`` names record ``i`` in errors; ``classes`` as
        :meth:`decode_columns` takes them. With ``pool``, heavy records (images, audio)
        decode in chunks on its threads."""
        if not self.options.decode:
            return self.assemble(records)
        if pool is None or not self.heavy or len(records) <= _CHUNK:
            return self.assemble_columns([self.decode_columns(records, where, classes)])
        starts = range(0, len(records), _CHUNK)
        parts = pool.map(lambda s: self.decode_columns(
            records[s : s + _CHUNK], lambda i: where(s + i),
            None if classes is None else classes[s : s + _CHUNK]), starts)
        return self.assemble_columns(list(parts))


def decode_options(options: DecodeOptions | None, *, decode: bool = True,
                   features: Names[str] | None = None,
                   image_size: tuple[int, int] | None = None, padding: Padding = "pad",
                   image_dtype: Literal["uint8", "float32"] = "uint8",
                   ) -> DecodeOptions:
    """``options`` if given (then the keywords must be left at their defaults), else one
    built from the keywords."""
    if options is None:
        chosen = tuple(features) if features is not None else None
        return DecodeOptions(decode=decode, features=chosen, image_size=image_size,
                             padding=padding, image_dtype=image_dtype)
    if (decode, features, image_size, padding, image_dtype) != (True, None, None, "pad",
                                                                "uint8"):
        raise OptionError("give either options= or the decode keywords, not both")
    return options
