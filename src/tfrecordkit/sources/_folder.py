"""Class-folder sources: ``root/<class>/<file>``, as ImageNet and Keras lay images out."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from tfrecordkit.codecs import load_simplejpeg
from tfrecordkit.errors import SourceError
from tfrecordkit.schema import Audio, ClassLabel, Image, Schema
from tfrecordkit.sources._media import (
    AUDIO_EXTENSIONS,
    DEFAULT_MAX_IMAGE_PIXELS,
    IMAGE_EXTENSIONS,
    ImageCheck,
    ImageOptions,
    load_audio,
)
from tfrecordkit.sources._protocol import SourceItem
from tfrecordkit.store import text_of_name

__all__ = ["SPLIT_FOLDER_NAMES", "AudioFolder", "ImageFolder"]

#: Top folders of a class-folder tree taken as splits (case-insensitive):
#: ``root/train/<class>/…``, ``root/val/<class>/…``.
SPLIT_FOLDER_NAMES = frozenset({
    "train", "training", "val", "valid", "validation", "dev", "test", "testing", "eval",
    "evaluation", "holdout"})


def class_dirs(root: str) -> list[str]:
    if not os.path.isdir(root):
        raise SourceError(root, "not a directory")
    classes = _subfolders(root)
    if not classes:
        raise SourceError(root, "no class folders (expected root/<class>/<file>)")
    return classes


def _subfolders(folder: str) -> list[str]:
    """The folder's visible sub-folders, sorted."""
    with os.scandir(folder) as scan:
        return sorted(entry.name for entry in scan
                      if entry.is_dir() and not entry.name.startswith("."))


def split_dirs(root: str, top: list[str], splits: bool | None) -> list[str]:
    """The top folders of ``root`` that are splits (``root/<split>/<class>/…``); empty when
    they are classes. ``splits``: True or False decides; None recognises split names
    (:data:`SPLIT_FOLDER_NAMES`) when every top folder has one and holds class folders.

    Raises:
        SourceError: the tree is ambiguous (some top folders are split names, or split-named
            folders hold files rather than class folders), naming the folders and ``splits=``.
    """
    if splits is False:
        return []
    holding = {name: _subfolders(os.path.join(root, name)) for name in top}
    if splits:
        empty = [name for name in top if not holding[name]]
        if empty:
            raise SourceError(root, f"splits=True, but {empty} hold no class folders "
                                    "(expected root/<split>/<class>/<file>)")
        return top
    named = [name for name in top if name.lower() in SPLIT_FOLDER_NAMES]
    if not named:
        return []
    if len(named) == len(top) and all(holding[name] for name in top):
        return top
    others = [name for name in top if name not in named]
    flat = [name for name in named if not holding[name]]
    why = (f"top folders {named} are split names beside {others}" if others else
           f"top folders {flat} are split names but hold no class folders")
    raise SourceError(root, f"{why}: pass splits=True (root/<split>/<class>/<file>; CLI "
                            "--split-folders) or splits=False (every top folder a class; "
                            "CLI --no-split-folders)")


def walk_files(folder: str, extensions: frozenset[str],
                ignored: Callable[[str], None] | None = None, *,
                _seen: set[tuple[int, int]] | None = None) -> Iterator[str]:
    """Files under ``folder`` with one of ``extensions``, in sorted order, streaming; the
    others (hidden ones aside) go to ``ignored``, and so does a folder reached again through
    a link (a symlink loop, or a second way to the same files)."""
    seen = _seen if _seen is not None else set()
    status = os.stat(folder)
    seen.add((status.st_dev, status.st_ino))
    with os.scandir(folder) as scan:
        entries = sorted((entry.name, entry) for entry in scan if entry.name[0] != ".")
    for name, entry in entries:
        if entry.is_dir():
            try:
                inner = entry.stat()
            except OSError:  # a link that leads nowhere it can be followed
                if ignored is not None:
                    ignored(entry.path)
                continue
            if (inner.st_dev, inner.st_ino) in seen:
                if ignored is not None:
                    ignored(entry.path)
                continue
            yield from walk_files(entry.path, extensions, ignored, _seen=seen)
            continue
        dot = name.rfind(".")  # the extension as os.path.splitext gives it (no dot-files)
        if dot > 0 and name[dot:].lower() in extensions:
            yield entry.path
        elif ignored is not None:
            ignored(entry.path)


