"""``Boxes``: the objects of one image, as the TF Object Detection API stores them."""

from __future__ import annotations

import collections.abc
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tfrecordkit.errors import SchemaError
from tfrecordkit.format import KeySpec
from tfrecordkit.schema._base import (
    Entries,
    EntryEncoder,
    Feature,
    _entry,
    _float32_list,
    hf_list,
    hf_value,
)
from tfrecordkit.schema._layout import FeatureLayout, LayoutOptions

__all__ = ["BOX_CORNERS", "Boxes"]

BOX_CORNERS = ("xmin", "ymin", "xmax", "ymax")
"""The order of a box's four numbers (the Object Detection API's keys), as every reader gives
them: ``[xmin, ymin, xmax, ymax]``, fractions of the image's width and height."""


@dataclass(frozen=True)
class Boxes(Feature):
    """The objects of one image: a box and a class each, stored under the TF Object Detection
    API's keys ``<name>/bbox/xmin``, ``ymin``, ``xmax``, ``ymax`` (float lists, fractions of the
    image's width and height), ``<name>/class/label`` (int64 list) and, with class names,
    ``<name>/class/text`` (the names). The usual name is ``"image/object"``.

    A value is ``{"boxes": [n, 4], "labels": [n]}``: corners in :data:`BOX_CORNERS` order
    (float32) and class ids (int64; given as ids, or as names when ``names`` is set). Every
    reader gives it so, padded batches as ``{"boxes": {"values", "lengths"}, "labels":
    {"values", "lengths"}}``.

    Args:
        names: the class names ids index (the OD API's label maps often start at 1: put a
            placeholder name first then); empty: ids only, no ``class/text`` key.
    """

    names: collections.abc.Sequence[str] = ()
    kind: ClassVar[str] = "boxes"
    tf_decoder: ClassVar[str | None] = "tfrecordkit.readers.tf_data._ops:decode_boxes"
    in_image: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(str(n) for n in self.names))
        if len(set(self.names)) != len(self.names):
            raise SchemaError("<boxes>", "class names must be unique")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "names": list(self.names)}

    def hf_feature(self) -> dict[str, Any] | None:
        return {"boxes": hf_list(hf_list(hf_value("float32"), 4)),
                "labels": hf_list({"_type": "ClassLabel", "names": list(self.names)})}

    def key_specs(self, name: str) -> list[KeySpec]:
        specs = [KeySpec(f"{name}/bbox/{c}", "float32", None) for c in BOX_CORNERS]
        specs.append(KeySpec(f"{name}/class/label", "int64", None))
        if self.names:
            specs.append(KeySpec(f"{name}/class/text", "string", None))
        return specs

    def layout(self, name: str, options: LayoutOptions) -> FeatureLayout:
        boxes = FeatureLayout(name, "numbers", np.dtype(np.float32), (None, 4), (0,))
        labels = FeatureLayout(name, "numbers", np.dtype(np.int64), (None,), (0,))
        return FeatureLayout(name, "parts", None, (None,), (0,),
                             parts={"boxes": boxes, "labels": labels})

    def _label_id(self, name: str, value: Any) -> int:
        if isinstance(value, str | bytes):
            text = value.decode("utf-8") if isinstance(value, bytes) else value
            if text not in self.names:
                raise SchemaError(name, f"class {text!r} is not among the {len(self.names)} "
                                        "class names")
            return self.names.index(text)
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise SchemaError(name, f"a class is an id or a name, got {type(value).__name__}")
        if value < 0 or (self.names and value >= len(self.names)):
            raise SchemaError(name, f"class id {int(value)} outside the "
                                    f"{len(self.names) or 'non-negative'} classes")
        return int(value)

    def entry_encoder(self, name: str) -> EntryEncoder:
        def encode(value: Any) -> Entries:
            if not isinstance(value, Mapping) or not {"boxes", "labels"} <= set(value):
                raise SchemaError(name, "expected {'boxes': [n, 4], 'labels': [n]}")
            try:
                boxes = np.asarray(value["boxes"], dtype=np.float64)
            except (TypeError, ValueError):
                raise SchemaError(name, "boxes are [n, 4] numbers") from None
            boxes = boxes.reshape(0, 4) if boxes.size == 0 else boxes
            if boxes.ndim != 2 or boxes.shape[1] != 4:
                raise SchemaError(name, f"boxes of shape {boxes.shape}; expected [n, 4]")
            labels = list(np.asarray(value["labels"]).reshape(-1)) if not isinstance(
                value["labels"], list | tuple) else list(value["labels"])
            if len(labels) != len(boxes):
                raise SchemaError(name, f"{len(boxes)} boxes but {len(labels)} labels")
            if not np.isfinite(boxes).all():
                raise SchemaError(name, "a box corner is not a finite number")
            _check_corners(name, boxes)
            ids = [self._label_id(name, v) for v in labels]
            entries = [_entry(f"{name}/bbox/{c}", "float",
                              _float32_list(name, boxes[:, j].tolist()))
                       for j, c in enumerate(BOX_CORNERS)]
            entries.append(_entry(f"{name}/class/label", "int64", ids))
            if self.names:
                entries.append(_entry(f"{name}/class/text", "bytes",
                                      [self.names[i].encode("utf-8") for i in ids]))
            return entries

        return encode

    def decode(self, name: str, features: Mapping[str, Any]) -> Any:
        corners = [np.asarray(features.get(f"{name}/bbox/{c}", ()), np.float32)
                   for c in BOX_CORNERS]
        labels = np.asarray(features.get(f"{name}/class/label", ()), np.int64)
        counts = {len(c) for c in corners} | {len(labels)}
        if len(counts) > 1:
            raise SchemaError(name, f"the box keys hold {[len(c) for c in corners]} corners "
                                    f"and {len(labels)} labels; each needs one per object")
        bad = labels[(labels < 0) | (labels >= len(self.names))] if self.names else labels[
            labels < 0]
        if bad.size:
            raise SchemaError(name, f"class id {int(bad[0])} outside the "
                                    f"{len(self.names) or 'non-negative'} classes")
        return {"boxes": np.stack(corners, axis=1) if labels.size
                else np.zeros((0, 4), np.float32), "labels": labels}


def _check_corners(name: str, boxes: np.ndarray) -> None:
    """Corners are fractions of the image, ``xmin <= xmax`` and ``ymin <= ymax``: pixels
    (COCO's ``[x, y, width, height]``) or swapped corners are refused with the fix."""
    if not boxes.size:
        return
    if boxes.min() < 0 or boxes.max() > 1:
        k = int(np.flatnonzero(((boxes < 0) | (boxes > 1)).any(axis=1))[0])
        raise SchemaError(name, f"box {k} is {boxes[k].tolist()}: corners are fractions of "
                                "the image in [0, 1] (pixels? xmin = x / width, ymin = y / "
                                "height; COCO's [x, y, w, h] is [x/W, y/H, (x+w)/W, (y+h)/H])")
    swapped = (boxes[:, 0] > boxes[:, 2]) | (boxes[:, 1] > boxes[:, 3])
    if swapped.any():
        k = int(np.flatnonzero(swapped)[0])
        raise SchemaError(name, f"box {k} is {boxes[k].tolist()}: corners are [xmin, ymin, "
                                "xmax, ymax] with xmin <= xmax and ymin <= ymax (COCO's "
                                "[x, y, w, h] is [x/W, y/H, (x+w)/W, (y+h)/H])")
