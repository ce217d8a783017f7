"""Turning path arguments (files, globs, dataset directories, URLs) into record files."""

from __future__ import annotations

import glob
from typing import Any

from tfrecordkit.errors import DatasetError
from tfrecordkit.format import Storage
from tfrecordkit.store._load import is_dataset_dir, load_manifest
from tfrecordkit.store._lock import unfinished_conversion
from tfrecordkit.store._manifest import MANIFEST_NAME

__all__ = ["expand_record_paths"]

_NOT_RECORDS = (".index", ".json", ".tmp", ".restarts")


def _is_record_file(name: str) -> bool:
    """A record file's name as writers name them: ``*.tfrecord*`` (ours, TensorFlow's), TFX's
    ``data_tfrecord-00000-of-00001.gz``, ``*.tfrecords``, ``*.tfrec``; not sidecars or
    hidden files."""
    lower = name.lower()
    return (("tfrecord" in lower or lower.endswith(".tfrec"))
            and not lower.endswith(_NOT_RECORDS) and not name.startswith("."))


def expand_record_paths(args: list[str], storage_options: dict[str, Any] | None = None, *,
                        manifests: bool = True, folders: bool = True,
                        storage: Storage | None = None) -> list[str]:
    """Return the record files named by ``args``: files, glob patterns or directories
    (local paths or URLs; read through ``storage`` if given).

    A dataset directory stands for the shards its manifest lists (unless ``manifests`` is
    False); any other directory for the record files in it (``*.tfrecord*``, not index
    sidecars), or, with ``folders=False``, is refused.

    Raises:
        DatasetError: a path that does not exist, a pattern that matches nothing, a directory
            without record files (or any directory, with ``folders=False``).
    """
    paths: list[str] = []
    given = storage
    for arg in args:
        storage = given or Storage.of(arg, storage_options)
        if manifests and is_dataset_dir(arg, storage):
            manifest = load_manifest(arg, storage=storage)
            paths.extend(storage.join(arg, shard.file) for split in manifest.splits.values()
                         for shard in split.shards)
        elif storage.isdir(arg):
            names = storage.listdir(arg)
            unfinished = unfinished_conversion(arg, names)
            if unfinished is not None:
                raise unfinished
            if not folders:
                raise DatasetError(f"{arg}: a directory without {MANIFEST_NAME}; pass its "
                                   "TFRecord files (or a glob) instead")
            found = sorted(storage.join(arg, name) for name in names if _is_record_file(name))
            if not found:
                raise DatasetError(f"{arg}: directory holds no TFRecord files (names with "
                                   "'tfrecord' in them, *.tfrec)")
            paths.extend(_files_only(found, storage))
        elif storage.exists(arg):
            paths.append(arg)
        elif glob.has_magic(arg):
            matched = storage.glob(arg)
            if not matched:
                raise DatasetError(f"no TFRecord files match {arg!r}")
            paths.extend(_files_only(matched, storage))
        else:
            if not storage.local:
                storage.check_writable_root(arg)  # a missing bucket, said so
            raise DatasetError(f"{arg}: no such file or directory")
    return paths


def _files_only(paths: list[str], storage: Storage) -> list[str]:
    """``paths`` (listed or matched by a pattern), refusing a directory among them."""
    for path in paths if storage.local else ():  # object stores have no such directories
        if storage.isdir(path):
            raise DatasetError(f"{path}: a directory, not a TFRecord file (its name matched)")
    return paths
