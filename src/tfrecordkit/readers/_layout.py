"""The batch layout: for each feature read, what its values look like in a batch (keys, dtype,
one record's shape, which dimensions vary, how they pad), computed once from a schema (each
kind gives its own, :meth:`~tfrecordkit.schema.Feature.layout`) and the decode options.
Every reader takes its structure from here, so tf.data, NumPy, PyTorch, grain and Ray agree by
construction."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence as Names
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tfrecordkit.errors import DatasetError, OptionError
from tfrecordkit.schema import (
    SOURCE_FEATURE,
    Boxes,
    FeatureLayout,
    KeySpec,
    Kind,
    Schema,
    axes_of,
    steps_layout,
)

__all__ = ["BatchLayout", "FeatureLayout", "Kind"]

@dataclass(frozen=True)
class BatchLayout:
    """Every feature read, in order, and how batches hold them.

    Attributes:
        features: one :class:`FeatureLayout` per feature, in the order batches give them.
        padding: ``"pad"`` (``{"values", "lengths"}`` for varying features) or
            ``"ragged"`` (lists of arrays; tf.data: ``tf.RaggedTensor``).
        shard_label: the feature whose values come from each record's shard (per-class
            datasets), if it is read.
        follows: features whose values are positions in an image (boxes), each with the
            image feature whose crop, letterbox or flip moves them (when one is asked).
    """

    features: Mapping[str, FeatureLayout]
    padding: Literal["pad", "ragged"] = "pad"
    shard_label: str | None = None
    follows: Mapping[str, str] = field(default_factory=dict)

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
        if ((getattr(options, "crop", None) is not None or getattr(options, "flip", False))
                and getattr(options, "image_size", None) is None):
            raise OptionError("crop and flip work on resized images: give image_size (the "
                              "loader's keyword, or DecodeOptions(image_size=))")
        names = _names_read(schema, options)
        padded = dict(options.padded_shapes or {})
        fills = dict(options.padding_values or {})
        unknown = [n for n in (*padded, *fills) if n not in names]
        if unknown:
            raise DatasetError(f"padded_shapes/padding_values name {unknown}, which are not "
                               f"among the features read: {names}")
        layouts = {name: _with_padding(schema[name].layout(name, options),
                                       padded.get(name), fills.get(name), options.text_length)
                   for name in names}
        if options.image_size is not None and not any(
                f.kind == "image" for f in layouts.values()):
            raise DatasetError(f"image_size={options.image_size} given, but none of {names} "
                               "is an image")
        label = schema.shard_label
        # Boxes are fractions of their image: a plain resize leaves them as stored; a crop,
        # a flip or a letterbox moves them (with the image each follows).
        moves = options.image_size is not None and getattr(options, "decode", True) and (
            getattr(options, "crop", None) is not None or getattr(options, "flip", False)
            or getattr(options, "keep_aspect", False))
        follows = _images_followed(schema, layouts) if moves else {}
        _refuse_unmoved(schema, follows)
        return cls(layouts, options.padding, label if label in names else None, follows)


def _refuse_unmoved(schema: Schema, follows: Mapping[str, str]) -> None:
    """Refuse moving boxes whose per-object fields a move would leave behind.

    Raises:
        OptionError: a boxes feature that follows a moved image keeps a field as written in
            the source image's coordinates (COCO's segmentation), naming it.
    """
    boxes = schema.of_kind(Boxes)
    for name in follows:
        written = boxes[name].as_written if name in boxes else ()
        if written:
            raise OptionError(f"feature {name!r}: its per-object field {written[0]!r} is kept "
                              "as written, in the source image's coordinates, which a crop, "
                              "flip or letterbox would not move: read without those options, "
                              "or without the feature (DecodeOptions(features=...))")


def _names_read(schema: Schema, options: Any) -> list[str]:
    """The features ``options`` read (with provenance when asked), checked to be there.

    Raises:
        DatasetError: an unknown feature, or provenance asked of records without it.
    """
    known = list(schema)
    names = list(options.features) if options.features is not None else schema.user_features
    if getattr(options, "provenance", False):
        if SOURCE_FEATURE not in schema:
            raise DatasetError(f"provenance=True, but these records carry no "
                               f"{SOURCE_FEATURE!r}: only conversions of folders and "
                               "tables store each record's input (unless turned off)")
        names = [*names, SOURCE_FEATURE] if SOURCE_FEATURE not in names else names
    unknown = [f for f in names if f not in known]
    if unknown:
        raise DatasetError(f"unknown features {unknown}; the schema has {known}")
    return names


def _images_followed(schema: Schema, layouts: Mapping[str, FeatureLayout]) -> dict[str, str]:
    """For each feature read whose values are positions in an image (boxes), the image
    feature read that they follow: the only image, or the one whose name shares the boxes'
    first path segment (``image/object`` follows ``image/encoded`` or ``image``).

    Raises:
        DatasetError: several images read could be theirs.
    """
    images = [n for n, f in layouts.items() if f.kind == "image"]
    out = {}
    for name in layouts:
        if not schema[name].in_image:
            continue
        prefix = name.split("/")[0]
        candidates = images if len(images) <= 1 else [
            n for n in images if n.split("/")[0] == prefix]
        if len(candidates) != 1:  # (image_size with no image read is refused before)
            raise DatasetError(f"the boxes {name!r} follow their image when images are "
                               "cropped, letterboxed or flipped, but it could be any of "
                               f"{candidates or images}: read one image with them "
                               "(DecodeOptions(features=[...]))")
        out[name] = candidates[0]
    return out


def stored_specs(schema: Schema, names: Names[str]) -> list[KeySpec]:
    """The Example keys the features ``names`` are stored under (``feature_description``'s)."""
    return schema.key_specs(list(names))


def stored_layout(specs: Names[KeySpec], padding: Literal["pad", "ragged"]) -> BatchLayout:
    """The layout of ``decode=False``: each stored key parsed but not decoded (numbers, or
    bytes: images and audio still encoded), batched by the same rules as decoded values."""
    return BatchLayout({s.key: _of_spec(s) for s in specs}, padding)


def _of_spec(spec: KeySpec) -> FeatureLayout:
    """A stored key, parsed and not decoded (``decode=False``)."""
    if spec.sequence:  # a feature list: any number of steps of the spec's shape
        return steps_layout(spec.key, spec.dtype, spec.shape)
    shape = spec.shape if spec.shape is not None else (None,)
    if spec.dtype == "string":
        return FeatureLayout(spec.key, "bytes", None, shape, axes_of(shape), fill=b"")
    return FeatureLayout(spec.key, "numbers", np.dtype(spec.dtype), shape, axes_of(shape))


def _with_padding(layout: FeatureLayout, padded: tuple[int | None, ...] | None,
                  fill: float | None, text_length: int | None) -> FeatureLayout:
    """The layout with the options' padded shape and fill."""
    if layout.parts is not None:
        if padded is not None or fill is not None:
            raise OptionError(f"padded_shapes / padding_values[{layout.name!r}]: its parts "
                              f"({', '.join(layout.parts)}) pad to the batch's longest, "
                              "with zeros")
        return layout
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
