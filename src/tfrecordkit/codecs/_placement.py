"""Where an image's pixels land in a transformed image (crop window, resize or letterbox, flip),
and the same move applied to boxes tied to the image: every reader moves an image and its boxes
with this arithmetic (tf.data with its in-graph twin, tested equal)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["BOX_MIN_AREA", "BOX_MIN_SIZE", "Placement", "place_boxes", "place_objects"]

#: The default of the rule that drops boxes a crop leaves too small (torchvision v2's
#: ``SanitizeBoundingBoxes``): a box is kept when its width and height in output pixels are
#: at least ``BOX_MIN_SIZE`` and its area at least ``BOX_MIN_AREA``.
BOX_MIN_SIZE = 1.0
BOX_MIN_AREA = 1.0


@dataclass(frozen=True)
class Placement:
    """How one image was transformed: its decoded ``height × width`` pixels, the window cut
    from them (``top, left, window_height, window_width``; the whole image when nothing is
    cut), the output ``size``, where the window lands inside it (``pad``: ``top, left,
    height, width`` when letterboxed, else ``None``: stretched over the whole output), and
    whether the output is mirrored left to right. ``cropped``: the window came from a crop
    (``DecodeOptions(crop=...)``, a random crop): boxes are then clipped to it and the ones
    left too small dropped (see :func:`place_boxes`)."""

    height: int
    width: int
    window: tuple[int, int, int, int]
    size: tuple[int, int]
    pad: tuple[int, int, int, int] | None = None
    flip: bool = False
    cropped: bool = False


def place_boxes(boxes: np.ndarray, labels: np.ndarray, placement: Placement, *,
                min_size: float = BOX_MIN_SIZE, min_area: float = BOX_MIN_AREA
                ) -> tuple[np.ndarray, np.ndarray]:
    """Boxes (``[n, 4]`` ``xmin, ymin, xmax, ymax`` fractions of the decoded image) and their
    labels moved as ``placement`` moved the image: fractions of the output image.

    After a crop (``placement.cropped``), each box is clipped to the window, and boxes left
    smaller than ``min_size`` output pixels wide or high, or ``min_area`` square pixels, are
    dropped with their labels (torchvision v2's ``SanitizeBoundingBoxes`` rule). Flips,
    resizes and letterboxing move every box and drop none. Arithmetic in float64, then
    float32 (the in-graph twin does the same)."""
    moved, keep = _moved(boxes, placement, min_size, min_area)
    labels = np.asarray(labels)
    return moved, (labels if keep is None else labels[keep])


def place_objects(value: Mapping[str, np.ndarray], placement: Placement, *,
                  min_size: float = BOX_MIN_SIZE, min_area: float = BOX_MIN_AREA
                  ) -> dict[str, np.ndarray]:
    """A ``Boxes`` value (``{"boxes", "labels", ...}``: every part but ``boxes`` one row per
    object) moved as ``placement`` moved the image: the boxes as :func:`place_boxes` moves
    them, and the rows of every other part (labels, per-object fields) dropped with the boxes
    a crop drops (torchvision's ``SanitizeBoundingBoxes`` with a ``labels_getter`` of them
    all)."""
    moved, keep = _moved(value["boxes"], placement, min_size, min_area)
    out = {key: (np.asarray(part) if keep is None else np.asarray(part)[keep])
           for key, part in value.items() if key != "boxes"}
    return {"boxes": moved, **out}


def _moved(boxes: np.ndarray, placement: Placement, min_size: float, min_area: float
           ) -> tuple[np.ndarray, np.ndarray | None]:
    """The boxes moved, and after a crop which of them are kept (None: all)."""
    b = np.asarray(boxes, np.float64).reshape(-1, 4)
    top, left, win_h, win_w = (float(v) for v in placement.window)
    x = (b[:, 0::2] * float(placement.width) - left) / win_w
    y = (b[:, 1::2] * float(placement.height) - top) / win_h
    cuts = placement.cropped
    if cuts:
        x, y = np.clip(x, 0.0, 1.0), np.clip(y, 0.0, 1.0)
    out_h, out_w = float(placement.size[0]), float(placement.size[1])
    if placement.pad is not None:
        pad_top, pad_left, pad_h, pad_w = (float(v) for v in placement.pad)
        x = (pad_left + x * pad_w) / out_w
        y = (pad_top + y * pad_h) / out_h
    if placement.flip:
        x = 1.0 - x[:, ::-1]
    moved = np.stack([x[:, 0], y[:, 0], x[:, 1], y[:, 1]], axis=1)
    if not cuts:
        return moved.astype(np.float32), None
    wide, high = (moved[:, 2] - moved[:, 0]) * out_w, (moved[:, 3] - moved[:, 1]) * out_h
    keep = (wide >= min_size) & (high >= min_size) & (wide * high >= min_area)
    return moved[keep].astype(np.float32), keep
