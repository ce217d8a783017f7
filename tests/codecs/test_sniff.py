"""Recognising what bytes hold, from real encoders' output."""

from __future__ import annotations

import io

import numpy as np
import pytest

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
