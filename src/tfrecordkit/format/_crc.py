"""The masked CRC32C that TFRecord framing uses for its length and data checksums."""

from __future__ import annotations

import crc32c as _crc32c

_MASK_DELTA = 0xA282EAD8


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """Return TFRecord's masked CRC32C (Castagnoli) of ``data``."""
    crc = _crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF
