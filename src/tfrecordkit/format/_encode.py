"""Framed, CRC'd ``tf.train.Example`` records for a whole batch, built from columns.

A batch is described column by column, in the order the map entries go into each record:

- :func:`float_column` / :func:`int64_column`: ``[n, count]`` values of one key (packed lists);
- :func:`ragged_column`: float or int64 lists of any length per record (values + row splits);
- :func:`bytes_column`: one ``bytes`` value per record (a one-value BytesList);
- :func:`raw_column`: per record, wire parts of whole map entries encoded elsewhere.

The result is one buffer holding the ``n`` frames back to back, exactly as they sit in a
TFRecord file, and the frame lengths. The compiled codec builds it with the GIL released;
the pure-Python fallback gives identical bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfrecordkit.format._columns import _CODEC
from tfrecordkit.format._framing import frame_record
from tfrecordkit.format._wire import feature_wire, frame_entry, map_entry_prefix, varint

__all__ = ["EncodedFrames", "bytes_column", "encode_frames", "float_column", "int64_column",
           "ragged_column", "raw_column"]

_FLOAT, _INT64, _BYTES1, _RAW, _FLOAT_RAGGED, _INT64_RAGGED = 0, 1, 2, 3, 4, 5
EncColumn = tuple[int, bytes, Any, int]


def float_column(name: str, values: np.ndarray) -> EncColumn:
    """A float list of ``values.shape[1]`` values per record (``values`` is ``[n, count]``)."""
    array = np.ascontiguousarray(values, dtype="<f4")
    return _FLOAT, map_entry_prefix(name), array, array.shape[1]


def int64_column(name: str, values: np.ndarray) -> EncColumn:
    """An int64 list of ``values.shape[1]`` values per record (``values`` is ``[n, count]``)."""
    array = np.ascontiguousarray(values, dtype="<i8")
    return _INT64, map_entry_prefix(name), array, array.shape[1]


def ragged_column(name: str, kind: str, values: np.ndarray, row_splits: np.ndarray
                  ) -> EncColumn:
    """A float or int64 list (``kind``) of any length per record: record ``i`` holds
    ``values[row_splits[i]:row_splits[i + 1]]`` (``row_splits`` has ``n + 1`` entries)."""
    array = np.ascontiguousarray(values, dtype="<f4" if kind == "float" else "<i8")
    splits = np.ascontiguousarray(row_splits, dtype="<i8")
    return (_FLOAT_RAGGED if kind == "float" else _INT64_RAGGED, map_entry_prefix(name),
            (array, splits), 0)


def bytes_column(name: str, values: Sequence[bytes]) -> EncColumn:
    """A one-value bytes list per record."""
    return _BYTES1, map_entry_prefix(name), values, 1


def raw_column(parts: Sequence[Sequence[bytes]]) -> EncColumn:
    """Whole map entries per record, as wire parts joined in order."""
    return _RAW, b"", parts, 0


@dataclass(frozen=True)
class EncodedFrames:
    """``n`` framed records back to back in ``buffer``; frame ``i`` is at ``offsets[i]``."""

    buffer: bytes
    lengths: np.ndarray  # int64 frame lengths

    @property
    def offsets(self) -> np.ndarray:
        offsets = np.zeros(len(self.lengths), dtype=np.int64)
        np.cumsum(self.lengths[:-1], out=offsets[1:])
        return offsets

    def __len__(self) -> int:
        return len(self.lengths)

    def frames(self) -> list[bytes]:
        """The frames as separate ``bytes`` objects."""
        view = memoryview(self.buffer)
        return [bytes(view[o : o + n]) for o, n in zip(self.offsets.tolist(),
                                                        self.lengths.tolist(), strict=True)]


def encode_frames(columns: Sequence[EncColumn], n: int) -> EncodedFrames:
    """Frame ``n`` Example records whose map entries are ``columns``, in that order.

    The bytes equal framing each record's ``0x0a varint(size) entries`` serialization.
    """
    if _CODEC is not None:
        buffer, lengths = _CODEC.encode_frames(list(columns), n)
        return EncodedFrames(buffer, np.frombuffer(lengths, dtype="<i8"))
    frames = [frame_record(_record_python(columns, i)) for i in range(n)]
    return EncodedFrames(b"".join(frames), np.array([len(f) for f in frames], dtype=np.int64))


def _record_python(columns: Sequence[EncColumn], i: int) -> bytes:
    parts: list[bytes] = []
    for kind, prefix, payload, _count in columns:
        if kind == _FLOAT:
            parts.append(frame_entry(prefix, feature_wire("float", payload[i])))
        elif kind == _INT64:
            parts.append(frame_entry(prefix, feature_wire("int64", payload[i])))
        elif kind in (_FLOAT_RAGGED, _INT64_RAGGED):
            values, splits = payload
            parts.append(frame_entry(prefix, feature_wire(
                "float" if kind == _FLOAT_RAGGED else "int64",
                values[splits[i] : splits[i + 1]])))
        elif kind == _BYTES1:
            parts.append(frame_entry(prefix, feature_wire("bytes", [payload[i]])))
        else:
            parts.extend(payload[i])
    body = b"".join(parts)
    return b"\x0a" + varint(len(body)) + body
