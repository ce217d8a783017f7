"""The masked CRC32C that TFRecord framing uses for its length and data checksums."""

from __future__ import annotations

import os
from typing import Any

import crc32c as _crc32c

_MASK_DELTA = 0xA282EAD8


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """Return TFRecord's masked CRC32C (Castagnoli) of ``data``."""
    crc = _crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


#: How many leading bytes of a shard the manifest's ``head_crc32c`` covers.
HEAD_BYTES = 4096


def crc32c_hex(data: bytes | bytearray | memoryview) -> str:
    """The plain CRC32C of ``data`` as 8 hex digits (how the manifest writes checksums)."""
    return f"{_crc32c.crc32c(data):08x}"


def file_checksums(path: str | os.PathLike[str], chunk_size: int = 1 << 22, *,
                   storage: Any = None) -> tuple[str, str]:
    """The plain CRC32C of a whole file and of its first :data:`HEAD_BYTES` bytes (the
    manifest's ``crc32c`` and ``head_crc32c``), from one read of the file; ``storage`` (a
    :class:`~tfrecordkit.format.Storage`) for files that are not local."""
    crc, head = 0, b""
    with (storage.open(path, "rb") if storage is not None else open(path, "rb")) as f:
        while chunk := f.read(chunk_size):
            if len(head) < HEAD_BYTES:
                head += chunk[: HEAD_BYTES - len(head)]
            crc = _crc32c.crc32c(chunk, crc)
    return f"{crc:08x}", crc32c_hex(head)


def file_crc32c(path: str | os.PathLike[str], chunk_size: int = 1 << 22, *,
                storage: Any = None) -> str:
    """The plain CRC32C of a whole file, as 8 hex digits (the manifest's shard checksum)."""
    return file_checksums(path, chunk_size, storage=storage)[0]


def head_crc32c(path: str | os.PathLike[str], *, storage: Any = None) -> str:
    """The plain CRC32C of a file's first :data:`HEAD_BYTES` bytes (all of a smaller file), as
    8 hex digits: what readers check cheaply when they open a shard (a replaced shard)."""
    with (storage.open(path, "rb") if storage is not None else open(path, "rb")) as f:
        return crc32c_hex(f.read(HEAD_BYTES))
