"""Recognising what bytes hold, from real encoders' output."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.datasets import encode_audio, encode_image, photos, tone
from tfrecordkit.codecs import image_header, sniff_bytes

TEXT_STARTING_WITH_BM = "BMW drove past, ünïcode and all".encode()


def bmp_bytes() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(photos()["coffee"]).save(buffer, format="BMP")
    return buffer.getvalue()


def npy_bytes() -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.arange(3))
    return buffer.getvalue()


@pytest.mark.parametrize(("make", "kind"), [
    (lambda: encode_image(photos()["coffee"], "JPEG"), "jpeg"),
    (lambda: encode_image(photos()["camera"], "PNG"), "png"),
    (bmp_bytes, "bmp"),
    (lambda: encode_audio(tone(0.01, 8000, 440), 8000, "WAV"), "wav"),
    (lambda: encode_audio(tone(0.01, 8000, 440), 8000, "FLAC"), "flac"),
    (npy_bytes, "npy"),
    (lambda: TEXT_STARTING_WITH_BM, "text"),
    (lambda: b"BM", "text"),
    (lambda: b"", "empty"),
    (lambda: bytes(range(256)), "other"),
])
def test_sniff_bytes(make, kind):
    assert sniff_bytes(make()) == kind


def test_image_header_reads_jpeg_and_png_only():
    coffee = photos()["coffee"]
    assert image_header(encode_image(coffee, "JPEG")) == (*coffee.shape[:2], 3)
    assert image_header(encode_image(photos()["camera"], "PNG")) == (
        *photos()["camera"].shape, 1)
    assert image_header(bmp_bytes()) is None


_HEADS = [b"", b"\xff\xd8\xff\xe0", b"\x89PNG\r\n\x1a\n", b"BM", b"RIFF\x00\x00\x00\x00WAVE",
          b"\x08\x01\x12\x00", "é".encode()]


@settings(deadline=None, max_examples=200)
@given(head=st.sampled_from(_HEADS), body=st.binary(max_size=64),
       text=st.text(max_size=2100), fill=st.integers(0, 5000))
def test_bytes_bytearray_and_memoryview_sniff_alike(head, body, text, fill):
    """A source's bytearray or memoryview (contiguous or not) is sniffed as its bytes, also
    past the 4 KiB the sniff reads (a BMP's size and a text's last character count the
    whole length)."""
    data = head + body + text.encode() + b"a" * fill
    if data.startswith(b"BM") and len(data) >= 26:  # a BMP header with its true size
        data = data[:2] + len(data).to_bytes(4, "little") + data[6:]
    expected = sniff_bytes(data)
    assert sniff_bytes(bytearray(data)) == expected
    assert sniff_bytes(memoryview(data)) == expected
    strided = np.frombuffer(data + data, np.uint8).reshape(-1, 2)[:, 0] if data else None
    if strided is not None:  # every other byte of data + data: not contiguous
        assert sniff_bytes(memoryview(strided)) == sniff_bytes(strided.tobytes())
