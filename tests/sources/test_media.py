"""Reading image and audio files for conversion."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.datasets import encode_image, photos
from tfrecordkit import SourceError
from tfrecordkit.codecs._sniff import jpeg_header, png_header
from tfrecordkit.sources import load_image


@settings(max_examples=40)
@given(st.integers(1, 40), st.integers(1, 40), st.sampled_from(["L", "RGB", "RGBA", "LA"]),
       st.sampled_from(["PNG", "JPEG"]), st.booleans())
def test_header_sizes_agree_with_pillow(height, width, mode, fmt, progressive):
    from PIL import Image

    if fmt == "JPEG" and mode in ("RGBA", "LA"):
        mode = "RGB"
    pixels = np.random.default_rng(height * width).integers(0, 256, (height, width, len(mode)),
                                                            dtype=np.uint8)
    image = Image.fromarray(pixels[:, :, 0] if mode == "L" else pixels, mode)
    import io

    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **({"progressive": progressive} if fmt == "JPEG" else {}))
    data = buffer.getvalue()
    header = (jpeg_header if fmt == "JPEG" else png_header)(data)
    assert header == (height, width, len(mode))


def test_load_image_keeps_bytes_and_reads_sizes(tmp_path):
    for name, pixels in photos().items():
        for fmt in ("PNG", "JPEG"):
            path = tmp_path / f"{name}.{fmt.lower()}"
            path.write_bytes(encode_image(pixels, fmt))
            loaded = load_image(str(path))
            assert loaded["bytes"] == path.read_bytes()
            channels = 1 if pixels.ndim == 2 else pixels.shape[2]
            assert (loaded["height"], loaded["width"], loaded["channels"]) == (
                pixels.shape[0], pixels.shape[1], channels)


def test_load_image_converts_when_asked(tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(encode_image(photos()["camera"], "PNG"))
    rgb = load_image(str(path), channels=3, encoding="jpeg", resize=20)
    assert rgb["bytes"][:3] == b"\xff\xd8\xff" and rgb["channels"] == 3
    assert max(rgb["height"], rgb["width"]) == 20


def test_other_formats_become_png_and_bad_files_are_named(tmp_path):
    from PIL import Image

    bmp = tmp_path / "a.bmp"
    Image.fromarray(photos()["coffee"]).save(bmp)
    assert load_image(str(bmp))["bytes"][:4] == b"\x89PNG"
    missing = tmp_path / "gone.jpg"
    with pytest.raises(SourceError, match=r"gone\.jpg: No such file"):
        load_image(str(missing))
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(encode_image(photos()["coffee"], "JPEG")[:-100])
    with pytest.raises(SourceError, match="truncated JPEG"):
        load_image(str(cut))
