"""Choosing a source for a path: given by name, or inferred when unambiguous."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tfrecordkit.errors import SourceError
from tfrecordkit.sources import (
    AUDIO_EXTENSIONS,
    IMAGE_EXTENSIONS,
    AudioFolder,
    Coco,
    HuggingFace,
    ImageFolder,
    NumpyArrays,
    Source,
    SplitSources,
    Table,
    TextLines,
    class_dirs,
    coco_splits,
    is_coco_root,
    is_huggingface,
    walk_files,
)

__all__ = ["SOURCE_KINDS", "open_source"]

SOURCE_KINDS = ("image-folder", "audio-folder", "text", "table", "numpy", "coco")


def infer_kind(path: str | os.PathLike[str]) -> str:
    """Which source kind ``path`` holds (see :data:`SOURCE_KINDS`), from its files or its
    extension."""
    path = os.fspath(path)
    if os.path.isdir(path) and is_coco_root(path):
        return "coco"  # annotations/instances_<split>.json beside the image folders
    if os.path.isdir(path):
        classes = class_dirs(path)
        folder = os.path.join(path, classes[0])
        images = next(walk_files(folder, IMAGE_EXTENSIONS), None)
        audio = next(walk_files(folder, AUDIO_EXTENSIONS), None)
        if images and not audio:
            return "image-folder"
        if audio and not images:
            return "audio-folder"
        raise SourceError(path, "holds both images and audio (or neither); pass --source")
    lowered = path.lower()
    if lowered.endswith((".csv", ".jsonl", ".ndjson", ".parquet")):
        return "table"
    if lowered.endswith((".npy", ".npz")):
        return "numpy"
    if lowered.endswith(".json"):
        return "coco"  # COCO's instances_*.json (tables are .jsonl)
    if lowered.endswith(".txt"):
        return "text"
    raise SourceError(path, "cannot tell the source type; pass --source "
                            f"({', '.join(SOURCE_KINDS)})")


def open_source(path: str | os.PathLike[str] | Any, kind: str | None = None,
                **options: object) -> Source:
    """The source for ``path``: ``kind`` is one of :data:`SOURCE_KINDS`, or None to infer.
    ``options`` go to the source's class (e.g. ``provenance=False``, ``ImageFolder``'s
    ``channels=``). ``path`` may also be a Hugging Face ``datasets`` object (a ``Dataset``,
    ``IterableDataset`` or a dict of them by split; see
    :class:`~tfrecordkit.sources.HuggingFace`), or a mapping of split names to paths or
    sources (``{"train": "instances_train.json", "val": "instances_val.json"}``: a
    :class:`~tfrecordkit.sources.SplitSources`, each opened with ``kind`` and ``options``). A
    ``.json`` file is COCO's detection annotations (``images=`` names their image folder; see
    :class:`~tfrecordkit.sources.Coco`); a folder in COCO's layout (``annotations/
    instances_<split>.json`` beside the image folders) is every split it holds."""
    if is_huggingface(path):
        return HuggingFace(path, **options)  # type: ignore[arg-type]
    if isinstance(path, Mapping):  # split -> path or source
        return SplitSources({str(split): part if isinstance(part, Source)
                             else open_source(part, kind, **options)
                             for split, part in path.items()})
    path = os.fspath(path)
    if not os.path.exists(path):
        raise SourceError(path, "no such file or directory")
    kind = kind or infer_kind(path)
    if kind == "image-folder":
        return ImageFolder(path, **options)  # type: ignore[arg-type]
    if kind == "audio-folder":
        return AudioFolder(path, **options)  # type: ignore[arg-type]
    if kind == "table":
        return Table(path, **options)  # type: ignore[arg-type]
    if kind == "numpy":
        return NumpyArrays(path)
    if kind == "coco":
        if os.path.isdir(path):  # COCO's layout: one split per annotations/instances_*.json
            return SplitSources(coco_splits(path, **options))
        return Coco(path, **options)  # type: ignore[arg-type]
    if kind == "text":
        if path.lower().endswith((".csv", ".jsonl", ".ndjson", ".parquet")):
            return Table(path, **options)  # type: ignore[arg-type]
        return TextLines(path)
    raise SourceError(path, f"unknown source {kind!r}; one of {', '.join(SOURCE_KINDS)}")
