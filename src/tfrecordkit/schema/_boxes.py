"""``Boxes``: the objects of one image, as the TF Object Detection API stores them."""

from __future__ import annotations

import collections.abc
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType as MappingProxy
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

__all__ = ["BOX_CORNERS", "BOX_FIELD_DTYPES", "Boxes"]

BOX_CORNERS = ("xmin", "ymin", "xmax", "ymax")
"""The order of a box's four numbers (the Object Detection API's keys), as every reader gives
them: ``[xmin, ymin, xmax, ymax]``, fractions of the image's width and height."""

#: What a per-object field may hold: one number per object, or one byte string (e.g. COCO's
#: segmentation as written, JSON text: in the source image's coordinates, so no reader moves
#: it with a crop or flip, and readers refuse those transforms while it is read).
BOX_FIELD_DTYPES = ("int64", "float32", "string")
_LIST = {"int64": "int64", "float32": "float", "string": "bytes"}


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

    Per-object fields (``fields``, e.g. COCO's ``{"is_crowd": "int64", "area": "float32",
    "id": "int64"}``) are one number per object under ``<name>/<field>`` (the OD API's
    ``image/object/is_crowd``, ``area``), given and read beside ``boxes`` and ``labels``; a
    crop that drops a box drops its fields' row with it, in every reader. ``ids`` are the
    classes' ids in the annotations the names came from (COCO's category ids), one per name:
    ``names[k]`` is ``ids[k]``; labels stay positions in ``names``.

    Args:
        names: the class names ids index (the OD API's label maps often start at 1: put a
            placeholder name first then); empty: ids only, no ``class/text`` key.
        ids: the source's id of each class (COCO's ``category_id``), or empty.
        fields: per-object fields and their dtypes (``"int64"`` or ``"float32"``).
    """

    names: collections.abc.Sequence[str] = ()
    ids: collections.abc.Sequence[int] = ()
    fields: Mapping[str, str] = dataclasses.field(default_factory=dict)
    kind: ClassVar[str] = "boxes"
    tf_decoder: ClassVar[str | None] = "tfrecordkit.readers.tf_data._ops:decode_boxes"
    in_image: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(str(n) for n in self.names))
        if len(set(self.names)) != len(self.names):
            raise SchemaError("<boxes>", "class names must be unique")
        ids = tuple(int(i) for i in self.ids)
        if ids and (len(ids) != len(self.names) or len(set(ids)) != len(ids)):
            raise SchemaError("<boxes>", f"ids: one unique id per class name; got {len(ids)} "
                                         f"ids for {len(self.names)} names")
        object.__setattr__(self, "ids", ids)
        fields = dict(self.fields)
        for field, dtype in fields.items():
            if field in ("boxes", "labels", "bbox", "class") or not field or "/" in field:
                raise SchemaError("<boxes>", f"per-object field {field!r}: a name other than "
                                             "boxes, labels, bbox or class, without '/'")
            if dtype not in BOX_FIELD_DTYPES:
                raise SchemaError("<boxes>", f"per-object field {field!r}: dtype one of "
                                             f"{BOX_FIELD_DTYPES}; got {dtype!r}")
        object.__setattr__(self, "fields", MappingProxy(fields))

    def __hash__(self) -> int:
        return hash((self.names, self.ids, tuple(self.fields.items())))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "names": list(self.names)}
        if self.ids:
            out["ids"] = list(self.ids)
        if self.fields:
            out["fields"] = dict(self.fields)
        return out

    def joined(self, others: collections.abc.Sequence[Boxes]) -> Boxes:
        """These boxes with the category names of ``others`` joined by name (these names in
        order, then each new one), and the ids where every one keeps ids that agree (one
        id per name, one name per id); else no ids."""
        each = [self, *others]
        names = tuple(dict.fromkeys(n for b in each for n in b.names))
        ids: dict[str, int] = {}
        for boxes in each:
            ids.update(zip(boxes.names, boxes.ids, strict=False))
        agreed = (all(b.ids for b in each) and len(set(ids.values())) == len(ids)
                  and all(ids[n] == i for b in each for n, i in zip(b.names, b.ids,
                                                                      strict=True)))
        return dataclasses.replace(self, names=names,
                                   ids=tuple(ids[n] for n in names) if agreed else ())

    @property
    def as_written(self) -> tuple[str, ...]:
        """Per-object fields kept as written in the source image's coordinates (text), which
        a crop, flip or letterbox would not move."""
        return tuple(f for f, d in self.fields.items() if d == "string")

    @property
    def format_need(self) -> tuple[int, str] | None:
        if self.ids or self.fields:
            return 9, "boxes with class ids or per-object fields"
        return None

    def hf_feature(self) -> dict[str, Any] | None:
        return {"boxes": hf_list(hf_list(hf_value("float32"), 4)),
                "labels": hf_list({"_type": "ClassLabel", "names": list(self.names)}),
                **{f: hf_list(hf_value("binary" if d == "string" else d))
                   for f, d in self.fields.items()}}

    def key_specs(self, name: str) -> list[KeySpec]:
        specs = [KeySpec(f"{name}/bbox/{c}", "float32", None) for c in BOX_CORNERS]
        specs.append(KeySpec(f"{name}/class/label", "int64", None))
        if self.names:
            specs.append(KeySpec(f"{name}/class/text", "string", None))
        specs += [KeySpec(f"{name}/{f}", d, None)  # type: ignore[arg-type]  # checked dtypes
                  for f, d in self.fields.items()]
        return specs

    def layout(self, name: str, options: LayoutOptions) -> FeatureLayout:
        boxes = FeatureLayout(name, "numbers", np.dtype(np.float32), (None, 4), (0,))
        labels = FeatureLayout(name, "numbers", np.dtype(np.int64), (None,), (0,))
        fields = {f: FeatureLayout(name, "bytes", None, (None,), (0,), fill=b"")
                  if d == "string" else FeatureLayout(name, "numbers", np.dtype(d), (None,), (0,))
                  for f, d in self.fields.items()}
        return FeatureLayout(name, "parts", None, (None,), (0,),
                             parts={"boxes": boxes, "labels": labels, **fields})

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
            per_object = {f: self._field(name, f, value.get(f), len(boxes))
                          for f in self.fields}
            if not np.isfinite(boxes).all():
                raise SchemaError(name, "a box corner is not a finite number")
            _check_corners(name, boxes)
            ids = [self._label_id(name, v) for v in labels]
            corners = _float32_list(name, boxes.reshape(-1)).reshape(-1, 4)  # checked at once
            entries = [_entry(f"{name}/bbox/{c}", "float", corners[:, j])
                       for j, c in enumerate(BOX_CORNERS)]
            entries.append(_entry(f"{name}/class/label", "int64", ids))
            if self.names:
                entries.append(_entry(f"{name}/class/text", "bytes",
                                      [self.names[i].encode("utf-8") for i in ids]))
            entries += [_entry(f"{name}/{f}", _LIST[self.fields[f]], values)  # type: ignore[arg-type]
                        for f, values in per_object.items()]
            return entries

        return encode

    def _field(self, name: str, field: str, given: Any, count: int) -> Any:
        """A per-object field's values for ``count`` objects, checked."""
        if given is None:
            raise SchemaError(name, f"per-object field {field!r} is missing: give one value "
                                    "per box")
        if self.fields[field] == "string":
            texts = list(given) if isinstance(given, list | tuple) else None
            if texts is None or not all(isinstance(t, str | bytes) for t in texts):
                raise SchemaError(name, f"per-object field {field!r} holds one text per box")
            if len(texts) != count:
                raise SchemaError(name, f"{count} boxes but {len(texts)} {field!r} values")
            return [t.encode("utf-8") if isinstance(t, str) else bytes(t) for t in texts]
        values = np.asarray(given).reshape(-1)
        if len(values) != count:
            raise SchemaError(name, f"{count} boxes but {len(values)} {field!r} values")
        if self.fields[field] == "int64":
            if values.size and values.dtype.kind not in "iub":
                raise SchemaError(name, f"per-object field {field!r} holds whole numbers")
            return [int(v) for v in values]
        floats = values.astype(np.float64)
        if not np.isfinite(floats).all():
            raise SchemaError(name, f"per-object field {field!r}: a value is not finite")
        return _float32_list(name, floats.tolist())

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
        fields = {f: np.asarray(features.get(f"{name}/{f}", ()),
                                object if d == "string" else d)
                  for f, d in self.fields.items()}
        for field, values in fields.items():
            if len(values) != len(labels):
                raise SchemaError(name, f"{len(labels)} objects but {len(values)} {field!r} "
                                        "values")
        return {"boxes": np.stack(corners, axis=1) if labels.size
                else np.zeros((0, 4), np.float32), "labels": labels, **fields}


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
