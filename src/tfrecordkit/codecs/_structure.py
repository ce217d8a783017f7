"""Checking an encoded image's structure without decoding it: what a conversion checks by
default (microseconds a file), catching files cut short and files that are not what they
claim; only a decode finds damage inside the compressed pixel data."""

from __future__ import annotations

import zlib

__all__ = ["image_structure_problem"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Start-of-frame markers (baseline, extended, progressive, lossless, ...): not DHT (C4),
# JPG (C8) or DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})  # TEM, RST0-7: no length field
#: JPEG processes libjpeg-turbo's 8-bit decoder (TensorFlow's, simplejpeg's) cannot read:
#: lossless and hierarchical (differential) frames; other precisions than 8 bits are refused
#: too. Arithmetic-coded baseline and progressive frames decode alike everywhere.
_UNDECODABLE = {0xC3: "lossless", 0xC5: "hierarchical", 0xC6: "hierarchical",
                0xC7: "lossless hierarchical", 0xCB: "lossless", 0xCD: "hierarchical",
                0xCE: "hierarchical", 0xCF: "lossless hierarchical"}


def image_structure_problem(data: bytes, kind: str) -> str | None:
    """What is structurally wrong with a JPEG or PNG (``kind``), or None.

    JPEG: the start-of-image marker, every segment's length up to the first scan, a frame
    header (non-zero size, 1-4 components) before it, and an end-of-image marker at the end.
    PNG: the signature, IHDR first, every chunk whole with its CRC, image data opening a
    zlib stream, and IEND.
    """
    if kind == "jpeg":
        return _jpeg_problem(data)
    if kind == "png":
        return _png_problem(data)
    return None


def _jpeg_problem(data: bytes) -> str | None:
    n = len(data)
    if not data.startswith(b"\xff\xd8"):
        return "not a JPEG (no start-of-image marker)"
    pos, frame = 2, False
    while True:
        if pos + 2 > n:
            return "truncated JPEG (cut off in its headers)"
        if data[pos] != 0xFF:
            return f"broken JPEG (no segment marker at byte {pos}: a segment length is wrong)"
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in _STANDALONE:
            pos += 2
            continue
        if marker == 0xD9:
            return "broken JPEG (end-of-image before any scan)"
        if marker == 0xD8:
            return "broken JPEG (a second start-of-image marker in its headers)"
        if pos + 4 > n:
            return "truncated JPEG (cut off in its headers)"
        length = (data[pos + 2] << 8) | data[pos + 3]
        if length < 2 or pos + 2 + length > n:
            return f"truncated JPEG (segment 0x{marker:02X} at byte {pos} runs past the end)"
        if marker in _SOF:
            if length < 8:
                return "broken JPEG (a frame header too short)"
            if marker in _UNDECODABLE or data[pos + 4] != 8:
                process = (f"a {_UNDECODABLE[marker]} JPEG (SOF{marker - 0xC0})"
                           if marker in _UNDECODABLE else
                           f"a {data[pos + 4]}-bit JPEG (SOF{marker - 0xC0})")
                return (f"{process}, which TensorFlow and the other readers cannot decode: "
                        "re-encode it (e.g. ImageFolder(encoding='png'))")
            height = (data[pos + 5] << 8) | data[pos + 6]
            width = (data[pos + 7] << 8) | data[pos + 8]
            components = data[pos + 9]
            if not width or not 1 <= components <= 4 or length != 8 + 3 * components:
                return (f"broken JPEG (frame header of {height}x{width} pixels with "
                        f"{components} components)")
            frame = True
        elif marker == 0xDA:
            if not frame:
                return "broken JPEG (a scan before any frame header)"
            break
        pos += 2 + length
    # The first end-of-image marker after the scans ends the image (entropy-coded data
    # stuffs every 0xFF): bytes after it (a phone's motion video, a camera's trailer) are
    # kept and ignored by every decoder.
    if data.find(b"\xff\xd9", pos) < 0:
        return "truncated JPEG (no end-of-image marker)"
    return None


def _png_problem(data: bytes) -> str | None:
    if not data.startswith(_PNG_SIGNATURE):
        return "not a PNG (no signature)"
    view = memoryview(data)
    n, pos = len(data), len(_PNG_SIGNATURE)
    first, pixels = True, False
    while pos + 12 <= n:
        length = int.from_bytes(view[pos : pos + 4], "big")
        kind = bytes(view[pos + 4 : pos + 8])
        end = pos + 12 + length
        if end > n:
            return f"truncated PNG (chunk {kind!r} at byte {pos} runs past the end)"
        stored = int.from_bytes(view[end - 4 : end], "big")
        if zlib.crc32(view[pos + 4 : end - 4]) != stored:
            return f"corrupt PNG (chunk {kind!r} at byte {pos} fails its CRC)"
        if first and kind != b"IHDR":
            return "broken PNG (its first chunk is not IHDR)"
        first = False
        if kind == b"IDAT":
            if not pixels and not _zlib_header(view[pos + 8 : end - 4]):
                return "corrupt PNG (its image data is not a zlib stream)"
            pixels = True
        elif kind == b"IEND":
            return None if pixels else "broken PNG (no image data: IDAT)"
        pos = end
    return "truncated PNG (no IEND chunk)"


def _zlib_header(data: memoryview) -> bool:
    """Whether ``data`` opens with a zlib stream header (deflate, a window of at most 32 KiB,
    the check bits right); an empty first IDAT leaves it to the next."""
    if len(data) < 2:
        return len(data) == 0
    cmf, flags = data[0], data[1]
    return cmf & 0x0F == 8 and cmf >> 4 <= 7 and (cmf << 8 | flags) % 31 == 0
