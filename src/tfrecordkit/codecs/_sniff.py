"""Recognising what a bytes value holds (JPEG, PNG, WAV, FLAC, text, serialized tensor, ...)."""

from __future__ import annotations

import struct
from typing import Literal

__all__ = ["JPEG_MAGIC", "ContentType", "image_header", "jpeg_header", "png_bit_depth",
           "png_header", "sniff_bytes"]

ContentType = Literal[
    "jpeg", "png", "gif", "webp", "bmp", "wav", "flac", "npy", "tensor", "text", "empty", "other"
]

#: The first bytes of every JPEG (start of image, then a marker).
JPEG_MAGIC = b"\xff\xd8\xff"
_MAGIC: tuple[tuple[bytes, ContentType], ...] = (
    (JPEG_MAGIC, "jpeg"),
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"fLaC", "flac"),
    (b"\x93NUMPY", "npy"),
)
_CONTROL = frozenset(range(32)) - {9, 10, 13}
# Highest DataType enum value of TensorFlow's types.proto we accept as a serialized tensor.
_MAX_TF_DTYPE = 30
_HEAD = 4096  # bytes a sniff looks at (the text check's window)


def _is_bmp(head: bytes, size: int) -> bool:
    # "BM" alone would match text ("BMW ..."); a BMP header also records the file's size.
    return (size >= 26 and head[:2] == b"BM"
            and int.from_bytes(head[2:6], "little") == size)


def _is_serialized_tensor(data: bytes) -> bool:
    # tf.io.serialize_tensor writes a TensorProto: field 1 (dtype, varint), then field 2
    # (tensor_shape, length-delimited).
    return len(data) >= 4 and data[0] == 0x08 and 1 <= data[1] <= _MAX_TF_DTYPE and data[2] == 0x12


def _is_text(head: bytes, size: int) -> bool:
    """Whether ``head`` (the first 4 KiB of ``size`` bytes) is UTF-8 text without controls."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as err:
        # A multi-byte character cut by the 4 KiB window is still text.
        if err.start < len(head) - 3 or size <= len(head):
            return False
        text = head[: err.start].decode("utf-8")
    return not any(ord(c) in _CONTROL for c in text)


def sniff_bytes(data: bytes | bytearray | memoryview) -> ContentType:
    """Return what ``data`` looks like, from its magic bytes or its text-ness."""
    if isinstance(data, bytes):
        size, head = len(data), data[:_HEAD]
    else:  # a bytearray or memoryview a source gave: only its head is copied
        view = memoryview(data)
        size = view.nbytes
        head = (bytes(view.cast("B")[:_HEAD]) if view.c_contiguous
                else view.tobytes()[:_HEAD])
    if not size:
        return "empty"
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if _is_bmp(head, size):
        return "bmp"
    if head[:4] == b"RIFF" and head[8:12] in (b"WAVE", b"WEBP"):
        return "wav" if head[8:12] == b"WAVE" else "webp"
    if _is_serialized_tensor(head):
        return "tensor"
    if _is_text(head, size):
        return "text"
    return "other"


_PNG_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # by IHDR colour type; palette (3) goes through PIL
# JPEG start-of-frame markers (baseline, progressive, ...), not DHT (C4), JPG (C8) or DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def png_header(data: bytes) -> tuple[int, int, int] | None:
    """(height, width, channels) from a PNG's IHDR chunk, or None if unusual."""
    if len(data) < 33 or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    channels = _PNG_CHANNELS.get(data[25])
    return (height, width, channels) if channels and data[24] == 8 else None


def png_bit_depth(data: bytes) -> int | None:
    """A PNG's bits per sample (1, 2, 4, 8 or 16) from its IHDR chunk, or None."""
    if len(data) < 33 or not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        return None
    return data[24]


def jpeg_header(data: bytes) -> tuple[int, int, int] | None:
    """(height, width, channels) from a JPEG's start-of-frame segment, or None if unusual."""
    pos = 2
    end = min(len(data), 1 << 20)
    while pos + 9 < end:
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length field
            pos += 2
            continue
        length = (data[pos + 2] << 8) | data[pos + 3]
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
            channels = data[pos + 9]
            return (height, width, channels) if channels in (1, 3) and height and width else None
        pos += 2 + length
    return None


def image_header(data: bytes) -> tuple[int, int, int] | None:
    """(height, width, channels) read from a JPEG's or PNG's header without decoding, or None
    for anything else or anything unusual (then ask Pillow)."""
    if data.startswith(JPEG_MAGIC):
        return jpeg_header(data)
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return png_header(data)
    return None
