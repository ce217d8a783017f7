"""COCO object detection: an ``instances_*.json`` and its image folder as records, each image with
its objects as one :class:`~tfrecordkit.schema.Boxes` feature (class names from the
categories, corners as fractions of the image)."""

from __future__ import annotations

import copy
import io
import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from tfrecordkit.codecs import image_header, load_pillow
from tfrecordkit.errors import OptionError, SourceError
from tfrecordkit.schema import Boxes, Image, Scalar, Schema
from tfrecordkit.sources._media import (
    DEFAULT_MAX_IMAGE_PIXELS,
    ImageCheck,
    ImageOptions,
    Resize,
    read_file,
)
from tfrecordkit.sources._protocol import SourceItem
from tfrecordkit.store import text_of_name

__all__ = ["EDGE_TOLERANCE", "Coco"]

#: Pixels a COCO box may reach past its image's edge and still be taken (clipped there):
#: COCO's float boxes pass an edge by rounding. Further is a box of another image or
#: another convention, and is refused.
EDGE_TOLERANCE = 1.0


def _image_folder(annotations: str) -> str:
    """Where COCO puts the images of ``annotations/instances_<split>.json``: ``<split>/``
    beside the annotations' folder, if it exists; else the annotations' own folder."""
    folder = os.path.dirname(os.path.abspath(annotations))
    found = re.fullmatch(r"instances_(.+)\.json", os.path.basename(annotations))
    if found is not None:
        split = os.path.join(os.path.dirname(folder), found.group(1))
        if os.path.isdir(split):
            return split
    return folder


