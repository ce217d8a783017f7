"""How records become values, as one object every reader takes: :class:`DecodeOptions`, and
how an entry point's shortcut keywords combine with it (:func:`decode_options`)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from tfrecordkit.errors import OptionError

__all__ = ["DecodeOptions", "Padding", "decode_options", "thread_count", "threads_per_worker"]

Padding = Literal["pad", "ragged"]


@dataclass(frozen=True)
class DecodeOptions:
    """How records become values.

    Attributes:
        decode: False returns each feature's stored Example keys parsed but not decoded (images
            and audio still encoded), in every reader.
        features: the features to return (default: all of the schema's).
        image_size: resize every image to ``(height, width)`` (an int ``n``: ``(n, n)``) with
            ``tf.image.resize``'s arithmetic (bilinear, half-pixel centres); ``keep_aspect``
            fits and pads instead.
        padding: variable shapes in a batch are zero-padded with a ``lengths`` array
            (``"pad"``) or kept as a list of arrays (``"ragged"``).
        fast_resize: with ``image_size``, decode JPEGs at 1/2, 1/4 or 1/8 scale when the
            target allows (several times faster; pixels then differ slightly from a full
            decode + resize, and from what ``load_tf_dataset`` gives). Off by default, so
            every reader gives the same pixels.
        image_dtype: ``"uint8"`` pixels as stored, or ``"float32"`` scaled to [0, 1].
        mean, std: with ``"float32"``, normalise to ``(x - mean) / std`` (one value, or one
            per channel), e.g. ImageNet's ``(0.485, 0.456, 0.406)``, ``(0.229, 0.224, 0.225)``:
            in the pixels' [0, 1] units (a value above 1, 0-255 units, is refused with the
            value divided by 255).
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
        provenance: also return ``"__source"``: each record's input (its path relative to
            the folder converted, or ``table.csv:row``), as conversion stored it.
        crop: with ``image_size``, the ImageNet recipe's window, cut from the full decode
            (integer pixels) and then resized: ``"random"`` (training: torchvision's
            random-resized-crop rule, ``crop_scale`` of the area, aspect in ``crop_ratio``),
            ``"center"`` (evaluation: the centred window of the target's aspect, sides cut to
            ``crop_fraction``). Random windows are a pure function of (seed, epoch, record
            id): every reader cuts the same pixels, and resume repeats them.
        flip: mirror each image left to right with probability 1/2, keyed like ``crop``.
        crop_scale, crop_ratio, crop_fraction: see ``crop``.
        box_min_size, box_min_area: boxes (a :class:`~tfrecordkit.schema.Boxes` feature)
            follow their image through crops, resizes, letterboxing and flips; after a crop
            each box is clipped to the window, and a box left narrower or lower than
            ``box_min_size`` output pixels, or smaller than ``box_min_area`` square pixels,
            is dropped with its label (torchvision v2's ``SanitizeBoundingBoxes`` rule and
            defaults, 1 and 1).
        augment: a function run on each record's decoded values before batching. NumPy and
            PyTorch loaders call ``augment(values, rng)`` with an ``rng`` seeded by (seed,
            epoch, record id), so augmentation repeats exactly on resume and does not depend
            on threads, workers or ranks (picklable, e.g. a module-level function, for
            DataLoader workers); tf.data calls ``augment(example)`` (a function or a list of
            them, e.g. ``tk.random_flip``) in its parallel map.
        as_supervised: tf.data only: yield ``(inputs, label)`` for ``model.fit``, ``inputs``
            the one remaining feature or a dict of them.
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
    provenance: bool = False
    crop: Literal["random", "center"] | None = None
    flip: bool = False
    crop_scale: tuple[float, float] = (0.08, 1.0)
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)
    crop_fraction: float = 0.875
    box_min_size: float = 1.0
    box_min_area: float = 1.0
    augment: Any = None
    as_supervised: bool = False

    def __post_init__(self) -> None:
        if self.augment is not None and not self.decode:
            raise OptionError("augment needs decoded values (decode=True)")
        for name, unit in (("text_length", "number of tokens"), ("sample_rate", "number of Hz")):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int | np.integer) or value < 1):
                raise OptionError(f"{name} must be a positive {unit}; got {value!r}")
        self._check_padded_shapes()
        if self.padding_values is not None:
            object.__setattr__(self, "padding_values", dict(self.padding_values))
        if self.image_dtype not in ("uint8", "float32"):
            raise OptionError(f"image_dtype must be 'uint8' or 'float32'; got "
                             f"{self.image_dtype!r}")
        self._check_normalisation()
        self._check_features()
        self._check_image_size()
        if self.padding not in ("pad", "ragged"):
            raise OptionError(f"padding must be 'pad' or 'ragged'; got {self.padding!r}")
        self._check_crop()

    def _check_normalisation(self) -> None:
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
            if max(abs(v) for v in values) > 1:
                # float32 pixels are in [0, 1]: 0-255 statistics would send every pixel
                # near -2 without a word.
                scaled = tuple(round(v / 255, 4) for v in values)
                raise OptionError(f"{name}={value!r} is in 0-255 units, but float32 pixels "
                                  f"are in [0, 1]: give {name}={scaled!r} (divided by 255)")
            object.__setattr__(self, name, values)

    def _check_features(self) -> None:
        if self.features is None:
            return
        if isinstance(self.features, str):
            raise OptionError(f"features must be a list of names; got {self.features!r}")
        object.__setattr__(self, "features", tuple(self.features))
        if not all(isinstance(f, str) for f in self.features):
            raise OptionError(f"features must be names; got {self.features!r}")

    def _check_image_size(self) -> None:
        if self.image_size is None:
            return
        if isinstance(self.image_size, int | np.integer):  # one int: a square
            object.__setattr__(self, "image_size", (int(self.image_size),) * 2)
        size = tuple(int(d) for d in self.image_size)
        if len(size) != 2 or min(size) < 1:
            raise OptionError(f"image_size must be (height, width), both positive; got "
                             f"{self.image_size!r}")
        object.__setattr__(self, "image_size", size)

    def _check_padded_shapes(self) -> None:
        if self.padded_shapes is None:
            return
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

    def _check_crop(self) -> None:
        if self.crop not in (None, "random", "center"):
            raise OptionError(f"crop must be 'random', 'center' or None; got {self.crop!r}")
        if not isinstance(self.flip, bool):
            raise OptionError(f"flip must be True or False; got {self.flip!r}")
        if self.crop is not None and (self.keep_aspect or self.fast_resize):
            raise OptionError(f"crop={self.crop!r} cuts a window of the full decode: it does "
                              "not combine with keep_aspect or fast_resize")
        for name, low_bound in (("crop_scale", 0.0), ("crop_ratio", 0.0)):
            value = getattr(self, name)
            try:
                low, high = (float(v) for v in value)
            except (TypeError, ValueError):
                raise OptionError(f"{name} must be two numbers (low, high); got "
                                  f"{value!r}") from None
            if not low_bound < low <= high or (name == "crop_scale" and high > 1):
                raise OptionError(f"{name} must be (low, high) with 0 < low <= high"
                                  f"{' <= 1' * (name == 'crop_scale')}; got {value!r}")
            object.__setattr__(self, name, (low, high))
        for name in ("box_min_size", "box_min_area"):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, int | float | np.number)
                    or not 0 <= float(value) < float("inf")):
                raise OptionError(f"{name} must be a number of output pixels >= 0; got "
                                  f"{value!r}")
            object.__setattr__(self, name, float(value))
        if not 0 < float(self.crop_fraction) <= 1:
            raise OptionError(f"crop_fraction must be in (0, 1]; got {self.crop_fraction!r}")