class _ClassFolder:
    extensions: frozenset[str] = frozenset()
    kind = ""
    in_process = False
    threaded = False
    reorderable = True  # listed again cheaply; any file read in any order
    named_classes = True  # labels number class_names

    def __init__(self, root: str | os.PathLike[str], provenance: bool = True,
                 splits: bool | None = None) -> None:
        self.root = os.fspath(root)
        self.provenance = provenance
        self.ignored_count = 0  # files passed over by the last listing (not media)
        self.ignored: list[str] = []
        top = class_dirs(self.root)
        #: Split folders (``root/<split>/<class>/``), each record keeping its split; empty
        #: when the top folders are the classes.
        self.splits = split_dirs(self.root, top, splits)
        self.classes = (sorted({c for split in self.splits
                                for c in _subfolders(os.path.join(self.root, split))})
                        if self.splits else top)
        self.description = f"{self.kind}-folder:{os.path.abspath(self.root)}"

    @property
    def class_names(self) -> list[str]:
        """Class names as UTF-8 text (non-UTF-8 folder names with ``\\xNN`` escapes)."""
        return [text_of_name(name) for name in self.classes]

    def items(self) -> Iterator[SourceItem]:
        prefix = len(os.path.join(self.root, ""))
        self.ignored_count, self.ignored = 0, []

        def ignore(path: str) -> None:  # not media: counted, the first ones listed
            self.ignored_count += 1
            if len(self.ignored) < 100:
                self.ignored.append(text_of_name(path[prefix:]))

        splits: list[str | None] = list(self.splits) or [None]
        for split in splits:
            top = self.root if split is None else os.path.join(self.root, split)
            if split is not None:  # files beside the class folders: not in any class
                with os.scandir(top) as scan:
                    for entry in sorted(scan, key=lambda e: e.name):
                        if entry.name[0] != "." and not entry.is_dir():
                            ignore(entry.path)
            for label, name in enumerate(self.classes):
                folder = os.path.join(top, name)
                if split is not None and not os.path.isdir(folder):
                    continue  # a class this split lacks
                for path in walk_files(folder, self.extensions, ignore):
                    # The key is the path relative to the root: stable wherever it lives.
                    yield SourceItem(path[prefix:], (path, label), split)

    def describe(self, item: SourceItem) -> str:
        if item.item is None:  # known by its key alone (the Ray engine's failures)
            return os.path.join(self.root, item.key)
        return str(item.item[0])

    def origin(self, item: SourceItem) -> str:
        """Where the record came from, as stored with it: the file's path under the root."""
        return text_of_name(item.key.replace(os.sep, "/"))


