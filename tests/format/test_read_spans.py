"""The compiled span reader local loaders use (every span of a step in one call without the
GIL): the bytes ``os.pread`` gives, the first span a file's end cuts short reported, bad
descriptors and spans outside the buffer refused."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecordkit.format import compiled_codec

CODEC = compiled_codec()
pytestmark = pytest.mark.skipif(CODEC is None or not hasattr(CODEC, "read_spans"),
                                reason="the compiled codec (POSIX) is not built")


def _args(fds, offsets, lengths):
    lengths = np.asarray(lengths, np.int64)
    bases = np.cumsum(lengths) - lengths
    out = np.zeros(int(lengths.sum()), np.uint8)
    return (np.asarray(fds, np.int64), np.asarray(offsets, np.int64), lengths, bases, out)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(0)
    folder = tmp_path_factory.mktemp("spans")
    datas = [rng.integers(0, 256, size, np.uint8).tobytes() for size in (0, 1, 5000, 70_000)]
    fds = []
    for k, data in enumerate(datas):
        (folder / f"f{k}").write_bytes(data)
        fds.append(os.open(folder / f"f{k}", os.O_RDONLY))
    yield fds, datas
    for fd in fds:
        os.close(fd)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_spans_read_what_pread_reads(files, data):
    fds, datas = files
    spans = []
    for _ in range(data.draw(st.integers(0, 12))):
        k = data.draw(st.integers(1, 3))
        offset = data.draw(st.integers(0, len(datas[k]) - 1))
        spans.append((k, offset, data.draw(st.integers(0, len(datas[k]) - offset))))
    args = _args([fds[k] for k, _, _ in spans], [o for _, o, _ in spans],
                 [n for _, _, n in spans])
    assert CODEC.read_spans(*args) == -1
    want = b"".join(os.pread(fds[k], n, o) for k, o, n in spans)
    assert args[4].tobytes() == want


def test_the_first_span_past_a_files_end_is_reported(files):
    fds, datas = files
    args = _args([fds[2], fds[3], fds[2], fds[3]], [0, 10, 4990, 0], [100, 50, 20, 10])
    assert CODEC.read_spans(*args) == 2  # 10 of its 20 bytes exist: the call stops there
    assert args[4][:150].tobytes() == datas[2][:100] + datas[3][10:60]
    assert CODEC.read_spans(*_args([fds[0]], [0], [1])) == 0  # an empty file


def test_bad_descriptors_and_spans_outside_the_buffer_are_refused(files):
    fds, _ = files
    with pytest.raises(OSError, match="Bad file descriptor"):
        CODEC.read_spans(*_args([10_000], [0], [4]))
    fd, offset, length, base, out = _args([fds[3]], [0], [64])
    with pytest.raises(ValueError, match="outside the output buffer"):
        CODEC.read_spans(fd, offset, length, np.asarray([1], np.int64), out)
    with pytest.raises(ValueError, match="one length"):
        CODEC.read_spans(fd, offset[:0], length, base, out)
    with pytest.raises(ValueError, match="outside"):
        CODEC.read_spans(fd, np.asarray([-1], np.int64), length, base, out)
