"""Batch memory: images decoded in place into a batch's array (padded ones into their
corner), and the memory of earlier batches handed out again once nothing outside holds it."""

from __future__ import annotations

import math
import sys
import threading
from typing import Any

import numpy as np

from tfrecordkit.codecs import Finish

__all__ = ["BatchMemory", "owner_of", "pad_into", "rows_of"]


def rows_of(whole: np.ndarray, pieces: list[Any]) -> bool:
    """Whether every part's value lies in ``whole`` (its rows, as an array or a list of
    rows): decoded there in place, so ``whole`` is the batch."""
    owner = owner_of(whole)
    for piece in pieces:
        items = piece if isinstance(piece, list) else [piece]
        if not all(isinstance(x, np.ndarray) and owner_of(x) is owner for x in items):
            return False
    return True


def owner_of(array: np.ndarray) -> np.ndarray:
    """The array owning ``array``'s memory (NumPy keeps a view's base at the owner)."""
    return array if array.base is None else array.base


def pad_into(rows: np.ndarray) -> Finish:
    """``finish(i, pixels)``: record ``i``'s pixels copied into the top left of ``rows[i]``,
    the rest of the row zeroed (the memory may hold an earlier batch), and that window
    returned; pixels that do not fit (a stored size smaller than the image) come back as
    their own copy."""

    def finish(i: int, pixels: np.ndarray) -> np.ndarray:
        row = rows[i]
        h, w, c = pixels.shape
        if h > row.shape[0] or w > row.shape[1] or c != row.shape[2]:
            return np.array(pixels)
        window: np.ndarray = row[:h, :w]
        window[...] = pixels
        row[:h, w:] = 0
        row[h:] = 0
        return window

    return finish


class BatchMemory:
    """The memory of earlier batches' arrays, handed out again once nothing outside holds it
    (no array, view, tensor or buffer of the user's refers to one: only this pool does), so
    large padded batches are written into memory already mapped rather than fresh pages;
    callers overwrite every byte of what they take."""

    _KEEP = 4

    def __init__(self) -> None:
        self._kept: list[np.ndarray] = []
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, object]:
        return {}  # a copy in another process starts empty

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__()  # type: ignore[misc]

    def take(self, shape: tuple[int, ...], dtype: Any = np.uint8) -> np.ndarray:
        """An uninitialised array of ``shape`` and ``dtype``."""
        size = math.prod(shape) * np.dtype(dtype).itemsize
        with self._lock:
            for kept in self._kept:
                # Referenced by the list, the loop variable and getrefcount's argument only.
                if sys.getrefcount(kept) <= 3 and kept.size >= size:
                    reused: np.ndarray = kept[:size].view(dtype).reshape(shape)
                    return reused
            fresh = np.empty(max(size, 1), np.uint8)
            self._kept.append(fresh)
            if len(self._kept) > self._KEEP:
                self._kept.pop(0)
            taken: np.ndarray = fresh[:size].view(dtype).reshape(shape)
            return taken
