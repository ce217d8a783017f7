"""Turning command-line path arguments (files, globs, dataset directories) into record files."""

from __future__ import annotations

import glob
import os

from tfrecordkit.errors import DatasetError
from tfrecordkit.store import MANIFEST_NAME, load_manifest

_NOT_RECORDS = (".index", ".json", ".tmp")


def expand_record_paths(args: list[str]) -> list[str]:
    """Return the record files named by ``args``: files, glob patterns or directories.

    A dataset directory stands for the shards its manifest lists; any other directory for the
    record files in it (``*.tfrecord*``, not index sidecars).
    """
    paths: list[str] = []
    for arg in args:
        if os.path.isdir(arg) and os.path.exists(os.path.join(arg, MANIFEST_NAME)):
            manifest = load_manifest(arg)
            paths.extend(os.path.join(arg, shard.file) for split in manifest.splits.values()
                         for shard in split.shards)
        elif os.path.isdir(arg):
            found = sorted(
                os.path.join(arg, name)
                for name in os.listdir(arg)
                if ".tfrecord" in name
                and not name.endswith(_NOT_RECORDS)
                and not name.startswith(".")
            )
            if not found:
                raise DatasetError(f"{arg}: directory holds no *.tfrecord files")
            paths.extend(found)
        elif os.path.exists(arg):
            paths.append(arg)
        elif glob.has_magic(arg):
            matched = sorted(glob.glob(arg))
            if not matched:
                raise DatasetError(f"{arg}: pattern matches no files")
            paths.extend(matched)
        else:
            raise DatasetError(f"{arg}: no such file or directory")
    return paths
