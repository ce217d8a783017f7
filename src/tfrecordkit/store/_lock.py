"""One writer per dataset directory: an advisory lock that dies with its owner."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from tfrecordkit.errors import DatasetError

__all__ = ["LOCK_NAME", "STAGING", "OutputLock", "unfinished_conversion"]

LOCK_NAME = ".tfrecordkit.lock"
#: The folder a conversion spills and stages shards in, inside its output directory.
STAGING = ".tfrecordkit-staging"


def unfinished_conversion(directory: str, names: list[str] | set[str]) -> DatasetError | None:
    """The error to give for a folder a conversion left unfinished (its staging folder or
    lock file is there, its manifest not yet), given the folder's file ``names``."""
    if STAGING not in names and LOCK_NAME not in names:
        return None
    return DatasetError(f"{directory}: a conversion into this folder did not finish (it has "
                        "no dataset.json yet, and its staging files are there): run the same "
                        "conversion again to resume it (or finish it), then read the folder")


class OutputLock:
    """An exclusive ``flock`` on ``<directory>/.tfrecordkit.lock``, holding the owner's pid
    and host for the message a second writer gets.

    The operating system drops the lock when its owner exits, however it exits (SIGKILL
    included), so a stale lock file never blocks the next run; a clean finish removes it.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`DatasetError` naming its owner."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = _read_owner(fd)
                os.close(fd)
                raise DatasetError(f"{self.path.parent}: another conversion is writing here "
                                   f"({owner}); wait for it to finish or stop it") from None
            except OSError:
                os.close(fd)
                raise
            # The owner before us removes the file as it lets go: make sure we locked the
            # file that is there now, not one that was just unlinked.
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": time.strftime("%Y-%m-%dT%H:%M:%S")}).encode())
        self._fd = fd

    def release(self) -> None:
        """Drop the lock and remove its file (idempotent)."""
        if self._fd is not None:
            self.path.unlink(missing_ok=True)  # while still held, so no one else's goes
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _read_owner(fd: int) -> str:
    try:
        owner = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {owner['pid']} on {owner['host']} since {owner['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "owner unknown"
