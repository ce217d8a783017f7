"""The image step of the TF-free readers, run on the decoding thread right after each decode:
resize (or fit and pad) and scale, written straight into the batch's row."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from tfrecordkit.codecs import pad_window, resize_into, scale_pixels

if TYPE_CHECKING:
    from tfrecordkit.readers._decoding import DecodeOptions

__all__ = ["ImageTransform"]

Finish = Callable[[int, np.ndarray], np.ndarray]


class ImageTransform:
    """Decoded pixels to a batch's image values, as ``options`` ask (``image_size``,
    ``keep_aspect``, ``image_dtype``, ``mean``, ``std``), with the arithmetic tf.data's twin
    uses."""

    def __init__(self, options: DecodeOptions) -> None:
        if options.image_size is None:
            raise ValueError("an image transform needs image_size")
        self.size: tuple[int, int] = options.image_size
        self.keep_aspect = options.keep_aspect
        self.dtype = np.dtype(options.image_dtype)
        self.mean, self.std = options.mean, options.std
        self._fills: dict[int, np.ndarray] = {}

    def _fill(self, channels: int) -> np.ndarray:
        """What padding holds: black, scaled as the pixels are."""
        fill = self._fills.get(channels)
        if fill is None:
            black = np.zeros((1, 1, channels), np.uint8)
            fill = scale_pixels(black, self.dtype.name, self.mean, self.std)[0, 0]
            self._fills[channels] = fill
        return fill

    def finisher(self, rows: np.ndarray | None = None) -> Finish:
        """``finish(i, pixels)``: record ``i``'s uint8 ``[h, w, c]`` pixels transformed into
        ``rows[i]`` (a batch's ``[n, H, W, C]`` array) when its channels match, else into a new
        array, which is returned."""

        def finish(i: int, pixels: np.ndarray) -> np.ndarray:
            channels = pixels.shape[2]
            if rows is not None and rows.shape[3] == channels:
                out = rows[i]
            else:
                out = np.empty((*self.size, channels), self.dtype)
            return self.transform(pixels, out)

        return finish

    def transform(self, pixels: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``pixels`` transformed into ``out`` (``[H, W, c]`` of the options' dtype).

        Raises:
            ValueError: the image cannot be fitted (``keep_aspect`` would scale it to nothing).
        """
        scaled = self.dtype == np.float32
        mean, std = (self.mean, self.std) if scaled else (None, None)
        if not self.keep_aspect:
            return resize_into(pixels, out, mean=mean, std=std)
        top, left, height, width = pad_window(pixels.shape[0], pixels.shape[1], self.size)
        fill = self._fill(pixels.shape[2])
        out[:top] = fill
        out[top + height :] = fill
        out[top : top + height, :left] = fill
        out[top : top + height, left + width :] = fill
        resize_into(pixels, out[top : top + height, left : left + width], mean=mean, std=std)
        return out
