"""Each image's fate is decided at conversion: bombs, empty and corrupt images are named
SourceErrors (skipped and listed under on_error="skip"), never a failure in training."""

from __future__ import annotations

import io
import json
import struct
import zlib

import numpy as np
import pytest

from tests.datasets import encode_image, photos
from tfrecordkit import SourceError
from tfrecordkit.cli import main
from tfrecordkit.convert import convert
from tfrecordkit.sources import ImageFolder


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(
        ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _png(width: int, height: int, idat: bytes) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grey
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat)
            + _chunk(b"IEND", b""))


def _corrupt_jpeg() -> bytes:
    data = bytearray(encode_image(photos()["astronaut"], "JPEG"))
    middle = len(data) // 2
    data[middle : middle + 400] = np.random.default_rng(0).integers(0, 256, 400,
                                                                      np.uint8).tobytes()
    return bytes(data)


HOSTILE = {
    "declared-huge.png": (_png(100_000, 100_000, zlib.compress(b"\x00" * 1000)), "over the limit"),
    "zero-width.png": (_png(0, 10, zlib.compress(b"")), "no pixels"),
    "bad-stream.png": (_png(16, 16, b"this is not a zlib stream at all"), "not a zlib stream"),
    "garbage-scan.jpg": (_corrupt_jpeg(), "corrupt image data"),
}
DECODE_ONLY = {"garbage-scan.jpg"}  # damage inside the pixel data: only a decode finds it


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "src"
    (root / "good").mkdir(parents=True)
    (root / "bad").mkdir()
    (root / "good" / "ok.png").write_bytes(encode_image(photos()["coins"], "PNG"))
    for name, (data, _) in HOSTILE.items():
        (root / "bad" / name).write_bytes(data)
    return root


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_image_is_a_named_source_error(folder, name):
    source = ImageFolder(folder, check="decode")
    item = next(i for i in source.items() if i.key.endswith(name))
    with pytest.raises(SourceError, match=HOSTILE[name][1]) as err:
        source.load(item.item)
    assert name in str(err.value)
    default = ImageFolder(folder)  # the structural check
    if name in DECODE_ONLY:
        assert default.load(item.item)["image"]["bytes"] == HOSTILE[name][0]
    else:
        with pytest.raises(SourceError, match=HOSTILE[name][1]):
            default.load(item.item)


def test_skip_lists_every_hostile_image_and_keeps_the_good_one(folder, tmp_path):
    result = convert(ImageFolder(folder, check="decode"), tmp_path / "ds", on_error="skip",
                     progress=False)
    assert result.manifest.num_records("train") == 1
    skipped = {s["input"].rsplit("/", 1)[-1] for s in result.manifest.skipped}
    assert skipped == set(HOSTILE)


def test_a_real_bomb_with_resize_is_skipped_not_a_traceback(tmp_path, capsys):
    root = tmp_path / "src" / "a"
    root.mkdir(parents=True)
    (root / "fine.png").write_bytes(encode_image(photos()["coins"], "PNG"))
    # A real 12000x12000 grey PNG (144 M pixels), all zeros: 140 KB on disk.
    rows = b"".join(b"\x00" + bytes(12_000) for _ in range(12_000))
    (root / "bomb.png").write_bytes(_png(12_000, 12_000, zlib.compress(rows, 9)))
    status = main(["convert", str(tmp_path / "src"), str(tmp_path / "ds"), "--image-size",
                   "32", "--on-error", "skip", "--json", "-q"])
    out = capsys.readouterr()
    assert status == 0, out.err
    assert "Traceback" not in out.err
    manifest = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    assert manifest["splits"]["train"]["records"] == 1
    assert "over the limit" in manifest["skipped"][0]["reason"]


def test_the_checks_can_be_relaxed(folder, tmp_path):
    relaxed = ImageFolder(folder, check="none", max_image_pixels=10**11)
    loaded = {}
    for item in relaxed.items():
        try:
            relaxed.load(item.item)
            loaded[item.key.rsplit("/", 1)[-1]] = True
        except SourceError:
            loaded[item.key.rsplit("/", 1)[-1]] = False
    assert loaded["declared-huge.png"] and loaded["garbage-scan.jpg"]
    assert not loaded["zero-width.png"]  # an image with no pixels is never kept
    with pytest.raises(ValueError, match="max_image_pixels"):
        ImageFolder(folder, max_image_pixels=0)


