"""Opening record files: local paths with ``open``, URLs (``gs://``, ``s3://``) via fsspec."""

from __future__ import annotations

import os
from typing import BinaryIO

from tfrecordkit.errors import MissingDependencyError

PathLike = str | os.PathLike[str]


def is_remote(path: PathLike) -> bool:
    """Return whether ``path`` is a URL with a scheme other than ``file://``."""
    text = os.fspath(path)
    return "://" in text and not text.startswith("file://")


def local_path(path: PathLike) -> str:
    """Return ``path`` as a plain string, stripping a ``file://`` prefix."""
    text = os.fspath(path)
    return text[len("file://") :] if text.startswith("file://") else text


def open_binary(path: PathLike, mode: str, buffering: int = -1) -> BinaryIO:
    """Open ``path`` for binary reading (``"rb"``) or writing (``"wb"``)."""
    if is_remote(path):
        try:
            import fsspec  # type: ignore[import-not-found, import-untyped, unused-ignore]
        except ImportError as err:
            raise MissingDependencyError("fsspec", "remote", f"opening {path}") from err
        return fsspec.open(os.fspath(path), mode).open()  # type: ignore[no-any-return]
    return open(local_path(path), mode, buffering=buffering)  # type: ignore[return-value]