def decode_options(options: DecodeOptions | None, *,
                   image_size: int | tuple[int, int] | None = None) -> DecodeOptions:
    """The decode options of an entry point: ``options`` with its ``image_size`` shortcut
    (an int meaning a square) filled in; given where the options say otherwise, a conflict.

    Raises:
        OptionError: ``image_size`` and ``options.image_size`` disagree (naming both).
    """
    options = options or DecodeOptions()
    if image_size is not None:
        size = DecodeOptions(image_size=image_size).image_size  # type: ignore[arg-type]
        if options.image_size is not None and options.image_size != size:
            raise OptionError(f"image_size={size!r} conflicts with options.image_size="
                              f"{options.image_size!r}: give it once")
        options = dataclasses.replace(options, image_size=size)
    return options  # a crop without a size is refused by the layout every reader builds


def thread_count(num_threads: int | None) -> int:
    """Decoding threads of a loader, the one rule every loader follows: the ``num_threads``
    given, else up to 4 of the machine's cores."""
    return num_threads or min(4, os.cpu_count() or 1)


def threads_per_worker(threads: int, workers: int) -> int:
    """``threads`` cut so that ``workers`` loading processes (DataLoader workers) together
    don't oversubscribe the machine's cores (at least one each)."""
    return max(1, min(threads, (os.cpu_count() or 1) // max(workers, 1)))
