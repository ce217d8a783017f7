"""Where files live: the local disk, or any fsspec filesystem (``s3://``, ``gs://``,
``http(s)://``, ``memory://``, ...).

A :class:`Storage` is resolved once per dataset (:meth:`Storage.of`) and passed down to
framing, index, manifest, writer and readers. Local files keep their fast paths (``mmap``,
``pread``, atomic ``rename``); remote files are read in large blocks and by ranged requests,
and written whole (object stores have no rename: an object appears only once complete).
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import io
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO

from tfrecordkit.errors import MissingDependencyError, StorageError

__all__ = ["LOCAL", "PathLike", "Storage", "is_remote", "local_path"]

PathLike = str | os.PathLike[str]

READ_BLOCK = 8 << 20
"""Bytes fetched per request when reading a remote file sequentially."""

MERGE_GAP = 8 << 20
"""Ranged reads of one file closer than this are merged into one request."""


def is_remote(path: PathLike) -> bool:
    """Return whether ``path`` is a URL with a scheme other than ``file://``."""
    text = os.fspath(path)
    return "://" in text and not text.startswith("file://")


def local_path(path: PathLike) -> str:
    """Return ``path`` as a plain string, stripping a ``file://`` prefix."""
    text = os.fspath(path)
    return text[len("file://") :] if text.startswith("file://") else text


def _fsspec() -> Any:
    try:
        import fsspec
    except ImportError as err:
        raise MissingDependencyError("fsspec", "remote", "reading or writing URLs") from err
    return fsspec


_CONDITION_FAILED = ("pre-conditions you specified did not hold", "PreconditionFailed",
                     "ConditionalRequestConflict")

_BUCKET_PROTOCOLS = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")


@contextlib.contextmanager
def remote_errors(url: str) -> Iterator[None]:
    """Turn a filesystem's exceptions into one-line :class:`StorageError`s naming ``url``."""
    try:
        yield
    except (StorageError, MissingDependencyError):
        raise
    except FileNotFoundError as err:
        raise StorageError(url, f"not found ({_reason(err)})") from None
    except PermissionError as err:
        raise StorageError(url, f"permission denied ({_reason(err)})") from None
    except Exception as err:
        name = type(err).__name__
        if name in ("NoCredentialsError", "PartialCredentialsError", "DefaultCredentialsError",
                    "RefreshError"):
            raise StorageError(url, f"no credentials for this store ({name}: {err}); set "
                               "AWS_* variables, Google application-default credentials, "
                               "or pass storage_options") from None
        if isinstance(err, OSError | ValueError) or "botocore" in type(err).__module__ or \
                "aiohttp" in type(err).__module__ or "google" in type(err).__module__:
            raise StorageError(url, f"{name}: {_reason(err)}") from None
        raise


def _reason(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:300] if text else type(err).__name__