def _utf8(path: str, where: str, text: str) -> None:
    """Refuse text that UTF-8 cannot hold (a lone surrogate from a ``\\ud800`` escape).

    Raises:
        SourceError: naming the entry.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise SourceError(path, f"{where}: {text!r:.60} is not valid Unicode (a lone "
                                "surrogate escape): a record's text is UTF-8") from None


class _Object(NamedTuple):
    """One annotation as a record keeps it."""

    box: list[float]
    category: str
    id: Any
    crowd: int
    area: Any
    segmentation: str | None = None


#: The annotation's attribute each per-object field holds.
_FIELD_OF = {"id": "id", "is_crowd": "crowd", "area": "area", "segmentation": "segmentation"}


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


class Coco:
    """A COCO detection dataset as records ``{"image": ..., "image/object": ...}``.

    ``image`` is each file's bytes as they are (checked as :class:`ImageFolder` checks them);
    ``image/object`` is a :class:`~tfrecordkit.schema.Boxes` feature named by the categories
    (in category id order; an object's class is its category's name): COCO's pixel boxes
    ``[x, y, width, height]`` become ``[x / W, y / H, (x + width) / W, (y + height) / H]``
    of the image's annotated size. A box may pass an edge by up to :data:`EDGE_TOLERANCE`
    pixel (COCO's float rounding), and is clipped there; one reaching further is refused,
    naming the annotation, its image and COCO's convention (an image at a time: with
    ``on_error="skip"`` that image is left out and listed), and a file whose every coordinate
    lies in ``[0, 1]`` is refused as fractions given where COCO wants pixels. An image with no
    annotation has no boxes.

    What COCO says of each object is kept beside its box, as per-object fields of the
    ``Boxes`` feature: ``is_crowd`` (COCO's ``iscrowd``: a crowd region, which the torchvision
    and detectron2 recipes drop), ``area`` (COCO's own, as written: the segmentation's area,
    not recomputed after a crop) and ``id`` (the annotation id), each when every annotation
    gives it; a crop that drops a box drops its fields with it. The categories' ids are the
    ``Boxes`` feature's ``ids`` (``names[k]`` is category ``ids[k]``; labels count from 0 in
    category id order), and each image's id is the ``"image/id"`` feature (when every image id
    is an int). Segmentation masks (polygons, RLE) are kept as written when asked
    (``masks=True``).

    Args:
        annotations: the ``instances_*.json`` file.
        images: the folder its ``file_name`` entries are relative to (default: COCO's own
            layout, ``annotations/instances_<split>.json`` beside ``<split>/``, when that
            folder exists; else the annotation file's folder).
        encoding, channels, resize, check, max_image_pixels, reduce_16bit: as
            :class:`ImageFolder`'s (:class:`~tfrecordkit.sources.ImageOptions`); boxes are
            fractions of the image, so a resize keeps them in place.
        exif_transpose: refused: COCO's boxes are in the stored pixels' frame, and turning
            the pixels would move them away from their boxes.
        provenance: store each image's ``file_name`` with its record (``"__source"``).
        crowds: keep crowd regions (``iscrowd=1``) as objects flagged ``is_crowd``; False
            leaves them out at conversion (``crowds_left_out`` counts them).
        masks: keep each object's ``segmentation`` (polygons or RLE) as written, JSON text
            in the per-object field ``segmentation``: in the source image's coordinates, so
            readers refuse a crop, flip or letterbox while it is read.
        images_outside: read a ``file_name`` that leads outside ``images`` (absolute, through
            ``..``, or a symlink out of it). Off by default: a shared dataset would store this
            machine's path and a file the annotations' folder does not hold.

    Raises:
        SourceError: the annotations are not COCO's layout (naming the entry), an object's
            image or category is unknown, a ``file_name`` leads outside ``images`` (without
            ``images_outside``), or (at conversion) an image's size differs from its
            annotated one, so its boxes would be misplaced.
    """

    in_process = True
    reorderable = True  # listed from memory; any image loaded in any order
    #: How records are keyed (recorded in the manifest, so an append keys alike): the image
    #: folder's name and the file name, unique across a dataset's splits and stable across
    #: re-exports of the JSON. Datasets written before rules were recorded keyed by the file
    #: name alone; an append to one keeps that (:meth:`keyed_as`).
    key_rule = "coco:folder/file_name"

    def __init__(self, annotations: str | os.PathLike[str],
                 images: str | os.PathLike[str] | None = None, *,
                 encoding: str | None = None, channels: int | None = None,
                 resize: Resize = None, check: ImageCheck = "structure",
                 max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
                 reduce_16bit: bool = False, exif_transpose: bool = False,
                 provenance: bool = True, images_outside: bool = False,
                 crowds: bool = True, masks: bool = False) -> None:
        self.path = os.fspath(annotations)
        self.crowds, self.masks = crowds, masks
        if exif_transpose:
            raise OptionError("Coco takes no exif_transpose=True: COCO's boxes are in the "
                              "stored pixels' frame, and turning the pixels would move them "
                              "away from their boxes")
        self.image = ImageOptions(encoding, channels, resize, check, max_image_pixels,
                                  reduce_16bit)
        # Bytes kept as they are cost little per image; decoding pays for worker processes.
        self.in_process = self.image.keeps_bytes and check != "decode"
        self.images_outside = images_outside
        self.root = os.fspath(images) if images is not None else _image_folder(self.path)
        self._folder = os.path.basename(os.path.normpath(os.path.abspath(self.root)))
        self._file_name_keys = False
        self.provenance = provenance
        # What identifies its records: the file, where its images are, and what is kept.
        given = {"crowds": crowds, "masks": masks, "images_outside": images_outside}
        defaults = {"crowds": True, "masks": False, "images_outside": False}
        kept = "".join(f";{k}={v}" for k, v in given.items() if v != defaults[k])
        self.description = (f"coco:{os.path.abspath(self.path)};images="
                            f"{os.path.abspath(self.root)}{kept}{self.image.described}")
        coco = self._json()
        self._looked = ("the folder given as images=" if images is not None else
                        "COCO's layout (<split>/ beside the annotations' folder) or beside "
                        "the .json file")
        self.names, ids = self._categories(coco)
        self.category_ids = tuple(sorted(ids))
        self._images = self._image_entries(coco)
        self._objects: dict[Any, list[_Object]] = {}
        self.crowds_left_out = 0
        entries = self._list(coco, "annotations")
        #: Per-object fields every annotation gives (COCO's id, iscrowd and area).
        self.fields = {"id": "int64", "is_crowd": "int64", "area": "float32"}
        if not all(isinstance(e, Mapping) and _whole(e.get("id")) for e in entries):
            del self.fields["id"]
        if not all(isinstance(e, Mapping) and _number(e.get("area")) for e in entries):
            del self.fields["area"]
        if masks:  # kept as written: polygons or RLE, in the source image's coordinates
            self.fields["segmentation"] = "string"
        self._annotations(entries, ids)
        self._refuse_fractions()
        self._image_ids = all(_whole(i) for i in self._images)

    def _json(self) -> Any:
        """The annotation file, parsed.

        Raises:
            SourceError: unreadable, not JSON, or nested past a JSON reader's depth.
        """
        try:
            with open(self.path, encoding="utf-8") as handle:
                return json.load(handle)
        except OSError as err:
            raise SourceError(self.path, err.strerror or str(err)) from None
        except ValueError as err:
            raise SourceError(self.path, f"not JSON ({err})") from None
        except RecursionError:
            raise SourceError(self.path, "nested deeper than a JSON reader follows (not COCO's "
                                         "annotation layout)") from None

    def _annotations(self, entries: list[Any], ids: Mapping[Any, str]) -> None:
        """Each annotation checked and kept as its image's object (crowds left out when
        asked).

        Raises:
            SourceError: naming the entry: a bad bbox, an unknown image or category, an
                iscrowd other than 0 or 1.
        """
        for k, entry in enumerate(entries):
            where = f"annotations[{k}]"
            box = entry.get("bbox") if isinstance(entry, Mapping) else None
            if (not isinstance(box, list) or len(box) != 4 or not all(map(_number, box))
                    or box[2] < 0 or box[3] < 0):
                raise SourceError(self.path, f"{where}: bbox must be [x, y, width, height] "
                                             f"pixels, width and height >= 0; got {box!r}")
            image, category = entry.get("image_id"), entry.get("category_id")
            if image not in self._images:
                raise SourceError(self.path, f"{where}: image_id {image!r} is not among the "
                                             "images")
            if category not in ids:
                raise SourceError(self.path, f"{where}: category_id {category!r} is not "
                                             "among the categories")
            crowd = entry.get("iscrowd", 0)
            if crowd not in (0, 1) or isinstance(crowd, bool):
                raise SourceError(self.path, f"{where}: iscrowd must be 0 or 1; got {crowd!r}")
            if crowd and not self.crowds:
                self.crowds_left_out += 1
                continue
            segmentation = None
            if self.masks:
                if not isinstance(entry.get("segmentation"), list | dict):
                    raise SourceError(self.path, f"{where}: masks=True, and it has no "
                                                 "segmentation (polygons or RLE)")
                segmentation = json.dumps(entry["segmentation"], separators=(",", ":"))
            self._objects.setdefault(image, []).append(_Object(
                box, ids[category], entry.get("id"), int(crowd), entry.get("area"),
                segmentation))

    def _refuse_fractions(self) -> None:
        """Refuse boxes that are all fractions of their image, on images of more than a few
        pixels: COCO's boxes are pixels, and fractions read as pixels make boxes of a pixel.

        Raises:
            SourceError: naming the file and COCO's convention.
        """
        boxes = [o.box for objects in self._objects.values() for o in objects]
        sizes = [min(w, h) for _, w, h in self._images.values()]
        if boxes and sizes and min(sizes) > 4 and all(0 <= v <= 1 for b in boxes for v in b):
            raise SourceError(self.path, f"every one of the {len(boxes)} bbox values lies in "
                                         "[0, 1]: COCO's bbox is [x, y, width, height] in "
                                         "pixels; these look like fractions of the image "
                                         "(multiply by its width and height)")

    def _list(self, coco: Any, key: str) -> list[Any]:
        value = coco.get(key) if isinstance(coco, Mapping) else None
        if not isinstance(value, list):
            raise SourceError(self.path, f"no {key!r} list: not COCO's annotation layout")
        return value

    def _categories(self, coco: Any) -> tuple[list[str], dict[Any, str]]:
        entries = self._list(coco, "categories")
        if not entries or not all(isinstance(c, Mapping) and isinstance(c.get("id"), int)
                                  and isinstance(c.get("name"), str) for c in entries):
            raise SourceError(self.path, "categories must be {id, name} entries")
        for k, c in enumerate(entries):
            _utf8(self.path, f"categories[{k}].name", c["name"])
        ordered = sorted(entries, key=lambda c: c["id"])
        names = [c["name"] for c in ordered]
        if len(set(names)) != len(names) or len({c["id"] for c in ordered}) != len(names):
            raise SourceError(self.path, "categories repeat a name or an id")
        return names, {c["id"]: c["name"] for c in ordered}

    def _image_entries(self, coco: Any) -> dict[Any, tuple[str, int, int]]:
        out: dict[Any, tuple[str, int, int]] = {}
        names: dict[str, int] = {}
        for k, entry in enumerate(self._list(coco, "images")):
            ok = (isinstance(entry, Mapping) and isinstance(entry.get("file_name"), str)
                  and all(isinstance(entry.get(d), int) and entry[d] > 0
                          for d in ("width", "height")))
            if not ok:
                raise SourceError(self.path, f"images[{k}]: needs id, file_name and positive "
                                             "width and height")
            if entry.get("id") in out:
                raise SourceError(self.path, f"images[{k}]: id {entry.get('id')!r} repeats")
            if entry["file_name"] in names:
                raise SourceError(self.path, f"images[{k}]: file_name {entry['file_name']!r:.80} "
                                             f"is also images[{names[entry['file_name']]}] "
                                             "(another image id): one file is one record")
            names[entry["file_name"]] = k
            _utf8(self.path, f"images[{k}].file_name", entry["file_name"])
            name = entry["file_name"]
            if not self.images_outside and (os.path.isabs(name) or ".." in re.split(
                    r"[/\\]", name)):
                raise SourceError(self.path, f"images[{k}]: file_name {name!r:.80} leads "
                                             "outside the images folder; give "
                                             "images_outside=True to read it anyway")
            out[entry.get("id")] = (entry["file_name"], entry["width"], entry["height"])
        return out

    def _inside(self) -> str:
        """The images folder's resolved path (resolved once per process)."""
        if getattr(self, "_resolved_root", None) is None:
            self._resolved_root = os.path.realpath(self.root)
        return self._resolved_root

    def keyed_as(self, rule: str | None) -> Coco:
        """This source keyed by a dataset's recorded ``rule`` (None: a dataset written before
        rules were recorded, keyed by the file name alone).

        Raises:
            SourceError: a rule this release does not know.
        """
        if rule not in (None, self.key_rule):
            raise SourceError(self.path, f"the dataset keys its records by {rule!r}, which "
                                         "this release does not know: upgrade tfrecordkit")
        keyed = copy.copy(self)
        keyed._file_name_keys = rule is None
        return keyed

    def for_dataset(self, created_by: Mapping[str, Any], schema: Schema) -> Coco:
        """This source as the dataset it is appended to was written: keyed by its recorded
        rule (:meth:`keyed_as`), and giving only the fields its schema holds (a dataset
        written before image ids, class ids and per-object fields keeps its form)."""
        like = self.keyed_as(created_by.get("keys"))
        like._image_ids = self._image_ids and "image/id" in schema
        boxes = schema.of_kind(Boxes).get("image/object")
        if boxes is not None:
            like.fields = {f: d for f, d in self.fields.items() if f in boxes.fields}
            like.category_ids = self.category_ids if boxes.ids else ()
        return like

    def schema(self) -> Schema:
        features: dict[str, Any] = {
            "image": Image(encoding=self.image.encoding or "auto",
                           channels=self.image.channels),
            "image/object": Boxes(self.names, ids=self.category_ids, fields=self.fields)}
        if self._image_ids:
            features["image/id"] = Scalar("int64")
        return Schema(features)

    def items(self) -> Iterator[SourceItem]:
        for image, (name, width, height) in self._images.items():
            key = name if self._file_name_keys else f"{self._folder}/{name}"
            yield SourceItem(key, (name, width, height, tuple(self._objects.get(image, ())),
                                   image))

    def describe(self, item: SourceItem) -> str:
        return os.path.join(self.root, item.item[0])

    def origin(self, item: SourceItem) -> str:
        """Where the record came from, as stored with it: the image's ``file_name``."""
        return text_of_name(item.item[0])

    def load(self, item: Any) -> Mapping[str, Any]:
        name, width, height, objects, image_id = item
        path = os.path.join(self.root, name)
        # A plain file right in the folder is inside it (one lstat); a link or a name with
        # folders in it is judged on its resolved path (a walk of every component).
        direct = "/" not in name and "\\" not in name and not os.path.islink(path)
        if not self.images_outside and not direct:
            inside = self._inside()
            if os.path.commonpath([inside, os.path.realpath(path)]) != inside:
                raise SourceError(path, "leads outside the images folder (a symlink out of "
                                        f"{self.root}); give images_outside=True to read it")
        if not os.path.exists(path):
            raise SourceError(path, f"not found: the images were looked for in {self.root} "
                                    f"({self._looked}); give images= (--images) naming the "
                                    "folder the file_name entries are relative to")
        data = read_file(path)
        image = self.image.from_bytes(data, path)
        stored = ((image["width"], image["height"]) if self.image.keeps_bytes
                  else _stored_size(data, path))
        if stored != (width, height):
            raise SourceError(path, f"is {stored[0]}x{stored[1]} pixels; the annotations say "
                                    f"{width}x{height}: its boxes would be misplaced")
        boxes = []
        for (x, y, w, h), _, annotation, *_ in objects:
            past = max(-x, -y, x + w - width, y + h - height)
            if past > EDGE_TOLERANCE:
                raise SourceError(path, f"annotation id {annotation!r}: bbox {[x, y, w, h]} "
                                        f"reaches {past:.1f} px past the edge of the "
                                        f"{width}x{height} image (up to {EDGE_TOLERANCE:g} px "
                                        "is rounding, clipped); COCO's bbox is [x, y, width, "
                                        "height] in pixels: were corners [x1, y1, x2, y2] or "
                                        "another image's box given?")
            boxes.append([min(max(v, 0.0), 1.0) for v in (
                x / width, y / height, (x + w) / width, (y + h) / height)])
        value: dict[str, Any] = {"boxes": boxes, "labels": [o.category for o in objects]}
        for field in self.fields:
            value[field] = [getattr(o, _FIELD_OF[field]) for o in objects]
        record = {"image": image, "image/object": value}
        if self._image_ids:
            record["image/id"] = image_id
        return record


