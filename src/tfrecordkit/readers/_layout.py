"""The batch layout: for each feature read, what its values look like in a batch (keys, dtype,
one record's shape, which dimensions vary, how they pad), computed once from a schema and
the decode options. Every reader takes its structure from
here, so tf.data, NumPy, PyTorch, grain and Ray agree by construction."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence as Names
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from tfrecordkit.errors import DatasetError, OptionError
from tfrecordkit.schema import (
    SOURCE_FEATURE,
    Audio,
    ClassLabel,
    Feature,
    FeatureList,
    Image,
    KeySpec,
    Scalar,
    Schema,
    Sequence,
    Tensor,
    Text,
)

__all__ = ["BatchLayout", "FeatureLayout", "Kind"]

Kind = Literal["numbers", "bytes", "text", "tokens", "image", "audio"]
"""What a feature's values are: ``numbers`` (arrays), ``bytes``/``text`` (strings: bytes, or
``str`` outside TensorFlow), ``tokens`` (``{text, ids, mask}``), ``image`` (uint8 or float32
pixels), ``audio`` (``{samples, sample_rate}``)."""


@dataclass(frozen=True)
class FeatureLayout:
    """One feature in a batch.

    Attributes:
        name: the feature's name.
        kind: what its values are (see :data:`Kind`).
        dtype: the NumPy type of its numbers (pixels, samples); None for strings.
        shape: one record's value shape (audio: its samples'; tokens: its ids'), ``None``
            for a dimension that differs between records.
        length_axes: the dimensions a padded batch reports in ``lengths``: the ones that vary
            (an image's height and width, a sequence's length), or every dimension of a
            feature given a ``padded_shapes`` entry and no varying one. Empty: the feature
            batches as a plain array.
        padded_shape: the shape batches pad to (``None``: the batch's longest), if given.
        fill: the value padding fills in.
        cut_to: token ids are cut to at most this many (the options' ``text_length``), and
            batches pad to it unless ``padded_shape`` says otherwise.
        step_lengths: a feature list whose steps hold any number of values (shape
            ``(None, None)``): a record's value is a list of its steps' values, and padded
            batches give each step's length too (``"step_lengths"``, 0 for padding steps)
            beside the number of steps (``"lengths"``).
    """

    name: str
    kind: Kind
    dtype: np.dtype[Any] | None
    shape: tuple[int | None, ...]
    length_axes: tuple[int, ...] = ()
    padded_shape: tuple[int | None, ...] | None = None
    fill: Any = 0
    cut_to: int | None = None
    step_lengths: bool = False

    @property
    def varies(self) -> bool:
        """Whether batches give ``{"values", "lengths"}`` (lists when ragged)."""
        return bool(self.length_axes)

    @property
    def open_axes(self) -> tuple[int, ...]:
        """Dimensions the schema leaves open that are not lengths (an image's or audio's
        channels): every record of one padded batch must agree on them."""
        if self.kind not in ("image", "audio"):
            return ()
        return tuple(a for a, d in enumerate(self.shape) if d is None
                     and a not in self.length_axes)

    @property
    def token_width(self) -> int | None:
        """How many token ids every record has in a batch (the padded shape, else
        ``cut_to``); ``None``: as many as the batch's longest (tokens only)."""
        if self.padded_shape is not None:
            return self.padded_shape[0]
        return self.cut_to

    @property
    def ragged(self) -> bool:
        """Whether ``padding="ragged"`` batches list this feature's values (tf.data: a
        ``tf.RaggedTensor``): it has a dimension the schema leaves open, varying or not.
        Token ids with a fixed width (``text_length``, a padded shape) never are."""
        if self.kind == "tokens":
            return self.token_width is None
        return self.varies or bool(self.open_axes)


@dataclass(frozen=True)
class BatchLayout:
    """Every feature read, in order, and how batches hold them.

    Attributes:
        features: one :class:`FeatureLayout` per feature, in the order batches give them.
        padding: ``"pad"`` (``{"values", "lengths"}`` for varying features) or
            ``"ragged"`` (lists of arrays; tf.data: ``tf.RaggedTensor``).
        shard_label: the feature whose values come from each record's shard (per-class
            datasets), if it is read.
    """

    features: Mapping[str, FeatureLayout]
    padding: Literal["pad", "ragged"] = "pad"
    shard_label: str | None = None

    @property
    def names(self) -> list[str]:
        """The features' names, in order."""
        return list(self.features)

    @property
    def images(self) -> list[str]:
        """The features holding images."""
        return [n for n, f in self.features.items() if f.kind == "image"]

    def __getitem__(self, name: str) -> FeatureLayout:
        return self.features[name]

    @classmethod
    def of(cls, schema: Schema, options: Any) -> BatchLayout:
        """The layout of reading ``schema`` with ``options`` (a
        :class:`~tfrecordkit.readers.DecodeOptions`).

        Raises:
            DatasetError: ``options`` name features that are not there, or ask to resize
                images that aren't read.
        """
        known = list(schema)
        names = (list(options.features) if options.features is not None
                 else schema.user_features)
        if getattr(options, "provenance", False):
            if SOURCE_FEATURE not in schema:
                raise DatasetError(f"provenance=True, but these records carry no "
                                   f"{SOURCE_FEATURE!r}: only conversions of folders and "
                                   "tables store each record's input (unless turned off)")
            names = [*names, SOURCE_FEATURE] if SOURCE_FEATURE not in names else names
        unknown = [f for f in names if f not in known]
        if unknown:
            raise DatasetError(f"unknown features {unknown}; the schema has {known}")
        padded = dict(options.padded_shapes or {})
        fills = dict(options.padding_values or {})
        unknown = [n for n in (*padded, *fills) if n not in names]
        if unknown:
            raise DatasetError(f"padded_shapes/padding_values name {unknown}, which are not "
                               f"among the features read: {names}")
        layouts = {name: _with_padding(_of_feature(name, schema[name], options),
                                       padded.get(name), fills.get(name), options.text_length)
                   for name in names}
        if options.image_size is not None and not any(
                f.kind == "image" for f in layouts.values()):
            raise DatasetError(f"image_size={options.image_size} given, but none of {names} "
                               "is an image")
        label = schema.shard_label
        return cls(layouts, options.padding, label if label in names else None)


def stored_specs(schema: Schema, names: Names[str]) -> list[KeySpec]:
    """The Example keys the features ``names`` are stored under (``feature_description``'s)."""
    return schema.key_specs(list(names))


def stored_layout(specs: Names[KeySpec], padding: Literal["pad", "ragged"]) -> BatchLayout:
    """The layout of ``decode=False``: each stored key parsed but not decoded (numbers, or
    bytes: images and audio still encoded), batched by the same rules as decoded values."""
    return BatchLayout({s.key: _of_spec(s) for s in specs}, padding)


def _image_shape(size: tuple[int, int] | None, channels: int | None,
                 options: Any) -> tuple[int | None, ...]:
    height, width = options.image_size or size or (None, None)
    return (height, width, channels)


def _of_feature(name: str, feature: Feature, options: Any) -> FeatureLayout:
    """A schema feature's layout, before padding options."""
    if isinstance(feature, Image):
        shape = _image_shape(feature.size, feature.channels, options)
        dtype = np.dtype(options.image_dtype)
        return FeatureLayout(name, "image", dtype, shape, _axes(shape[:2]))
    if isinstance(feature, Audio):
        return FeatureLayout(name, "audio", np.dtype(np.float32), (None, None), (0,))
    if isinstance(feature, Tensor):
        return FeatureLayout(name, "numbers", np.dtype(feature.dtype), feature.shape,
                             _axes(feature.shape))
    if isinstance(feature, Text):
        if feature.has_ids:
            return FeatureLayout(name, "tokens", np.dtype(np.int64), (None,), ())
        return FeatureLayout(name, "text", None, ())
    if isinstance(feature, Sequence):
        inner = feature.feature
        if isinstance(inner, Text):
            return FeatureLayout(name, "text", None, (None,), (0,), fill="")
        if isinstance(inner, Scalar) and inner.dtype == "string":
            return FeatureLayout(name, "bytes", None, (None,), (0,), fill=b"")
        kind = (inner.list_kind if isinstance(inner, Scalar) else "int64")
        dtype = np.dtype(np.float32 if kind == "float" else np.int64)
        return FeatureLayout(name, "numbers", dtype, (None,), (0,))
    if isinstance(feature, FeatureList):
        return _steps_layout(name, feature.dtype, None if feature.varying_steps
                             else tuple(int(d) for d in feature.shape if d))
    if isinstance(feature, ClassLabel):
        return FeatureLayout(name, "numbers", np.dtype(np.int64), ())
    if isinstance(feature, Scalar):
        if feature.dtype == "string":
            return FeatureLayout(name, "bytes", None, ())
        return FeatureLayout(name, "numbers", np.dtype(feature.dtype), ())
    raise TypeError(f"no layout for {type(feature).__name__}")  # every kind is above


def _of_spec(spec: KeySpec) -> FeatureLayout:
    """A stored key, parsed and not decoded (``decode=False``)."""
    if spec.sequence:  # a feature list: any number of steps of the spec's shape
        return _steps_layout(spec.key, spec.dtype, spec.shape)
    shape = spec.shape if spec.shape is not None else (None,)
    if spec.dtype == "string":
        return FeatureLayout(spec.key, "bytes", None, shape, _axes(shape), fill=b"")
    return FeatureLayout(spec.key, "numbers", np.dtype(spec.dtype), shape, _axes(shape))


def _steps_layout(name: str, dtype: str, step: tuple[int, ...] | None) -> FeatureLayout:
    """A feature list's layout: any number of steps of shape ``step`` (None: of any
    length, their lengths read too)."""
    shape = (None, *step) if step is not None else (None, None)
    kind: Kind = "bytes" if dtype == "string" else "numbers"
    return FeatureLayout(name, kind, None if kind == "bytes" else np.dtype(dtype), shape, (0,),
                         fill=b"" if kind == "bytes" else 0, step_lengths=step is None)


def _axes(shape: tuple[int | None, ...]) -> tuple[int, ...]:
    return tuple(a for a, d in enumerate(shape) if d is None)


def _with_padding(layout: FeatureLayout, padded: tuple[int | None, ...] | None,
                  fill: float | None, text_length: int | None) -> FeatureLayout:
    """The layout with the options' padded shape and fill."""
    if layout.kind == "tokens":
        if padded is not None and len(padded) != 1:
            raise OptionError(f"padded_shapes[{layout.name!r}] = {padded}: token ids have "
                              "one dimension")
        return FeatureLayout(layout.name, "tokens", layout.dtype, layout.shape, (),
                             padded, 0 if fill is None else fill, text_length)
    if padded is not None and len(padded) != len(layout.shape):
        raise OptionError(f"padded_shapes[{layout.name!r}] = {padded} has {len(padded)} "
                          f"dimension(s); the values have {len(layout.shape)}")
    if padded is not None and layout.kind in ("bytes", "text"):
        raise OptionError(f"padded_shapes[{layout.name!r}]: strings pad to the batch's "
                          "longest only")
    axes = layout.length_axes
    if padded is not None and not axes:
        axes = tuple(range(len(layout.shape)))
    value = layout.fill if fill is None else fill
    return FeatureLayout(layout.name, layout.kind, layout.dtype, layout.shape, axes,
                         padded, value, step_lengths=layout.step_lengths)
