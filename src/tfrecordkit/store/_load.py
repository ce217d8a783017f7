"""Finding and opening a dataset's manifest: ``dataset.json``, or the one a TFDS-prepared
version folder implies, or the error that says what the folder is instead (a conversion
that did not finish, a missing bucket)."""

from __future__ import annotations

import os
from typing import Any

import msgspec

from tfrecordkit.errors import DatasetError, StorageError
from tfrecordkit.format import Storage
from tfrecordkit.store._lock import unfinished_conversion
from tfrecordkit.store._manifest import MANIFEST_NAME, MAX_MANIFEST_BYTES, Manifest, _one_line
from tfrecordkit.store._sidecar import internalize_lists
from tfrecordkit.store._tfds import is_tfds_dir, tfds_manifest

__all__ = ["is_dataset_dir", "load_manifest"]


def is_dataset_dir(path: Any, storage: Storage | None = None) -> bool:
    """Whether ``path`` is a dataset directory: a folder (local, or a URL prefix) holding
    ``dataset.json``, or a TFDS-prepared version directory (``dataset_info.json``)."""
    if not isinstance(path, str | os.PathLike):
        return False
    storage = storage or Storage.of(path)
    text = os.fspath(path)
    if storage.local and not os.path.isdir(text):
        return False
    return storage.exists(storage.join(text, MANIFEST_NAME)) or is_tfds_dir(text, storage)


def load_manifest(directory: str | os.PathLike[str], *,
                  storage_options: dict[str, Any] | None = None,
                  storage: Storage | None = None) -> Manifest:
    """Read and validate the manifest of a dataset directory (a path or a URL); for a
    TFDS-prepared version directory, the manifest its metadata implies (in memory).

    Raises:
        DatasetError: there is none, it is larger than 64 MiB, or it is not valid JSON
            or not a valid manifest (one line naming the key).
        StorageError: the store can't be reached (credentials, bucket, network).
    """
    storage = storage or Storage.of(directory, storage_options)
    path = storage.join(directory, MANIFEST_NAME)
    try:
        if storage.local:
            with open(path, "rb") as f:
                raw = f.read(MAX_MANIFEST_BYTES + 1)
        else:
            if storage.size(path) > MAX_MANIFEST_BYTES:
                raise DatasetError(f"{path}: larger than {MAX_MANIFEST_BYTES >> 20} MiB; "
                                   "not a manifest")
            raw = storage.read_bytes(path)
    except (FileNotFoundError, StorageError) as err:
        if isinstance(err, StorageError) and not err.reason.startswith("not found"):
            raise
        if is_tfds_dir(directory, storage):  # a TFDS-prepared dataset, read as it is
            return tfds_manifest(directory, storage)
        if not storage.local:
            storage.check_writable_root(os.fspath(directory))  # a missing bucket, said so
        elif storage.isdir(os.fspath(directory)):
            unfinished = unfinished_conversion(os.fspath(directory),
                                               storage.listdir(os.fspath(directory)))
            if unfinished is not None:
                raise unfinished from None
        raise DatasetError(
            f"{directory}: no {MANIFEST_NAME} (not a dataset, or its conversion did not finish)"
        ) from None
    except OSError as err:
        raise DatasetError(f"{path}: cannot be read ({err.strerror})") from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise DatasetError(f"{path}: larger than {MAX_MANIFEST_BYTES >> 20} MiB; not a manifest")
    try:
        data = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError, ValueError) as err:
        raise DatasetError(f"{path}: not valid JSON ({_one_line(err)})") from None
    internalize_lists(data, os.fspath(directory), storage, str(path))
    return Manifest.from_json(data, str(path))
