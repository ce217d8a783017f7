"""Recognising what a bytes value holds (JPEG, PNG, WAV, FLAC, text, serialized tensor, ...)."""

from __future__ import annotations

from typing import Literal

__all__ = ["ContentType", "sniff_bytes"]

ContentType = Literal[
    "jpeg", "png", "gif", "webp", "bmp", "wav", "flac", "npy", "tensor", "text", "empty", "other"
]

_MAGIC: tuple[tuple[bytes, ContentType], ...] = (
    (b"\xff\xd8\xff", "jpeg"),
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"fLaC", "flac"),
    (b"\x93NUMPY", "npy"),
    (b"BM", "bmp"),
)
_CONTROL = frozenset(range(32)) - {9, 10, 13}
# Highest DataType enum value of TensorFlow's types.proto we accept as a serialized tensor.
_MAX_TF_DTYPE = 30


def _is_serialized_tensor(data: bytes) -> bool:
    # tf.io.serialize_tensor writes a TensorProto: field 1 (dtype, varint), then field 2
    # (tensor_shape, length-delimited).
    return len(data) >= 4 and data[0] == 0x08 and 1 <= data[1] <= _MAX_TF_DTYPE and data[2] == 0x12


def _is_text(data: bytes) -> bool:
    head = data[:4096]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as err:
        # A multi-byte character cut by the 4 KiB window is still text.
        if err.start < len(head) - 3 or len(data) <= len(head):
            return False
        text = head[: err.start].decode("utf-8")
    return not any(ord(c) in _CONTROL for c in text)


def sniff_bytes(data: bytes) -> ContentType:
    """Return what ``data`` looks like, from its magic bytes or its text-ness."""
    if not data:
        return "empty"
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return "bmp" if kind == "bmp" and len(data) < 26 else kind
    if data[:4] == b"RIFF" and data[8:12] in (b"WAVE", b"WEBP"):
        return "wav" if data[8:12] == b"WAVE" else "webp"
    if _is_serialized_tensor(data):
        return "tensor"
    if _is_text(data):
        return "text"
    return "other"
