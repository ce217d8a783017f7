"""Each record's identity: a hash of its key and a digest of its content, kept per shard in a
``.digests`` sidecar (24 bytes a record, in the shard's order), so that appending finds the
inputs a dataset already holds, and ``verify --duplicates`` finds equal records, without
reading a shard.

The content digest is XXH3-128 of the record's features as stored (the ``tf.train.Example``'s
feature entries, in their order), leaving out the record's provenance (``"__source"``): the
same photo copied to two paths has one digest. The key hash is XXH3-64 of the key's UTF-8.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import xxhash

from tfrecordkit.errors import DatasetError
from tfrecordkit.format import Storage, compiled_codec

__all__ = ["DIGESTS_SUFFIX", "RECORD_IDS", "KnownRecords", "content_digest", "frame_ids",
           "key_hash", "read_digests"]

DIGESTS_SUFFIX = ".digests"
#: One record's identity, as stored (little-endian, 24 bytes).
RECORD_IDS = np.dtype([("key", "<u8"), ("content", "V16")])
_SOURCE_KEY = b"\n\x08__source"  # the map entry's key field for "__source"
_SOURCE_NAME = b"__source"  # the provenance feature's key
_HEADER = 12  # a frame's length and its CRC, before the record


def key_hash(key: str) -> int:
    """The 64-bit hash of a record's key."""
    return int(xxhash.xxh3_64_intdigest(key.encode("utf-8", "surrogateescape")))


def _varint(data: bytes | memoryview, at: int) -> tuple[int, int]:
    value = shift = 0
    while at < len(data):
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7
        if shift > 63:
            break
    raise ValueError("bad varint")


def _entries(record: bytes | memoryview) -> memoryview:
    """The feature entries of a serialized Example (its ``features`` field's body); the whole
    record when it is not laid out as one (another message: hashed as it is)."""
    view = memoryview(record)
    try:
        if len(view) < 2 or view[0] != 0x0A:
            return view
        length, at = _varint(view, 1)
        return view[at:] if at + length == len(view) else view
    except ValueError:
        return view


def _without_source(entries: memoryview) -> bytes | memoryview:
    """``entries`` without their ``"__source"`` entry. The top-level entries are walked (a
    length each: an image's bytes are skipped, not copied or searched, and bytes inside a
    value that look like an entry are never taken for one); our writers put it last, so it
    is cut off without a copy."""
    spans: list[tuple[int, int]] = []  # the entries kept
    at, cut = 0, False
    try:
        while at < len(entries):
            if entries[at] != 0x0A:
                return entries
            length, body = _varint(entries, at + 1)
            end = body + length
            if end > len(entries):
                return entries
            if _entry_key(entries, body, end) == b"__source":
                cut = True
            else:
                spans.append((at, end))
            at = end
    except ValueError:
        return entries
    if not cut:
        return entries
    if spans and spans[-1][1] == sum(e - a for a, e in spans):  # the kept ones come first
        return entries[: spans[-1][1]]
    return b"".join(entries[a:e] for a, e in spans)


def _entry_key(data: bytes | memoryview, at: int, end: int) -> bytes | None:
    """The key of the map entry ``data[at:end]`` (its last field 1; fields in any order)."""
    key = None
    while at < end:
        tag, at = _varint(data, at)
        kind = tag & 7
        if kind == 0:
            _, at = _varint(data, at)
        elif kind == 1:
            at += 8
        elif kind == 5:
            at += 4
        elif kind == 2:
            length, at = _varint(data, at)
            if tag >> 3 == 1:
                key = bytes(data[at : at + length])
            at += length
        else:
            raise ValueError("bad wire type")
    if at != end:
        raise ValueError("entry overruns")
    return key


def content_digest(record: bytes | memoryview) -> bytes:
    """The 16-byte digest of a serialized record's content (its feature entries, without
    its provenance)."""
    entries = _entries(record)
    if isinstance(record, bytes) and b"__source" not in record:
        return xxhash.xxh3_128_digest(entries)  # nothing to leave out (a scan, not a walk)
    return xxhash.xxh3_128_digest(_without_source(entries))