class ImageFolder(_ClassFolder):
    """Images under ``root/<class>/``; JPEG/PNG bytes kept as they are.

    Args:
        root: the folder of class folders.
        encoding: re-encode every image to ``"jpeg"`` or ``"png"`` (default: keep).
        channels: convert to 1, 3 or 4 channels (default: keep).
        resize: ``(height, width)``, or an int bounding the longer side.
        check: what is checked of images stored as they are: ``"structure"`` (default:
            JPEG segments up to the scan and the end marker, PNG chunks with their CRCs and
            IEND, the header's size; microseconds a file: catches files cut short and files
            that are not what they claim), ``"decode"`` (also test-decode every image, JPEG
            at 1/8 scale: damage inside the pixel data too, ~100x the cost) or ``"none"``.
            A failed check is a named :class:`SourceError` at conversion, not in training.
        max_image_pixels: refuse images with more pixels (decompression bombs).
        reduce_16bit: store 16-bit PNGs as their high byte (8-bit PNG) instead of refusing
            them (readers give 8-bit pixels).
        exif_transpose: apply each JPEG's EXIF orientation to its pixels (stored as PNG);
            by default it is kept as stored and not applied, as TensorFlow's decoders do.
        provenance: store each image's path under ``root`` with its record
            (``"__source"``; readers return it with ``DecodeOptions(provenance=True)``).
        splits: whether the top folders are splits, ``root/<split>/<class>/`` (each image
            keeps its split; classes are the union of every split's, numbered by name).
            Default: when every top folder is a split name (``train``, ``val``,
            ``validation``, ``test``, ``dev``, …; :data:`SPLIT_FOLDER_NAMES`) holding class
            folders; a tree where that is unclear is refused, naming the folders.

    CMYK (and YCCK) JPEGs are stored as PNG after Pillow's CMYK->RGB conversion, so every
    reader gives the same pixels. The manifest records these rules under
    ``created_by["conversions"]``.
    """

    extensions = IMAGE_EXTENSIONS
    kind = "image"

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        encoding: str | None = None,
        channels: int | None = None,
        resize: tuple[int, int] | int | None = None,
        check: ImageCheck = "structure",
        max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
        reduce_16bit: bool = False,
        exif_transpose: bool = False,
        provenance: bool = True,
        splits: bool | None = None,
    ) -> None:
        super().__init__(root, provenance, splits)
        self.image = ImageOptions(encoding, channels, resize, check, max_image_pixels,
                                  reduce_16bit, exif_transpose)
        self.description += self.image.described
        self.encoding, self.channels = encoding, channels
        self.reduce_16bit, self.exif_transpose = reduce_16bit, exif_transpose
        # Kept bytes that are not test-decoded cost little per file: worker processes would
        # only add transfer costs. Decoding (a check or a conversion) pays for workers.
        kept = self.image.keeps_bytes
        self.in_process = kept and check != "decode"
        # Kept JPEGs test-decoded by libjpeg-turbo spend their time with the GIL released
        # (reading, decoding at 1/8 scale): threads beat pickling every file to a process.
        self.threaded = kept and check == "decode" and load_simplejpeg() is not None

    @property
    def conversions(self) -> dict[str, str]:
        """How images that readers could not decode alike are stored (for the manifest)."""
        return {
            "cmyk_jpeg": "stored as PNG of Pillow's CMYK->RGB conversion",
            "png_16bit": ("stored as 8-bit PNG of each value's high byte (v >> 8)"
                          if self.reduce_16bit else "refused"),
            "exif_orientation": ("applied to the pixels (JPEGs stored as PNG)"
                                 if self.exif_transpose else "kept as stored, not applied"),
        }

    def schema(self) -> Schema:
        return Schema({
            "image": Image(encoding=self.encoding or "auto", channels=self.channels),
            "label": ClassLabel(self.class_names),
        })

    def load(self, item: Any) -> Mapping[str, Any]:
        path, label = item
        return {"image": self.image.load(path), "label": label}


class AudioFolder(_ClassFolder):
    """Audio files under ``root/<class>/``; WAV/FLAC kept, other formats re-encoded to FLAC.
    ``provenance`` stores each file's path under ``root`` with its record, as
    :class:`ImageFolder` does; ``splits`` reads ``root/<split>/<class>/`` as it does."""

    extensions = AUDIO_EXTENSIONS
    kind = "audio"

    def __init__(self, root: str | os.PathLike[str], *, encoding: str | None = None,
                 provenance: bool = True, splits: bool | None = None) -> None:
        super().__init__(root, provenance, splits)
        self.encoding = encoding
        self._detected: str | None = None

    def schema(self) -> Schema:
        encoding = self.encoding or self._detect_encoding()
        return Schema({"audio": Audio(encoding=encoding), "label": ClassLabel(self.class_names)})

    def _detect_encoding(self) -> str:
        # Kept files stay WAV or FLAC; the schema names one encoding, so mixed folders get FLAC.
        if self._detected is None:
            found = {os.path.splitext(i.item[0])[1].lower() for i in self.items()}
            self._detected = "wav" if found == {".wav"} else "flac"
        return self._detected

    def load(self, item: Any) -> Mapping[str, Any]:
        path, label = item
        return {"audio": load_audio(path, encoding=self.encoding or self._detect_encoding()),
                "label": label}