def test_pillow_bytes_helper_builds_valid_pngs():
    from PIL import Image

    rows = b"".join(b"\x00" + bytes([i] * 4) for i in range(3))
    with Image.open(io.BytesIO(_png(4, 3, zlib.compress(rows)))) as image:
        assert image.size == (4, 3)
        assert np.asarray(image)[2].tolist() == [2, 2, 2, 2]


def test_the_fast_jpeg_check_accepts_nothing_pillow_rejects():
    """Verification tries libjpeg-turbo first (simplejpeg); whatever it passes must also decode
    in Pillow, so the fast path never lets through a JPEG the old check refused."""
    pytest.importorskip("simplejpeg")
    from PIL import Image as PILImage

    from tfrecordkit.sources._media import _decodes_cleanly

    data = encode_image(photos()["coffee"][::4, ::4], "JPEG")
    rng = np.random.default_rng(3)

    def pillow_decodes(blob: bytes) -> bool:
        try:
            with PILImage.open(io.BytesIO(blob)) as image:
                image.draft(image.mode, (max(1, image.width // 8), max(1, image.height // 8)))
                image.load()
            return True
        except Exception:  # any refusal counts
            return False

    accepted = 0
    for k in range(600):
        blob = bytearray(data)
        if k % 3 == 0:
            blob = blob[: int(rng.integers(10, len(blob)))]
        else:
            for _ in range(int(rng.integers(1, 5))):
                blob[int(rng.integers(2, len(blob)))] = int(rng.integers(0, 256))
        if _decodes_cleanly(bytes(blob)):
            accepted += 1
            assert pillow_decodes(bytes(blob)), k
    assert _decodes_cleanly(data) and 0 < accepted < 600


def _jpegs_tensorflow_cannot_decode() -> dict[str, bytes]:
    """Real lossless (SOF3) and 12-bit (SOF1) JPEGs, made by libjpeg-turbo 3 (imagecodecs)."""
    imagecodecs = pytest.importorskip("imagecodecs")
    pixels = (np.arange(40 * 30 * 3).reshape(40, 30, 3) % 251).astype(np.uint8)
    deep = (np.arange(40 * 30).reshape(40, 30) * 3 % 4000).astype(np.uint16)
    return {"lossless": imagecodecs.jpeg8_encode(pixels, lossless=True),
            "12-bit": imagecodecs.jpeg8_encode(deep, bitspersample=12)}


@pytest.mark.parametrize("check", ["structure", "decode"])
def test_jpeg_processes_the_readers_cannot_decode_are_refused_naming_them(tmp_path, check):
    """TensorFlow refuses lossless and 12-bit JPEGs ("Unsupported JPEG process"): the check
    refuses them at conversion, naming the file and the process (the decode check
    segfaulted on a lossless one)."""
    for kind, data in _jpegs_tensorflow_cannot_decode().items():
        root = tmp_path / kind.replace("-", "")
        (root / "a").mkdir(parents=True)
        (root / "a" / "x.jpg").write_bytes(data)
        with pytest.raises(SourceError, match=rf"x\.jpg: a {kind} JPEG \(SOF\d\)"):
            convert(ImageFolder(root, check=check), tmp_path / f"out-{kind}-{check}")


def test_bytes_after_the_end_marker_are_a_complete_image_kept_as_is(tmp_path):
    """A phone's motion photo (a video after the JPEG's end marker) or a camera trailer: the
    image is whole; it is kept byte for byte and every decoder reads the image."""
    import tfrecordkit as tk

    image = encode_image(photos()["coffee"], "JPEG")
    trailer = b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 40 + b"\xff\xd9\xff"
    (tmp_path / "src" / "a").mkdir(parents=True)
    (tmp_path / "src" / "a" / "motion.jpg").write_bytes(image + trailer)
    convert(ImageFolder(tmp_path / "src", check="decode"), tmp_path / "ds")
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=1,
                                            options=tk.DecodeOptions(decode=False))))
    assert batch["image"][0] == image + trailer
    decoded = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=1)))["image"]
    pixels = decoded["values"] if isinstance(decoded, dict) else decoded
    assert pixels.shape[1:3] == photos()["coffee"].shape[:2]
    # Cut short (no end marker at all), it is still refused.
    (tmp_path / "src" / "a" / "motion.jpg").write_bytes(image[: len(image) // 2])
    with pytest.raises(SourceError, match="truncated JPEG"):
        convert(ImageFolder(tmp_path / "src"), tmp_path / "cut")