def _entry_spans(data: np.ndarray, starts: np.ndarray, sizes: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Where each record's feature entries lie (see :func:`_entries`), for records at
    ``starts`` of ``sizes`` bytes in ``data``, all at once: a record laid out as
    ``0x0a varint(n) entries`` gives its entries, any other the whole record."""
    n = len(starts)
    begin, end = starts.copy(), starts + sizes
    if n == 0 or len(data) == 0:
        return begin, end
    last = len(data) - 1
    head = data[np.minimum(starts[:, None] + np.arange(6), last)].astype(np.uint64)  # (n, 6)
    value = np.zeros(n, dtype=np.uint64)
    width = np.zeros(n, dtype=np.int64)  # bytes of the varint, 0 while unfinished
    for i in range(1, 6):
        byte = head[:, i]
        open_ = width == 0
        value[open_] |= (byte[open_] & np.uint64(0x7F)) << np.uint64(7 * (i - 1))
        width[open_ & (byte < 0x80)] = i
    fits = ((head[:, 0] == 0x0A) & (width > 0) & (sizes >= 2)
            & (1 + width + value.astype(np.int64) == sizes))
    begin[fits] += 1 + width[fits]
    return begin, end


def frame_ids(keys: Sequence[str], buffer: bytes | memoryview, offsets: Iterable[int],
              lengths: Iterable[int], *, provenance: bool = True) -> np.ndarray:
    """The :data:`RECORD_IDS` of framed records lying in ``buffer`` with their keys
    (``provenance``: records may hold a ``"__source"`` entry, left out of the digest)."""
    view = memoryview(buffer)
    starts = np.asarray(offsets, dtype=np.int64) + _HEADER
    sizes = np.asarray(lengths, dtype=np.int64) - _HEADER - 4
    out = np.empty(len(keys), dtype=RECORD_IDS)
    hash64, hash128 = xxhash.xxh3_64_intdigest, xxhash.xxh3_128_digest
    out["key"] = [hash64(k.encode("utf-8", "surrogateescape")) for k in keys]
    begin, end = _entry_spans(np.frombuffer(view, dtype=np.uint8), starts, sizes)
    spans = zip(begin.tolist(), end.tolist(), strict=True)
    codec = compiled_codec()
    if provenance and getattr(codec, "entry_cuts", None) is not None and len(keys):
        # Where each record's provenance entry lies, found by the compiled walk (the same
        # walk as _without_source's, tested equal on any bytes).
        cuts = np.empty(2 * len(keys), dtype=np.int64)
        codec.entry_cuts(view, np.ascontiguousarray(begin, np.int64),
                         np.ascontiguousarray(end, np.int64), _SOURCE_NAME, cuts)
        digests = [hash128(_cut(view, a, b, int(c0), int(c1)))
                   for (a, b), c0, c1 in zip(spans, cuts[0::2].tolist(), cuts[1::2].tolist(),
                                              strict=True)]
    elif provenance:
        digests = [hash128(_without_source(view[a:b])) for a, b in spans]
    else:
        digests = [hash128(view[a:b]) for a, b in spans]
    out["content"] = np.frombuffer(b"".join(digests), dtype="V16")
    return out


def _cut(view: memoryview, begin: int, end: int, cut_start: int, cut_end: int
         ) -> bytes | memoryview:
    """Entries ``view[begin:end]`` without the entry ``entry_cuts`` found at
    ``[cut_start, cut_end)`` (-1: none, or not walkable; -2: several, walked in Python)."""
    if cut_start == -1:
        return view[begin:end]
    if cut_start == -2:
        return _without_source(view[begin:end])
    if cut_end == end:  # our writers put it last: a prefix, no copy
        return view[begin:cut_start]
    return b"".join((view[begin:cut_start], view[cut_end:end]))


def read_digests(storage: Storage, path: str, records: int) -> np.ndarray:
    """A shard's ``.digests`` sidecar, checked to hold one entry per record.

    Raises:
        DatasetError: it is missing or its size disagrees with the shard's records.
    """
    try:
        data = storage.read_bytes(path)
    except OSError as err:
        raise DatasetError(f"{path}: cannot be read ({err})") from None
    if len(data) != records * RECORD_IDS.itemsize:
        raise DatasetError(f"{path}: {len(data)} bytes, but its shard holds {records} records "
                           f"({RECORD_IDS.itemsize} bytes each): not this shard's digests")
    return np.frombuffer(data, dtype=RECORD_IDS)


@dataclass(frozen=True)
class KnownRecords:
    """The records a dataset holds, by key hash: sorted hashes, their contents and where each
    record is (``files[shard]``, record index), for looking up a batch of new records."""

    keys: np.ndarray  # uint64, sorted
    contents: np.ndarray  # V16, aligned with keys
    shard: np.ndarray  # int32 index into files
    record: np.ndarray  # int64 index within the shard
    files: tuple[str, ...]
    unknown: tuple[str, ...] = ()  # shards without digests (nothing known of them)

    @classmethod
    def gather(cls, parts: Iterator[tuple[str, np.ndarray | None]]) -> KnownRecords:
        """From ``(shard file, its digests or None)`` pairs."""
        files, unknown, arrays = [], [], []
        for file, ids in parts:
            if ids is None:
                unknown.append(file)
                continue
            files.append(file)
            arrays.append(ids)
        ids = np.concatenate(arrays) if arrays else np.empty(0, dtype=RECORD_IDS)
        shard = np.concatenate([np.full(len(a), i, dtype=np.int32)
                                for i, a in enumerate(arrays)]) if arrays else np.empty(
            0, dtype=np.int32)
        record = np.concatenate([np.arange(len(a), dtype=np.int64) for a in arrays]
                                ) if arrays else np.empty(0, dtype=np.int64)
        order = np.argsort(ids["key"], kind="stable")
        return cls(np.ascontiguousarray(ids["key"][order]),
                   np.ascontiguousarray(ids["content"][order]), shard[order], record[order],
                   tuple(files), tuple(unknown))

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each of ``ids``: whether its key is known (``-1`` not; else the position of
        the known record), and whether the known record's content is the same."""
        at = np.searchsorted(self.keys, ids["key"])
        inside = at < len(self.keys)
        found = np.zeros(len(ids), dtype=bool)
        found[inside] = self.keys[at[inside]] == ids["key"][inside]
        same = np.zeros(len(ids), dtype=bool)
        same[found] = self.contents[at[found]] == ids["content"][found]
        return np.where(found, at, -1), same

    def where(self, position: int) -> str:
        """Where a known record is, in words."""
        return (f"{self.files[int(self.shard[position])]} record "
                f"{int(self.record[position])}")

