"""Record digests leave the provenance entry out by one walk, compiled or in Python: both
find the same ``"__source"`` entry (or none) in any bytes, so a digest never depends on which
one ran (an append compares digests written by either)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecordkit as tk
from tfrecordkit.format import compiled_codec
from tfrecordkit.store._digests import _cut, _without_source, content_digest, frame_ids

CODEC = compiled_codec()
needs_codec = pytest.mark.skipif(CODEC is None or not hasattr(CODEC, "entry_cuts"),
                                 reason="the compiled codec is not built")


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _entry(key: bytes, value: bytes) -> bytes:
    body = b"\x0a" + _varint(len(key)) + key + b"\x12" + _varint(len(value)) + value
    return b"\x0a" + _varint(len(body)) + body


_KEYS = st.sampled_from([b"__source", b"image", b"label", b"__sourc", b"__source2", b""])
_VALUES = st.binary(max_size=40)
_ENTRY = st.one_of(st.builds(_entry, _KEYS, _VALUES), st.binary(max_size=12))


@needs_codec
@given(st.lists(st.lists(_ENTRY, max_size=6), min_size=1, max_size=8), st.binary(max_size=8))
def test_the_compiled_walk_cuts_what_the_python_walk_cuts(records, prefix):
    """Arbitrary records (valid entries, ``__source`` anywhere or several times, garbage
    between), back to back in one buffer after some bytes: the compiled cut gives the same
    bytes as the Python walk, record for record."""
    entries = [b"".join(parts) for parts in records]
    buffer = prefix + b"".join(entries)
    begins = np.cumsum([len(prefix)] + [len(e) for e in entries[:-1]]).astype(np.int64)
    ends = begins + np.array([len(e) for e in entries], np.int64)
    cuts = np.empty(2 * len(entries), np.int64)
    CODEC.entry_cuts(buffer, begins, ends, b"__source", cuts)
    view = memoryview(buffer)
    for i, (a, b) in enumerate(zip(begins.tolist(), ends.tolist(), strict=True)):
        want = bytes(_without_source(view[a:b]))
        assert bytes(_cut(view, a, b, int(cuts[2 * i]), int(cuts[2 * i + 1]))) == want


@needs_codec
@given(st.binary(max_size=200))
def test_any_bytes_cut_alike(data):
    cuts = np.empty(2, np.int64)
    CODEC.entry_cuts(data, np.array([0], np.int64), np.array([len(data)], np.int64),
                     b"__source", cuts)
    view = memoryview(data)
    assert bytes(_cut(view, 0, len(data), int(cuts[0]), int(cuts[1]))) == bytes(
        _without_source(view))


def test_a_converted_records_digest_leaves_its_provenance_out(tmp_path):
    """Two records that differ only in their input's name have one content digest, by the
    compiled frame walk and by content_digest's Python one."""
    schema = tk.Schema({"x": tk.Scalar("int64")}).with_source()
    records = [schema.encode({"x": 7, "__source": name}) for name in ("a.png", "b/c.png")]
    buffer = b"".join(len(r).to_bytes(8, "little") + b"\0" * 4 + r + b"\0" * 4
                      for r in records)
    offsets = [0, 16 + len(records[0])]
    lengths = [16 + len(r) for r in records]
    ids = frame_ids(["a", "b"], buffer, offsets, lengths)
    assert ids["content"][0] == ids["content"][1]
    assert bytes(ids["content"][0]) == content_digest(records[0]) == content_digest(records[1])
