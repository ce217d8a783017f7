"""Detection records in the layout Hugging Face's detection datasets use (``export(...,
boxes="coco")``): one ``objects`` column holding COCO's pixel boxes ``[x, y, width, height]``,
the category of each, and the per-object fields, beside the image's ``width`` and ``height``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tfrecordkit.codecs import image_header
from tfrecordkit.errors import OptionError
from tfrecordkit.schema import Boxes, Image, Schema

__all__ = ["BOX_LAYOUTS", "CocoBoxes"]

#: What ``export(boxes=...)`` takes: the schema's own form (fractions under the feature's
#: name) or COCO's pixels under ``objects``.
BOX_LAYOUTS = ("fractions", "coco")
_ADDED = ("objects", "width", "height")


class CocoBoxes:
    """Where a schema's one ``Boxes`` feature and its image are, and their values as COCO
    writes them.

    Raises:
        OptionError: the schema has no ``Boxes`` feature or several, no image its boxes can
            be measured on, or already a feature named ``objects``, ``width`` or ``height``.
    """

    def __init__(self, schema: Schema) -> None:
        boxes = schema.of_kind(Boxes)
        if len(boxes) != 1:
            raise OptionError(f"boxes='coco' writes one Boxes feature as 'objects'; the "
                              f"dataset has {len(boxes)} ({sorted(boxes)}): export with "
                              "boxes='fractions'")
        self.name, self.feature = next(iter(boxes.items()))
        images = schema.of_kind(Image)
        prefix = self.name.split("/", 1)[0]
        chosen = [n for n in images if n.split("/", 1)[0] == prefix] or list(images)
        if len(chosen) != 1:
            raise OptionError(f"boxes='coco' measures boxes in pixels of their image; "
                              f"{self.name!r} could be on any of {sorted(images)}: export "
                              "with boxes='fractions'")
        self.image = chosen[0]
        taken = sorted(set(_ADDED) & set(schema))
        if taken:
            raise OptionError(f"boxes='coco' adds columns {list(_ADDED)}, and the dataset has "
                              f"a feature {taken[0]!r}: export with boxes='fractions'")

    def names(self, names: Sequence[str]) -> list[str]:
        """The exported columns: the boxes feature's place taken by ``objects``, then the
        image's ``width`` and ``height``."""
        return [("objects" if n == self.name else n) for n in names] + ["width", "height"]

    def hf_features(self) -> dict[str, Any]:
        """The added columns as ``datasets.Features`` entries (the category a ClassLabel of
        the box names; per-object fields as lists of their dtype)."""
        def listed(inner: Any, length: int = -1) -> dict[str, Any]:
            return {"_type": "List", "feature": inner, "length": length}

        value = {"_type": "Value", "dtype": "float32"}
        objects = {"bbox": listed(listed(value, 4)),
                   "category": listed({"_type": "ClassLabel",
                                       "names": list(self.feature.names)}),
                   **{f: listed({"_type": "Value",
                                 "dtype": "binary" if d == "string" else d})
                      for f, d in self.feature.fields.items()}}
        size = {"_type": "Value", "dtype": "int32"}
        return {"objects": objects, "width": size, "height": size}

    def sizes(self, images: Sequence[Any]) -> list[tuple[int, int]]:
        """Each record's image ``(width, height)``: from an encoded image's header, or raw
        pixels' shape."""
        out = []
        for value in images:
            if isinstance(value, bytes | bytearray | memoryview):
                header = image_header(bytes(value))
                if header is None:
                    raise OptionError(f"boxes='coco': an image of {self.image!r} is neither "
                                      "JPEG nor PNG, so its size is not in its header")
                out.append((header[1], header[0]))
            else:
                shape = np.shape(value)
                out.append((int(shape[1]), int(shape[0])))
        return out

    def objects(self, value: Any, width: int, height: int) -> dict[str, Any]:
        """One record's boxes as COCO's ``{"bbox": [[x, y, w, h]], "category": [...], ...}``
        in pixels of its ``width`` x ``height`` image."""
        boxes = np.asarray(value["boxes"], np.float64).reshape(-1, 4)
        scale = np.array([width, height, width, height], np.float64)
        corners = boxes * scale
        bbox = np.concatenate([corners[:, :2], corners[:, 2:] - corners[:, :2]], axis=1)
        out: dict[str, Any] = {"bbox": bbox.astype(np.float32).tolist(),
                               "category": np.asarray(value["labels"]).tolist()}
        for field in self.feature.fields:
            out[field] = np.asarray(value[field]).tolist()
        return out

    def columns(self, boxes: Sequence[Any], images: Sequence[Any]) -> dict[str, list[Any]]:
        """A chunk's ``objects``, ``width`` and ``height`` columns."""
        sizes = self.sizes(images)
        return {"objects": [self.objects(v, w, h) for v, (w, h) in zip(boxes, sizes,
                                                                       strict=True)],
                "width": [w for w, _ in sizes], "height": [h for _, h in sizes]}
