"""WebDataset shards: tar files ``<split>-000000.tar`` of samples ``<key>.<ext>`` (PAX
headers, so long names stay whole)."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterator
from typing import Any

from tfrecordkit.exporters._rows import Chunk, Rows, member_name
from tfrecordkit.schema import SOURCE_FEATURE, Boxes, Image

__all__ = ["WebDataset"]


class WebDataset:
    """Per record: ``<key>.jpg``/``.png`` (the first image's bytes as stored; raw pixels as
    PNG), further images and audio ``<key>.<name>.<ext>``, ``<key>.cls`` (the class id),
    binary values ``<key>.<name>.bin`` (their bytes), and ``<key>.json`` with every other
    value and the class names. A feature name in a member name is percent-encoded (no
    ``/``: a name never splits a sample or leaves the archive)."""

    name = "webdataset"
    description = "WebDataset tar shards"
    arrow = False

    def write_split(self, folder: Any, label: str, chunks: Iterator[Chunk], rows: Rows,
                    *, per_file: int, total: int) -> list[str]:
        files: list[str] = []
        archive: tarfile.TarFile | None = None
        written = 0
        first_image = next(iter(rows.schema.of_kind(Image)), None)
        found = rows.schema.class_label()
        classes = None if found is None else (found[0], list(found[1].names))
        try:
            for chunk in chunks:
                for row in chunk:
                    if archive is None or written % per_file == 0:
                        if archive is not None:
                            archive.close()
                        files.append(folder.path(f"{label}-{len(files):06d}.tar"))
                        # One open archive at a time, rolled over; the finally closes it.
                        archive = tarfile.open(  # noqa: SIM115
                            files[-1], "w", format=tarfile.PAX_FORMAT)
                    key = f"{label}_{written:09d}"
                    for name, data in _sample(row, rows, classes, first_image).items():
                        info = tarfile.TarInfo(f"{key}.{name}")
                        info.size, info.mtime, info.mode = len(data), 0, 0o644
                        archive.addfile(info, io.BytesIO(data))
                    written += 1
        finally:
            if archive is not None:
                archive.close()
        return files

    def finish(self, folder: Any, labels: list[str]) -> None:
        """Nothing to add: each tar stands alone."""


def _sample(row: dict[str, Any], rows: Rows, label: tuple[str, list[str]] | None,
            first_image: str | None) -> dict[str, bytes]:
    """One record's files by extension: media, ``cls``, ``bin`` and ``json`` for the rest."""
    out: dict[str, bytes] = {}
    rest: dict[str, Any] = {}
    boxes = rows.schema.of_kind(Boxes)
    for name in rows.names:
        value = row[name]
        if name in rows.media or name in rows.raw_images:
            extension = rows.extension(name, value)
            out[extension if name == first_image else f"{member_name(name)}.{extension}"] = value
        elif isinstance(value, bytes):
            out[f"{member_name(name)}.bin"] = value
        elif label is not None and name == label[0]:
            out["cls"] = str(value).encode()
            rest[name] = value
            rest[f"{name}_name"] = label[1][value]
        elif name in boxes:
            names = boxes[name].names
            rest[name] = {**value, "label_names": [names[i] for i in value["labels"]]}
        elif rows.coco is not None and name == "objects":
            names = rows.coco.feature.names
            rest[name] = {**value, "category_names": [names[i] for i in value["category"]]}
        else:
            rest[name] = value
    if SOURCE_FEATURE in row:
        rest[SOURCE_FEATURE] = row[SOURCE_FEATURE]
    out["json"] = json.dumps(rest, ensure_ascii=False, allow_nan=True).encode(
        "utf-8", "surrogateescape")
    return out