class Storage:
    """A filesystem: the local disk (``fs`` None) or an fsspec filesystem.

    Paths given to its methods are what users wrote: local paths, or full URLs. Pickles
    (by protocol and options), so loaders can send it to worker processes.
    """

    def __init__(self, fs: Any = None, options: Mapping[str, Any] | None = None) -> None:
        self._fs = fs
        self._pid = os.getpid()
        self.options = dict(options or {})

    @property
    def fs(self) -> Any:
        """The fsspec filesystem (None: local); made afresh in a forked child process, since
        async filesystems (s3fs, gcsfs) can't be used across a fork."""
        if self._fs is not None and os.getpid() != self._pid:
            protocol = self.protocol
            self._fs = _fsspec().filesystem(protocol, **self.options)
            self._pid = os.getpid()
        return self._fs

    @classmethod
    def of(cls, url: PathLike | Sequence[PathLike],
           storage_options: Mapping[str, Any] | None = None) -> Storage:
        """The storage a path or URL (or the first of several) lives on."""
        first = url if isinstance(url, str | os.PathLike) else (url[0] if url else "")
        text = os.fspath(first)
        if not is_remote(text):
            return LOCAL
        fsspec = _fsspec()
        options = _with_defaults(text, storage_options)
        with remote_errors(text):
            fs, _ = fsspec.core.url_to_fs(text, **options)
        return cls(fs, options)

    @property
    def local(self) -> bool:
        return self._fs is None

    @property
    def protocol(self) -> str:
        if self._fs is None:
            return "file"
        protocol = self._fs.protocol
        return protocol[0] if isinstance(protocol, tuple | list) else str(protocol)

    def __reduce__(self) -> tuple[Any, ...]:
        if self._fs is None:
            return (_local, ())
        return (_remote, (self.protocol, self.options))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Storage) and (self.protocol, self.options) == (
            other.protocol, other.options)

    def __hash__(self) -> int:
        return hash(self.protocol)

    def __repr__(self) -> str:
        return "Storage(local)" if self._fs is None else f"Storage({self.protocol}://)"

    # -- names ------------------------------------------------------------------------

    def join(self, base: PathLike, name: str) -> str:
        """``name`` inside the folder ``base``."""
        text = os.fspath(base)
        if self.fs is None:
            return os.path.join(text, name)
        return text.rstrip("/") + "/" + name

    def url(self, path: str) -> str:
        """A path as the filesystem lists it, made a full URL again."""
        if self.fs is None or "://" in path:
            return path
        return f"{self.protocol}://{path}"

    # -- queries ----------------------------------------------------------------------

    def _fresh(self, path: str) -> None:
        """Forget cached listings of ``path``: other processes may have changed it."""
        self.fs.invalidate_cache(self.fs._strip_protocol(path))

    def check_writable_root(self, url: str) -> None:
        """Raise :class:`StorageError` if the bucket of ``url`` does not exist (object stores);
        writing never creates buckets."""
        if self._fs is None or self.protocol not in _BUCKET_PROTOCOLS:
            return
        bucket = self.fs._strip_protocol(url).split("/", 1)[0]
        with remote_errors(url):
            found = self.fs.exists(bucket)
        if not found:
            raise StorageError(url, f"bucket {bucket!r} does not exist (or these credentials "
                                    "can't see it)")

    def _ask(self, path: PathLike, local: Callable[[str], Any], remote: str) -> Any:
        """A question about one file: ``local(path)`` on disk, else the fsspec method
        ``remote``, asked afresh (other processes may have changed the store)."""
        text = os.fspath(path)
        if self.fs is None:
            return local(local_path(text))
        with remote_errors(text):
            self._fresh(text)
            return getattr(self.fs, remote)(text)

    def exists(self, path: PathLike) -> bool:
        return bool(self._ask(path, os.path.exists, "exists"))

    def isfile(self, path: PathLike) -> bool:
        return bool(self._ask(path, os.path.isfile, "isfile"))

    def isdir(self, path: PathLike) -> bool:
        return bool(self._ask(path, os.path.isdir, "isdir"))

    def size(self, path: PathLike) -> int:
        return int(self._ask(path, os.path.getsize, "size"))

    def listdir(self, path: PathLike) -> list[str]:
        """Names (not paths) of the entries in the folder ``path``."""
        text = os.fspath(path)
        if self.fs is None:
            return os.listdir(local_path(text))
        with remote_errors(text):
            if not self.fs.exists(text):
                return []
            return [entry.rstrip("/").rsplit("/", 1)[-1]
                    for entry in self.fs.ls(text, detail=False, refresh=True)]

    def sizes(self, path: PathLike) -> dict[str, int]:
        """Sizes of the files in the folder ``path``, by name (one listing request)."""
        text = os.fspath(path)
        if self.fs is None:
            folder = local_path(text)
            return {name: os.path.getsize(os.path.join(folder, name))
                    for name in os.listdir(folder)}
        with remote_errors(text):
            if not self.fs.exists(text):
                return {}
            entries = self.fs.ls(text, detail=True, refresh=True)
        found = {entry["name"].rstrip("/").rsplit("/", 1)[-1]: int(entry.get("size") or 0)
                 for entry in entries if entry.get("type") == "file"}
        with _WARM_LOCK:  # the next open() of these files needs no size request
            for name, size in found.items():
                _LISTED[(self.protocol, self.join(text, name))] = size
            while len(_LISTED) > _MAX_LISTED:
                _LISTED.pop(next(iter(_LISTED)))
        return found

    def glob(self, pattern: str) -> list[str]:
        """Files matching ``pattern``, sorted (full URLs for remote storage)."""
        if self.fs is None:
            import glob

            return [m for m in sorted(glob.glob(local_path(pattern))) if os.path.isfile(m)]
        with remote_errors(pattern):
            found = self.fs.glob(pattern, detail=True)
        return sorted(self.url(path) for path, info in found.items()
                      if info.get("type") == "file")

    # -- reading and writing ------------------------------------------------------------

    def open(self, path: PathLike, mode: str = "rb", *, buffering: int = -1) -> BinaryIO:
        """A binary file object. Remote files opened for reading are read front to back in
        blocks of :data:`READ_BLOCK` bytes, the next block downloading while the current one
        is consumed; ``seek`` works but restarts the download there."""
        text = os.fspath(path)
        if self.fs is None:
            return open(local_path(text), mode, buffering=buffering)  # type: ignore[return-value]
        with remote_errors(text):
            if "r" in mode:
                with _WARM_LOCK:
                    warm = _WARM.pop((self.protocol, text), None)
                if warm is not None:
                    return _PrefetchingReader(self, text, *warm.result())  # type: ignore[return-value]
                return _PrefetchingReader(self, text, self._size_for_read(text))  # type: ignore[return-value]
            return self.fs.open(text, mode)  # type: ignore[no-any-return]

    def prefetch(self, path: str) -> None:
        """Start downloading the first block of ``path`` (remote), for its next :meth:`open`:
        reading file after file then overlaps each file's first request with the one before."""
        if self._fs is None:
            return
        with _WARM_LOCK:
            if (self.protocol, path) in _WARM:
                return
            if len(_WARM) >= _MAX_WARM:  # never opened: drop the oldest
                _WARM.pop(next(iter(_WARM))).cancel()
            _WARM[(self.protocol, path)] = _PREFETCH_POOL.submit(self._first_block, path)

    def _first_block(self, path: str) -> tuple[int, bytes]:
        size = self._size_for_read(path)
        with remote_errors(path):
            return size, bytes(self.fs.cat_file(path, start=0, end=min(size, READ_BLOCK)))

    def _size_for_read(self, path: str) -> int:
        """A file's size: from the folder's listing just made (see :meth:`sizes`), else asked."""
        with _WARM_LOCK:
            listed = _LISTED.pop((self.protocol, path), None)
        if listed is not None:
            return listed
        with remote_errors(path):
            self._fresh(path)
            return int(self.fs.size(path))

    def read_bytes(self, path: PathLike) -> bytes:
        text = os.fspath(path)
        if self.fs is None:
            with open(local_path(text), "rb") as f:
                return f.read()
        with remote_errors(text):
            return bytes(self.fs.cat_file(text))

    def write_bytes(self, path: PathLike, data: bytes) -> None:
        """Write a whole file atomically: readers see the old file or the new one."""
        text = os.fspath(path)
        if self.fs is None:
            target = local_path(text)
            tmp = f"{target}.tmp-{os.getpid()}"
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
            return
        with remote_errors(text):
            self.fs.pipe_file(text, data)  # one PUT: the object appears whole

    def version(self, path: PathLike) -> str | None:
        """A token that changes whenever the file at ``path`` is replaced (None: no file):
        locally its inode, size and modification time in ns (every atomic replace makes a
        new inode); on object stores the object's ETag (or generation)."""
        text = os.fspath(path)
        if self.fs is None:
            try:
                st = os.stat(local_path(text))
            except FileNotFoundError:
                return None
            return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
        with remote_errors(text):
            self._fresh(text)
            try:
                info = self.fs.info(text)
            except FileNotFoundError:
                return None
        tag = info.get("ETag") or info.get("generation") or info.get("etag")
        return str(tag) if tag is not None else f"{info.get('size')}:{info.get('mtime')}"

    def replace_if(self, path: PathLike, data: bytes, version: str | None) -> bool:
        """Write a whole file atomically only if the file there still has ``version`` (see
        :meth:`version`; None: only if there is none). Returns False, writing nothing, if it
        has changed. Locally the caller must hold the folder's lock (the check and the rename
        are then one step); on S3 the PUT carries ``If-Match`` (``If-None-Match: *``); on
        other stores, which have no conditional write here, the version is compared and the
        file written, not atomically together."""
        text = os.fspath(path)
        if self.fs is not None and self.protocol in ("s3", "s3a"):
            match = {"IfMatch": version} if version is not None else {"IfNoneMatch": "*"}
            with remote_errors(text):
                try:
                    self.fs.pipe_file(text, data, **match)
                except OSError as err:
                    # s3fs turns 412 PreconditionFailed (and 409 ConditionalRequestConflict,
                    # another conditional write under way) into OSError, keeping AWS's words.
                    if any(w in f"{err} {err.__cause__}" for w in _CONDITION_FAILED):
                        return False
                    raise
            return True
        if self.version(text) != version:
            return False
        self.write_bytes(text, data)
        return True

    def put_file(self, local: PathLike, path: PathLike) -> None:
        """Move the finished local file ``local`` to ``path`` (a rename, or an upload)."""
        text = os.fspath(path)
        if self.fs is None:
            os.replace(os.fspath(local), local_path(text))
            return
        with remote_errors(text):
            self.fs.put_file(os.fspath(local), text)
        os.unlink(os.fspath(local))

    def remove(self, path: PathLike) -> None:
        """Delete a file; a missing one is fine."""
        text = os.fspath(path)
        if self.fs is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(local_path(text))
            return
        with remote_errors(text), contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(text)

    def makedirs(self, path: PathLike) -> None:
        text = os.fspath(path)
        if self.fs is None:
            os.makedirs(local_path(text), exist_ok=True)
            return
        with remote_errors(text):
            self.fs.makedirs(text, exist_ok=True)

    def read_many(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        """Whole files at once (remote: concurrent requests); None for a missing one."""
        if self.fs is None:
            out: dict[str, bytes | None] = {}
            for path in paths:
                try:
                    out[path] = self.read_bytes(path)
                except FileNotFoundError:
                    out[path] = None
            return out
        if not paths:
            return {}
        with remote_errors(paths[0]):
            found = self.fs.cat(list(paths), on_error="return")
        result: dict[str, bytes | None] = {}
        for path in paths:
            value = found.get(path, found.get(self.fs._strip_protocol(path)))
            if isinstance(value, FileNotFoundError):
                result[path] = None
            elif isinstance(value, BaseException):
                with remote_errors(path):
                    raise value
            else:
                result[path] = value
        return result

    def read_spans(self, spans: Sequence[tuple[str, int, int]]) -> list[bytes]:
        """The bytes ``[start, end)`` of each ``(path, start, end)``; remote requests go out
        together."""
        if self.fs is None:
            out = []
            for path, start, end in spans:
                with open(local_path(path), "rb", buffering=0) as f:
                    out.append(os.pread(f.fileno(), end - start, start))
            return out
        # An empty span asks for nothing: a store would answer a range at the object's end
        # with 416 (range not satisfiable).
        wanted = [span for span in spans if span[2] > span[1]]
        if not wanted:
            return [b"" for _ in spans]
        with remote_errors(wanted[0][0]):
            blobs = self.fs.cat_ranges([p for p, _, _ in wanted], [s for _, s, _ in wanted],
                                       [e for _, _, e in wanted], on_error="return")
        for (path, _, _), blob in zip(wanted, blobs, strict=True):
            if isinstance(blob, BaseException):
                with remote_errors(path):
                    raise blob
        got = iter(blobs)
        return [bytes(next(got)) if end > start else b"" for _, start, end in spans]


#: Connections an S3 client keeps (botocore's default is 10): reads ahead of a loader have
#: more requests in flight than that, each waiting a round trip.
S3_CONNECTIONS = 64


def _with_defaults(url: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` with this package's defaults where not given: for ``s3://``, a connection
    pool of :data:`S3_CONNECTIONS`."""
    out = dict(options or {})
    if url.startswith(("s3://", "s3a://")):
        config = dict(out.get("config_kwargs") or {})
        config.setdefault("max_pool_connections", S3_CONNECTIONS)
        out["config_kwargs"] = config
    return out


class _PrefetchingReader(io.RawIOBase):
    """Sequential reads of a remote file: ranged requests of :data:`READ_BLOCK` bytes, the
    next ones fetched on a thread while the caller consumes the current one."""

    _AHEAD = 2  # blocks in flight beyond the one being read

    def __init__(self, storage: Storage, path: str, size: int, first: bytes | None = None
                 ) -> None:
        super().__init__()
        self._storage, self._path, self._size = storage, path, size
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tfrecordkit-read")
        self._start(0, first)

    def _start(self, position: int, first: bytes | None = None) -> None:
        self._position = position
        self._block = memoryview(b"")
        self._whole = memoryview(b"")  # the current block, and where it starts in the file
        self._whole_start = position
        self._next = position  # where the next requested block begins
        self._pending: collections.deque[concurrent.futures.Future[bytes]] = collections.deque()
        if first is not None:  # the first block, already downloaded
            done: concurrent.futures.Future[bytes] = concurrent.futures.Future()
            done.set_result(first)
            self._pending.append(done)
            self._next = len(first)
        self._fill()

    def _fetch(self, start: int, end: int) -> bytes:
        with remote_errors(self._path):
            return bytes(self._storage.fs.cat_file(self._path, start=start, end=end))

    def _fill(self) -> None:
        while len(self._pending) < self._AHEAD and self._next < self._size:
            end = min(self._next + READ_BLOCK, self._size)
            self._pending.append(self._pool.submit(self._fetch, self._next, end))
            self._next = end

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = 0) -> int:
        target = {0: offset, 1: self._position + offset, 2: self._size + offset}[whence]
        if target == self._position:
            return target
        start, end = self._whole_start, self._whole_start + len(self._whole)
        if start <= target <= end:  # inside the block at hand (e.g. back to 0 after a sniff)
            self._block = self._whole[target - start :]
            self._position = target
            return target
        for future in self._pending:
            future.cancel()
        self._start(max(0, target))
        return self._position

    def readinto(self, buffer: Any) -> int:
        if not self._block:
            if not self._pending:
                return 0
            self._whole_start += len(self._whole)
            self._whole = self._block = memoryview(self._pending.popleft().result())
            self._fill()
        count = min(len(buffer), len(self._block))
        buffer[:count] = self._block[:count]
        self._block = self._block[count:]
        self._position += count
        return count

    def close(self) -> None:
        if not self.closed:
            for future in self._pending:
                future.cancel()
            self._pool.shutdown(wait=False)
        super().close()


_PREFETCH_POOL = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="tfrecordkit-prefetch")
# First blocks downloaded ahead of their open(), by (protocol, path); bounded.
_WARM: dict[tuple[str, str], concurrent.futures.Future[tuple[int, bytes]]] = {}
_WARM_LOCK = threading.Lock()
_MAX_WARM = 4
# Sizes from a folder listing, used once by the next open() of each file; bounded.
_LISTED: dict[tuple[str, str], int] = {}
_MAX_LISTED = 100_000


def _local() -> Storage:
    return LOCAL


def _remote(protocol: str, options: dict[str, Any]) -> Storage:
    return Storage.of(f"{protocol}://", options)


LOCAL = Storage()
"""The local disk."""
