"""The library's compiled TensorFlow ops, one source each (``_read_frames.cc``: the frame
reader of tf.data's step reader; ``_crop_windows.cc``: a batch's crop windows). Built on
first use against the installed TensorFlow, kept
in the user's cache (``TFRECORDKIT_CACHE``, else ``~/.cache/tfrecordkit``) under a key of their
sources and TensorFlow's version and flags. Without a C++ compiler or TensorFlow's headers,
or with ``TFRECORDKIT_PURE_PYTHON=1``, there are none: the step reader reads in a Python call
and the windows are TensorFlow ops (the same values, slower)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from tfrecordkit.readers.tf_data._exit import exit_safe
from tfrecordkit.store import check_file_stamp, file_stamps

__all__ = ["FrameReader", "build_path", "checked_path", "crop_windows_op", "frame_reader",
           "read_frames_op", "stamp_checked"]

#: The ops' sources, one op each, built into one library.
_SOURCES = tuple(Path(__file__).with_name(name)
                 for name in ("_read_frames.cc", "_crop_windows.cc"))
_OPS_HEADER = Path(__file__).with_name("_ops.h")  # what both ops include
_HEADERS = Path(__file__).parents[2] / "format"  # _crc32c.h, _constants.h: shared with the codec
_lock = threading.Lock()
_built: list[Any] = []  # the library once looked for (None: there is none)


def stamp_checked(files: Sequence[str], stamps: np.ndarray | None = None) -> Any:
    """A dataset of ``files`` (path strings), each given once the local file is checked, as
    TensorFlow's own reader is about to open it, to be the one ``stamps`` (default: taken
    now, see :func:`~tfrecordkit.store.file_stamps`) describes: deleted, replaced or
    rewritten is the :class:`DatasetError` every reader gives, naming it. One ``stat`` a file
    it opens; a file already open is read as it was."""
    stamps = file_stamps(files) if stamps is None else stamps
    pairs = tf.data.Dataset.from_tensor_slices((list(files), np.asarray(stamps, np.int64)))
    return pairs.map(checked_path)


def _check_path(path: bytes, stamp: np.ndarray) -> bytes:
    check_file_stamp(os.fsdecode(path), stamp)
    return path


def _checked_path(path: Any, stamp: Any) -> Any:
    found = tf.numpy_function(exit_safe(_check_path), [path, stamp], tf.string,
                              stateful=False)
    return tf.ensure_shape(found, [])


#: In-graph: ``path`` once its local file is checked to be the one ``stamp`` (a row of
#: :func:`~tfrecordkit.store.file_stamps`) describes (see :func:`stamp_checked`). One traced
#: function for every dataset (the stamp is an input, not a closure).
checked_path: Callable[[Any, Any], Any] = tf.function(
    _checked_path, input_signature=[tf.TensorSpec([], tf.string), tf.TensorSpec([3], tf.int64)],
    autograph=False)


def read_frames_op() -> Callable[..., Any] | None:
    """``op(files, stamps, shards, offsets, lengths)`` → the payloads (``[n]`` string) of the
    frames at ``files[shards[i]]``, byte ``offsets[i]``, ``lengths[i]`` bytes (header and
    footer included), CRC-checked (``DataLossError`` naming the file and byte otherwise), each
    file the one ``stamps`` (``[f, 3]``: inode, size, modification time in ns) describes
    (``FailedPreconditionError`` naming it otherwise, unless the op holds it open already);
    None where the ops cannot be built (warned once) or compiled code is turned off."""
    library = _library_once()
    return None if library is None else library.tfrecordkit_read_frames


class FrameReader:
    """The compiled frame reader over ``files`` as ``stamps`` (``[f, 3]``: inode, size,
    modification time in ns) say they were when the dataset was opened (None: as they are
    now): in-graph, ``reader(shards, offsets, lengths)`` → the frames' payloads. A file
    replaced or rewritten since is refused when the op opens it, naming it (as the
    TF-free readers refuse it), never read at the locations of the files indexed; one the op
    holds open already is read as it was."""

    def __init__(self, op: Callable[..., Any], files: Sequence[str],
                 stamps: np.ndarray | None = None) -> None:
        paths = [os.path.abspath(f) for f in files]
        if stamps is None:
            stamps = file_stamps(paths)
        self._op, self.files, self.stamps = op, tf.constant(paths), tf.constant(stamps)

    def __call__(self, shards: Any, offsets: Any, lengths: Any) -> Any:
        return self._op(self.files, self.stamps, shards, offsets, lengths)


def frame_reader(files: Sequence[str], storage: Any, restarts: Any,
                 stamps: np.ndarray | None) -> FrameReader | None:
    """The frame reader over ``files`` on ``storage`` whose index gives ``restarts``, where
    offsets are the files' own bytes (local files without restart points, so uncompressed);
    None elsewhere, where the records are read in a Python call."""
    op = read_frames_op() if storage.local and restarts is None else None
    return None if op is None else FrameReader(op, files, stamps)


def crop_windows_op() -> Callable[..., Any] | None:
    """``op(images, keys, seed, params)`` → each image's ``[2]`` size from its JPEG header,
    its random-resized-crop ``[4]`` window and its flip, for records' crop keys ``[n, 2]``
    (epoch, record id): :func:`tfrecordkit.codecs.random_crop_boxes`' values bit for bit;
    ``params`` as :func:`~._crop.window_params` gives them. None as for
    :func:`read_frames_op`."""
    library = _library_once()
    return None if library is None else library.tfrecordkit_crop_windows


def _library_once() -> Any:
    if os.environ.get("TFRECORDKIT_PURE_PYTHON", "") not in ("", "0"):
        return None
    with _lock:
        if not _built:
            _built.append(_load())
        return _built[0]


def _load() -> Any:
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    try:
        library = _library(compiler)
    except (OSError, subprocess.SubprocessError, tf.errors.NotFoundError) as err:
        lines = str(err).strip().splitlines() or [type(err).__name__]
        why = next((line for line in lines if "error" in line), lines[-1])  # the compiler's
        warnings.warn(f"tf.data reads shuffled steps in Python and computes crop windows "
                      f"with TensorFlow ops: its compiled ops could not be built "
                      f"({why.strip()[:300]})", RuntimeWarning, stacklevel=4)
        return None
    return library


def _library(compiler: str | None) -> Any:
    """The ops' library, loaded: from the cache, else compiled into it (one process builds,
    others wait on a lock file)."""
    compile_flags, link_flags = tf.sysconfig.get_compile_flags(), tf.sysconfig.get_link_flags()
    built = build_path()
    cache = built.parent
    if not built.exists():
        if compiler is None:
            raise OSError("no C++ compiler (g++, or set CXX)")
        try:
            import fcntl  # POSIX; elsewhere the ops are not built
        except ImportError as err:
            raise OSError("no POSIX file locks here to build the ops under") from err
        cache.mkdir(parents=True, exist_ok=True)
        with open(built.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not built.exists():
                _compile(compiler, compile_flags, link_flags, built)
                _prune(cache, built)
    else:
        with contextlib.suppress(OSError):  # a read-only cache: used, not marked
            os.utime(built)  # marks it used (see _prune)
    return tf.load_op_library(str(built))


#: Builds unused this long are removed when another is built (one per TensorFlow version and
#: source change; other environments sharing the cache mark theirs used each time they load).
STALE_AFTER = 30 * 24 * 3600


def _prune(cache: Path, kept: Path) -> None:
    """Remove the builds in ``cache`` (and their lock files) unused for :data:`STALE_AFTER`
    seconds, except ``kept``."""
    now = time.time()
    for old in cache.glob("kernels-*.so"):
        with contextlib.suppress(OSError):  # gone already, or not ours to remove
            if old != kept and now - old.stat().st_mtime > STALE_AFTER:
                old.unlink()
                old.with_suffix(".lock").unlink(missing_ok=True)


def build_path() -> Path:
    """Where the ops' library built for these sources and this TensorFlow is cached."""
    key = hashlib.sha256("\0".join([
        *(source.read_text() for source in _SOURCES), _OPS_HEADER.read_text(),
        (_HEADERS / "_crc32c.h").read_text(),
        (_HEADERS / "_constants.h").read_text(), tf.__version__,
        *tf.sysconfig.get_compile_flags(), *tf.sysconfig.get_link_flags()]).encode())
    cache = Path(os.environ.get("TFRECORDKIT_CACHE")
                 or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                 / "tfrecordkit") / "ops"
    return cache / f"kernels-{key.hexdigest()[:16]}.so"


