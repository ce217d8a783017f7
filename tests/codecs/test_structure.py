"""The structural image check a conversion runs by default: every valid file Pillow writes
passes; every truncation, every flipped byte of a PNG, a broken segment chain and bytes that
are not what they claim are caught; it never raises on arbitrary bytes."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.datasets import photos
from tfrecordkit.codecs import image_structure_problem


def _save(pixels: np.ndarray, fmt: str, **options) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt, **options)
    return buffer.getvalue()


def _valid_files() -> dict[str, tuple[bytes, str]]:
    from PIL import Image

    shots = photos()
    colour, grey = shots["astronaut"], shots["camera"]
    rgba = np.dstack([colour, np.full(colour.shape[:2], 200, np.uint8)])
    palette = io.BytesIO()
    Image.fromarray(colour).convert("P").save(palette, format="PNG")
    deep = io.BytesIO()
    Image.fromarray(grey.astype(np.uint16) * 257).save(deep, format="PNG")
    return {
        "baseline": (_save(colour, "JPEG", quality=90), "jpeg"),
        "progressive": (_save(colour, "JPEG", quality=80, progressive=True), "jpeg"),
        "grey jpeg": (_save(grey, "JPEG"), "jpeg"),
        "restart markers": (_save(colour, "JPEG", restart_marker_rows=1), "jpeg"),
        "exif": (_save(colour, "JPEG", exif=b"Exif\x00\x00" + b"\x00" * 40), "jpeg"),
        "rgb png": (_save(colour, "PNG"), "png"),
        "grey png": (_save(grey, "PNG"), "png"),
        "rgba png": (_save(rgba, "PNG"), "png"),
        "palette png": (palette.getvalue(), "png"),
        "16-bit png": (deep.getvalue(), "png"),
    }


VALID = _valid_files()


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_files_pass(name):
    data, kind = VALID[name]
    assert image_structure_problem(data, kind) is None


@pytest.mark.parametrize("name", sorted(VALID))
def test_every_truncation_is_caught(name):
    data, kind = VALID[name]
    step = max(1, len(data) // 400)
    cuts = sorted({*range(0, len(data), step), *range(len(data) - 70, len(data))})
    missed = [cut for cut in cuts if image_structure_problem(data[:cut], kind) is None]
    assert not missed


@pytest.mark.parametrize("name", [n for n in sorted(VALID) if VALID[n][1] == "png"])
def test_every_flipped_byte_of_a_png_is_caught(name):
    data, _ = VALID[name]
    step = max(1, len(data) // 500)
    for at in range(0, len(data), step):
        damaged = bytearray(data)
        damaged[at] ^= 0x10
        assert image_structure_problem(bytes(damaged), "png") is not None, at


def test_a_broken_segment_chain_and_other_claims_are_caught():
    data, _ = VALID["baseline"]
    sof = data.index(b"\xff\xc0")
    wrong_length = bytearray(data)
    wrong_length[sof + 3] ^= 0x01  # the frame header's length is one off
    assert "frame header" in image_structure_problem(bytes(wrong_length), "jpeg")
    dqt = data.index(b"\xff\xdb")
    lost_marker = bytearray(data)
    lost_marker[dqt + 3] += 1  # the next segment is looked for a byte too late
    assert "segment marker" in image_structure_problem(bytes(lost_marker), "jpeg")
    no_frame = data[:sof] + data[data.index(b"\xff\xda") :]
    assert "scan before any frame" in image_structure_problem(no_frame, "jpeg")
    png, _ = VALID["rgb png"]
    assert "not a JPEG" in image_structure_problem(png, "jpeg")
    assert "not a PNG" in image_structure_problem(data, "png")
    assert image_structure_problem(b"GIF89a....", "gif") is None  # not checked: decoded


def test_a_flipped_entropy_byte_is_left_to_the_decode_check():
    """What the structure cannot see (documented): damage inside a JPEG's scan."""
    data, _ = VALID["baseline"]
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 0x10
    assert image_structure_problem(bytes(damaged), "jpeg") is None


@settings(max_examples=500, deadline=None)
@given(data=st.binary(max_size=300), kind=st.sampled_from(["jpeg", "png"]),
       head=st.booleans())
def test_arbitrary_bytes_never_raise(data, kind, head):
    if head:  # give the walk something to walk
        data = (b"\xff\xd8" if kind == "jpeg" else b"\x89PNG\r\n\x1a\n") + data
    problem = image_structure_problem(data, kind)
    assert problem is None or isinstance(problem, str)


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(0, 10_000), flip=st.integers(0, 10_000), bit=st.integers(0, 7))
def test_mutated_real_files_never_raise(cut, flip, bit):
    for data, kind in VALID.values():
        mutated = bytearray(data[: len(data) - cut % len(data)])
        if mutated:
            mutated[flip % len(mutated)] ^= 1 << bit
        problem = image_structure_problem(bytes(mutated), kind)
        assert problem is None or isinstance(problem, str)
