"""The image step of the TF-free readers, run on the decoding thread right after each decode:
crop, resize (or fit and pad), flip and scale, written straight into the batch's row. Below the
schema, so decoding an image calls down into it, never back up into a reader."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tfrecordkit.codecs._crop import center_crop_box, crop_draws, random_crop_box
from tfrecordkit.codecs._image import scale_pixels
from tfrecordkit.codecs._placement import Placement, place_objects
from tfrecordkit.codecs._resize import pad_window, resize_into
from tfrecordkit.errors import OptionError

__all__ = ["Finish", "ImageOptions", "ImageTransform", "RecordKeys"]

Finish = Callable[[int, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class RecordKeys:
    """What random crops and flips of a run of records are keyed by: the reader's ``seed``, the
    ``epoch`` (P×K and triplets: the step counter) and each record's id in its split."""

    seed: int
    epoch: int
    ids: np.ndarray

    def part(self, start: int, stop: int) -> RecordKeys:
        """The keys of records ``start:stop``."""
        return RecordKeys(self.seed, self.epoch, self.ids[start:stop])


class ImageOptions(Protocol):
    """What an :class:`ImageTransform` reads of the readers' ``DecodeOptions``."""

    @property
    def image_size(self) -> tuple[int, int] | None: ...

    @property
    def keep_aspect(self) -> bool: ...

    @property
    def image_dtype(self) -> str: ...

    @property
    def mean(self) -> Any: ...

    @property
    def std(self) -> Any: ...

    @property
    def crop(self) -> str | None: ...

    @property
    def flip(self) -> bool: ...

    @property
    def crop_scale(self) -> tuple[float, float]: ...

    @property
    def crop_ratio(self) -> tuple[float, float]: ...

    @property
    def crop_fraction(self) -> float: ...

    @property
    def box_min_size(self) -> float: ...

    @property
    def box_min_area(self) -> float: ...


class ImageTransform:
    """Decoded pixels to a batch's image values, as ``options`` ask (``image_size``,
    ``keep_aspect``, ``image_dtype``, ``mean``, ``std``), with the arithmetic tf.data's twin
    uses."""

    def __init__(self, options: ImageOptions) -> None:
        if options.image_size is None:
            raise ValueError("an image transform needs image_size")
        self.size: tuple[int, int] = options.image_size
        self.keep_aspect = options.keep_aspect
        self.dtype = np.dtype(options.image_dtype)
        self.mean, self.std = options.mean, options.std
        self.crop, self.flip = options.crop, options.flip
        self.crop_scale, self.crop_ratio = options.crop_scale, options.crop_ratio
        self.crop_fraction = options.crop_fraction
        self.box_min_size, self.box_min_area = options.box_min_size, options.box_min_area
        self._fills: dict[int, np.ndarray] = {}

    def _fill(self, channels: int) -> np.ndarray:
        """What padding holds: black, scaled as the pixels are."""
        fill = self._fills.get(channels)
        if fill is None:
            black = np.zeros((1, 1, channels), np.uint8)
            fill = scale_pixels(black, self.dtype.name, self.mean, self.std)[0, 0]
            self._fills[channels] = fill
        return fill

    @property
    def keyed(self) -> bool:
        """Whether images need their :class:`RecordKeys` (random crops or flips)."""
        return self.crop == "random" or self.flip

    def window(self, height: int, width: int, draws: list[float] | None
               ) -> tuple[int, int, int, int, bool]:
        """A record's crop window ``(top, left, height, width)`` and flip, from its
        :func:`~tfrecordkit.sampling.crop_draws` (None when nothing random is asked)."""
        if self.crop == "random":
            assert draws is not None
            top, left, h, w, flip = random_crop_box(height, width, draws,
                                                    scale=self.crop_scale,
                                                    ratio=self.crop_ratio, flip=self.flip)
            return top, left, h, w, bool(flip)
        flipped = self.flip and draws is not None and draws[-1] < 0.5
        if self.crop == "center":
            top, left, h, w, _ = center_crop_box(height, width, self.size, self.crop_fraction)
            return top, left, h, w, flipped
        return 0, 0, height, width, flipped

    def placement(self, height: int, width: int, window: tuple[int, int, int, int, bool]
                  ) -> Placement:
        """How a ``height × width`` image cut to ``window`` (:meth:`window`'s) lands in the
        output: what its boxes follow."""
        top, left, h, w, flip = window
        pad = pad_window(h, w, self.size) if self.keep_aspect else None
        return Placement(height, width, (top, left, h, w), self.size, pad, flip,
                         cropped=self.crop is not None)

    def place(self, value: dict[str, np.ndarray], placement: Placement) -> dict[str, np.ndarray]:
        """A record's boxes value (``{"boxes", "labels", ...}``) moved with its image."""
        return place_objects(value, placement, min_size=self.box_min_size,
                             min_area=self.box_min_area)

    def finisher(self, rows: np.ndarray | None = None, keys: RecordKeys | None = None,
                 placements: dict[int, Placement] | None = None) -> Finish:
        """``finish(i, pixels)``: record ``i``'s uint8 ``[h, w, c]`` pixels transformed into
        ``rows[i]`` (a batch's ``[n, H, W, C]`` array) when its channels match, else into a new
        array, which is returned; ``keys`` key random crops and flips; ``placements[i]``
        receives record ``i``'s :class:`Placement` (what its boxes follow)."""

        if self.keyed and keys is None:
            raise OptionError("random crops and flips are keyed by (seed, epoch, record id); "
                              "this reader gives no record ids")
        draws = (crop_draws(keys.seed, keys.epoch, keys.ids).tolist()
                 if self.keyed and keys is not None else None)

        def finish(i: int, pixels: np.ndarray) -> np.ndarray:
            channels = pixels.shape[2]
            if rows is not None and rows.shape[3] == channels:
                out = rows[i]
            else:
                out = np.empty((*self.size, channels), self.dtype)
            if self.crop is None and not self.flip:
                if placements is not None:
                    height, width = pixels.shape[:2]
                    placements[i] = self.placement(height, width, (0, 0, height, width, False))
                return self.transform(pixels, out)
            box = self.window(pixels.shape[0], pixels.shape[1],
                              None if draws is None else draws[i])
            if placements is not None:
                placements[i] = self.placement(pixels.shape[0], pixels.shape[1], box)
            top, left, height, width, flip = box
            window = pixels[top : top + height, left : left + width]
            return self.transform(window, out, flip=flip)

        return finish

    def transform(self, pixels: np.ndarray, out: np.ndarray, *, flip: bool = False
                  ) -> np.ndarray:
        """``pixels`` transformed into ``out`` (``[H, W, c]`` of the options' dtype), mirrored
        left to right when ``flip``.

        Raises:
            ValueError: the image cannot be fitted (``keep_aspect`` would scale it to nothing).
        """
        scaled = self.dtype == np.float32
        mean, std = (self.mean, self.std) if scaled else (None, None)
        if not self.keep_aspect:
            return resize_into(pixels, out, flip=flip, mean=mean, std=std)
        top, left, height, width = pad_window(pixels.shape[0], pixels.shape[1], self.size)
        fill = self._fill(pixels.shape[2])
        out[:top] = fill
        out[top + height :] = fill
        out[top : top + height, :left] = fill
        out[top : top + height, left + width :] = fill
        resize_into(pixels, out[top : top + height, left : left + width], mean=mean, std=std)
        if flip:
            out[...] = out[:, ::-1].copy()
        return out
