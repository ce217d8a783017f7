"""A local filesystem under the ``dying://`` scheme whose process kills itself (SIGKILL) halfway
through putting chosen shards, once each: a Ray worker dying in the middle of a shard write, with
half a shard left at the final name. ``register`` is the Ray workers' setup hook."""

from __future__ import annotations

import os
import signal

import fsspec
from fsspec.implementations.local import LocalFileSystem

SCHEME = "dying"
VICTIMS = ("-00001-of-", "-00004-of-")  # shards whose first upload dies
MARKERS = "TFRECORDKIT_TEST_DEATH_MARKERS"  # a folder: one file per death, made atomically


class DyingFileSystem(LocalFileSystem):
    protocol = (SCHEME,)

    @classmethod
    def _strip_protocol(cls, path):  # type: ignore[no-untyped-def]
        text = os.fspath(path)
        return super()._strip_protocol(text.removeprefix(f"{SCHEME}://"))

    def put_file(self, lpath, rpath, *args, **kwargs):  # type: ignore[no-untyped-def]
        name = os.path.basename(os.fspath(rpath))
        markers = os.environ.get(MARKERS)
        if markers and name.endswith(".tfrecord") and any(v in name for v in VICTIMS):
            try:
                os.close(os.open(os.path.join(markers, name),
                                 os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass  # this shard's worker died once already: the retry goes through
            else:
                with open(lpath, "rb") as src, open(self._strip_protocol(rpath), "wb") as dst:
                    data = src.read()
                    dst.write(data[: len(data) // 2])
                os.kill(os.getpid(), signal.SIGKILL)
        return super().put_file(lpath, rpath, *args, **kwargs)


def register() -> None:
    fsspec.register_implementation(SCHEME, DyingFileSystem, clobber=True)
