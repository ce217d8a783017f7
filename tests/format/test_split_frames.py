"""split_frames (one read of nearby records, every frame checked in one codec call) gives what
check_frame gives record by record: the same records, and the same error at the same offset
for any damaged byte, a short read, or an index that disagrees with a header."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecordkit import CorruptRecordError
from tfrecordkit.format import check_frame, frame_record, split_frames

records_st = st.lists(st.binary(max_size=300), min_size=1, max_size=20)


def _layout(records: list[bytes], gaps: list[int]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The records' frames with ``gaps`` bytes of filler before each, as one read."""
    buffer, starts, lengths = bytearray(), [], []
    for record, gap in zip(records, gaps, strict=True):
        buffer += b"\xab" * gap
        frame = frame_record(record)
        starts.append(len(buffer))
        lengths.append(len(frame))
        buffer += frame
    return bytes(buffer), np.array(starts), np.array(lengths)


def _one_by_one(buffer: bytes, starts, lengths, offset: int) -> list[bytes] | tuple[str, int]:
    try:
        return [check_frame(buffer[a : a + n], path="f", offset=offset + a)
                for a, n in zip(starts.tolist(), lengths.tolist(), strict=True)]
    except CorruptRecordError as err:
        return (err.check, err.offset)


def _at_once(buffer: bytes, starts, lengths, offset: int) -> list[bytes] | tuple[str, int]:
    try:
        return split_frames(buffer, starts, lengths,
                            where=lambda k: ("f", offset + int(starts[k])))
    except CorruptRecordError as err:
        return (err.check, err.offset)


@settings(max_examples=200, deadline=None)
@given(records=records_st, data=st.data())
def test_the_same_records_and_the_same_errors_as_frame_by_frame(records, data):
    gaps = data.draw(st.lists(st.integers(0, 40), min_size=len(records),
                              max_size=len(records)))
    buffer, starts, lengths = _layout(records, gaps)
    assert _at_once(buffer, starts, lengths, 1000) == records
    damage = data.draw(st.sampled_from(["byte", "short", "index"]))
    if damage == "byte":
        at = data.draw(st.integers(0, len(buffer) - 1))
        broken = bytearray(buffer)
        broken[at] ^= data.draw(st.integers(1, 255))
        buffer = bytes(broken)
    elif damage == "short":
        buffer = buffer[: data.draw(st.integers(0, len(buffer) - 1))]
    else:
        k = data.draw(st.integers(0, len(records) - 1))
        lengths = lengths.copy()
        lengths[k] += data.draw(st.sampled_from([-1, 1, 8]))
    assert _at_once(buffer, starts, lengths, 1000) == _one_by_one(buffer, starts, lengths, 1000)


def test_a_damaged_frame_is_named_by_its_offset_in_the_file():
    buffer, starts, lengths = _layout([b"a" * 10, b"b" * 20, b"c" * 30], [0, 5, 0])
    broken = bytearray(buffer)
    broken[int(starts[2]) + 14] ^= 1  # the third record's data
    where = 500 + int(starts[2])
    with pytest.raises(CorruptRecordError, match=f"shard: record at byte offset {where}") as err:
        split_frames(bytes(broken), starts, lengths,
                     where=lambda k: ("shard", 500 + int(starts[k])))
    assert err.value.check == "data crc" and err.value.offset == where
