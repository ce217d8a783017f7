"""Where an export writes: a staging folder beside its output, moved into place whole when the
export is done, with a marker saying what wrote it. An unfinished export is never where a
finished one goes; ``overwrite`` replaces only an earlier export of ours (its marker), never a
folder of other files, and never the dataset being exported or a folder holding it."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

from tfrecordkit.errors import DatasetError, OptionError
from tfrecordkit.format import is_remote
from tfrecordkit.store import MANIFEST_NAME, OutputLock

__all__ = ["MARKER", "StagedOutput"]

#: The file an export of ours holds at its top: what wrote it, from which dataset, when.
MARKER = ".tfrecordkit-export.json"
_STAGING = ".tfrecordkit-export-"


class StagedOutput:
    """An export's output folder, checked before anything is deleted, and its staging folder.

    Use as a context manager: :attr:`staging` is where the targets write; leaving without an
    error writes the marker and swaps the staging folder into place (an earlier export there
    moved aside, then removed); leaving with one removes the staging folder only.

    Args:
        out: the output folder (a symlink to a folder is followed: the export goes where it
            points).
        dataset: the dataset folder the export reads (local), never written into.
        overwrite: replace an earlier export of ours at ``out``.
        marker: what the marker records (target, dataset, splits).

    Raises:
        OptionError: ``out`` is on object storage, is a file, is or holds or lies inside the
            dataset, or holds files that are not an export of ours (or one, without
            ``overwrite``).
    """

    def __init__(self, out: str | os.PathLike[str], dataset: str | None, *, overwrite: bool,
                 marker: dict[str, Any]) -> None:
        text = os.fspath(out)
        if is_remote(text):
            raise OptionError(f"{text}: export writes to a local folder (an output on object "
                              "storage is not supported yet); export locally, then upload the "
                              "folder")
        self.given = text
        self.out = Path(os.path.realpath(text))
        self.marker = marker
        if self.out.exists() and not self.out.is_dir():
            raise OptionError(f"{text}: is a file; export writes a folder: give a folder path")
        if dataset is not None:
            _refuse_overlap(self.out, Path(os.path.realpath(dataset)), text)
        self._previous = self.out.is_dir() and any(self.out.iterdir())
        if self._previous:
            if not (self.out / MARKER).is_file():
                raise OptionError(f"{text}: holds files that are not an export of tfrecordkit "
                                  f"(no {MARKER}); nothing was removed: give a new or empty "
                                  "folder")
            if not overwrite:
                raise OptionError(f"{text}: holds an earlier export; give another output, or "
                                  "overwrite=True (--overwrite) to replace it")
        self.out.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(self.out)
        self.staging = self.out.parent / f".{self.out.name}{_STAGING}{secrets.token_hex(4)}"
        self.staging.mkdir()
        self._lock = OutputLock(self.staging)  # held while staging: a killed run's is stale
        self._lock.acquire()

    def __enter__(self) -> StagedOutput:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            if exc_type is None:
                self._swap()
        finally:
            self._lock.release()
            shutil.rmtree(self.staging, ignore_errors=True)

    def path(self, name: str) -> str:
        """Where a target writes its file ``name`` (in the staging folder)."""
        return str(self.staging / name)

    def final(self, staged: str) -> str:
        """Where the staged file or folder ``staged`` will be once the export is in place."""
        return os.path.join(self.given, os.path.relpath(staged, self.staging))

    def _swap(self) -> None:
        # The lock is held until the folder is in place (another export to this output
        # removes staging folders whose lock is free); its file then goes.
        (self.staging / MARKER).write_text(json.dumps(self.marker, indent=1))
        old = self.out.parent / f".{self.out.name}{_STAGING}old-{secrets.token_hex(4)}"
        if self._previous:
            os.replace(self.out, old)
        else:
            with contextlib.suppress(FileNotFoundError):
                self.out.rmdir()  # an empty folder given as the output
        os.replace(self.staging, self.out)
        (self.out / self._lock.path.name).unlink(missing_ok=True)
        shutil.rmtree(old, ignore_errors=True)


def _refuse_overlap(out: Path, dataset: Path, given: str) -> None:
    if out == dataset or dataset.is_relative_to(out) or out.is_relative_to(dataset):
        where = ("is the dataset" if out == dataset else "holds the dataset"
                 if dataset.is_relative_to(out) else "lies inside the dataset")
        raise OptionError(f"{given}: the output {where} being exported ({dataset}); nothing "
                          "was removed: give a folder outside it")
    if (out / MANIFEST_NAME).exists():
        raise OptionError(f"{given}: holds a tfrecordkit dataset ({MANIFEST_NAME}); nothing "
                          "was removed: give another folder")


def _remove_abandoned(out: Path) -> None:
    """Remove staging folders of exports to ``out`` that were killed (their lock is free)."""
    for folder in out.parent.glob(f".{out.name}{_STAGING}*"):
        if folder.name.startswith(f".{out.name}{_STAGING}old-"):
            shutil.rmtree(folder, ignore_errors=True)
            continue
        lock = OutputLock(folder)
        try:
            lock.acquire()
        except (DatasetError, OSError):
            continue  # another export under way
        lock.release()
        shutil.rmtree(folder, ignore_errors=True)