def _stored_size(data: bytes, path: str) -> tuple[int, int]:
    """``(width, height)`` of an image file's stored pixels (its header; Pillow's for
    formats other than JPEG and PNG)."""
    header = image_header(data)
    if header is not None:
        return header[1], header[0]
    try:
        with load_pillow().open(io.BytesIO(data)) as opened:
            return int(opened.width), int(opened.height)
    except (OSError, ValueError, SyntaxError) as err:  # Pillow's bad-header errors
        raise SourceError(path, f"unreadable image: {err}") from None


#: COCO's annotation files in its layout: ``annotations/instances_<split>.json``.
_INSTANCES = re.compile(r"instances_(.+)\.json")


def is_coco_root(path: str | os.PathLike[str]) -> bool:
    """``path`` is a folder in COCO's layout: ``annotations/instances_<split>.json`` (and
    the image folders beside ``annotations/``)."""
    folder = os.path.join(os.fspath(path), "annotations")
    return os.path.isdir(folder) and any(_INSTANCES.fullmatch(n) for n in os.listdir(folder))


def coco_splits(root: str | os.PathLike[str], **options: Any) -> dict[str, Coco]:
    """Each ``annotations/instances_<split>.json`` under ``root`` as a :class:`Coco` source,
    by split: COCO's ``train2017`` and ``val2017`` become ``train`` and ``val`` (the year
    dropped when that leaves names apart), other names stay; ``options`` go to each.

    Raises:
        SourceError: ``root`` holds no annotation file in COCO's layout.
    """
    folder = os.path.join(os.fspath(root), "annotations")
    found = sorted(n for n in os.listdir(folder) if _INSTANCES.fullmatch(n)) if os.path.isdir(
        folder) else []
    if not found:
        raise SourceError(os.fspath(root), "holds no annotations/instances_<split>.json "
                                           "(COCO's layout)")
    splits = [_INSTANCES.fullmatch(n).group(1) for n in found]  # type: ignore[union-attr]
    short = [re.sub(r"(?<=[A-Za-z])(19|20)\d\d$", "", s) for s in splits]
    names = short if len(set(short)) == len(short) else splits
    return {name: Coco(os.path.join(folder, file), **options)
            for name, file in zip(names, found, strict=True)}
