"""A feature's values in a batch (keys, dtype, one record's shape, which dimensions vary,
how they pad): what each kind answers through :meth:`Feature.layout`, and every reader builds
its batches from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

__all__ = ["FeatureLayout", "Kind", "LayoutOptions", "axes_of", "steps_layout"]

Kind = Literal["numbers", "bytes", "text", "tokens", "image", "audio", "parts"]
"""What a feature's values are: ``numbers`` (arrays), ``bytes``/``text`` (strings: bytes, or
``str`` outside TensorFlow), ``tokens`` (``{text, ids, mask}``), ``image`` (uint8 or float32
pixels), ``audio`` (``{samples, sample_rate}``), ``parts`` (a dict of named parts, each
batched by its own layout: ``Boxes``' ``{boxes, labels}``)."""


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
        parts: for kind ``parts``, each part's layout by key: a value is a dict of them, and
            batches give each part batched by its own layout.
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
    parts: Mapping[str, FeatureLayout] | None = None

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


class LayoutOptions(Protocol):
    """The decode options a layout depends on (a :class:`~tfrecordkit.readers.DecodeOptions`)."""

    @property
    def image_size(self) -> tuple[int, int] | None: ...

    @property
    def image_dtype(self) -> str: ...


def axes_of(shape: tuple[int | None, ...]) -> tuple[int, ...]:
    """The dimensions of ``shape`` that differ between records (``None``)."""
    return tuple(a for a, d in enumerate(shape) if d is None)


def steps_layout(name: str, dtype: str, step: tuple[int, ...] | None) -> FeatureLayout:
    """A feature list's layout: any number of steps of shape ``step`` (None: of any
    length, their lengths read too)."""
    shape = (None, *step) if step is not None else (None, None)
    kind: Kind = "bytes" if dtype == "string" else "numbers"
    return FeatureLayout(name, kind, None if kind == "bytes" else np.dtype(dtype), shape, (0,),
                         fill=b"" if kind == "bytes" else 0, step_lengths=step is None)
