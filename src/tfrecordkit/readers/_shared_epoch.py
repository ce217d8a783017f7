"""The epoch a data loader's main process asks for (``set_epoch``), seen by its worker processes,
persistent ones included (each holds its own copy of the dataset, made when it started): two
small files the copies share by name, whatever the start method (fork, spawn)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import weakref
from typing import Any

__all__ = ["SharedEpoch"]


def _remove(paths: tuple[str, ...], owner: int) -> None:
    if os.getpid() == owner:  # a forked copy going away leaves the files to their owner
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def _write(path: str, value: dict[str, Any]) -> None:
    """``value`` as ``path``'s whole content, replaced at once (readers see old or new)."""
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w") as handle:
        json.dump(value, handle)
    os.replace(temporary, path)


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path) as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


class SharedEpoch:
    """What the main process asked (:meth:`ask`: a generation number and the epoch) and what
    the first worker last ran (:meth:`ran_before`), shared by every copy."""

    def __init__(self) -> None:
        handle, self.path = tempfile.mkstemp(prefix="tfrk-epoch-", suffix=".json")
        os.close(handle)
        self.generation = 0
        _write(self.path, {"generation": 0, "epoch": None})
        weakref.finalize(self, _remove, (self.path, self.path + ".ran"), os.getpid())

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "generation": self.generation}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path, self.generation = state["path"], state["generation"]

    def ask(self, epoch: int) -> int:
        """Ask every copy for ``epoch`` from its first step; returns the new generation."""
        self.generation += 1
        _write(self.path, {"generation": self.generation, "epoch": int(epoch)})
        return self.generation

    def asked(self) -> tuple[int, int | None]:
        """The latest request: ``(generation, epoch)`` (epoch None: none yet)."""
        value = _read(self.path)
        generation, epoch = value.get("generation"), value.get("epoch")
        return (generation if isinstance(generation, int) else 0,
                epoch if isinstance(epoch, int) else None)

    def workers_ran(self) -> bool:
        """Whether a worker process has started an epoch of this dataset (its position is
        then the workers', not this process's)."""
        return bool(_read(self.path + ".ran"))

    def ran_before(self, generation: int, epoch: int) -> bool:
        """Note that ``epoch`` of request ``generation`` starts; True the first time it had
        already started before (the same epoch again with no request between)."""
        path = self.path + ".ran"
        value = _read(path)
        again = value.get("ran") == [generation, epoch] and not value.get("warned")
        _write(path, {"ran": [generation, epoch], "warned": bool(value.get("warned")) or again})
        return again