def _compile(compiler: str, compile_flags: list[str], link_flags: list[str],
             built: Path) -> None:
    """Compile the ops into ``built`` (written whole or not at all)."""
    handle, scratch = tempfile.mkstemp(suffix=".so", dir=built.parent)
    os.close(handle)
    objects = [f"{scratch}.{k}.o" for k in range(len(_SOURCES))]
    try:
        # Each op compiled at once (TensorFlow's headers make each a few seconds), then
        # linked. No fused multiply-add: the windows' float64 arithmetic must round as NumPy's.
        compiling = [subprocess.Popen(
            [compiler, "-c", "-fPIC", "-O2", "-w", "-ffp-contract=off", *compile_flags,
             f"-I{_HEADERS}", str(source), "-o", out],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for source, out in zip(_SOURCES, objects, strict=True)]
        # Every compiler waited for before one failure is raised: none is left writing an
        # object file after its name is removed.
        finished = [(process.returncode, errors) for process in compiling
                    for _, errors in [process.communicate(timeout=900)]]
        for code, errors in finished:
            if code != 0:
                raise subprocess.SubprocessError(errors.strip() or f"{compiler} failed")
        done = subprocess.run([compiler, "-shared", *objects, "-o", scratch, *link_flags],
                              capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            raise subprocess.SubprocessError(done.stderr.strip() or f"{compiler} failed")
        os.replace(scratch, built)
    finally:
        for leftover in (scratch, *objects):
            if os.path.exists(leftover):
                os.unlink(leftover)
