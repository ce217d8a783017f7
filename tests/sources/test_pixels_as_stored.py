"""Pixels are never changed without asking: a CMYK JPEG is stored losslessly (PNG of Pillow's
CMYK->RGB, the one rule, recorded in the manifest) instead of re-encoded as JPEG, so every
reader gives the same pixels; a 16-bit PNG is refused unless an 8-bit reduction is asked
for; the EXIF orientation is not applied (as TensorFlow), or applied when asked."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tfrecordkit import SourceError
from tfrecordkit.sources import ImageFolder


def _cmyk_jpeg() -> tuple[bytes, np.ndarray]:
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 256, (24, 20, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(rgb).convert("CMYK").save(buffer, "JPEG", quality=90)
    data = buffer.getvalue()
    expected = np.asarray(PILImage.open(io.BytesIO(data)).convert("RGB"))
    return data, expected


def _png16(values: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    PILImage.fromarray(values.astype(np.uint16)).save(buffer, "PNG")
    assert buffer.getvalue()[24] == 16
    return buffer.getvalue()


def _rotated_jpeg() -> tuple[bytes, np.ndarray]:
    rng = np.random.default_rng(4)
    rgb = rng.integers(0, 256, (10, 30, 3), dtype=np.uint8)
    image = PILImage.fromarray(rgb)
    exif = image.getexif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=95, exif=exif.tobytes())
    return buffer.getvalue(), rgb


def _folder(tmp_path, files: dict[str, bytes]):
    for name, data in files.items():
        (tmp_path / "src" / "a").mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / "a" / name).write_bytes(data)
    return tmp_path / "src"


def _pixels(path):
    (batch,) = list(tk.load_numpy_dataset(path, batch_size=1,
                                          options=tk.DecodeOptions(padding="ragged")))
    image = batch["image"]  # one image: its size is pinned, so a plain array
    return np.asarray(image[0] if isinstance(image, list | np.ndarray) else
                      image["values"][0])


def test_a_cmyk_jpeg_is_stored_losslessly_with_one_rule(tmp_path):
    data, expected = _cmyk_jpeg()
    result = tk.convert(ImageFolder(_folder(tmp_path, {"x.jpg": data})), tmp_path / "ds")
    assert result.manifest.created_by["conversions"]["cmyk_jpeg"].startswith("stored as PNG")
    record = tk.open_split(tmp_path / "ds")[0]
    stored = tk.decode_example(record)["image"][0]
    assert stored.startswith(b"\x89PNG")  # not re-encoded as JPEG quality 95
    assert np.array_equal(_pixels(tmp_path / "ds"), expected)  # no loss after the one rule


@pytest.mark.integration
def test_tf_data_gives_the_same_cmyk_pixels(tmp_path):
    pytest.importorskip("tensorflow")
    from tfrecordkit.readers.tf_data import load_tf_dataset

    data, expected = _cmyk_jpeg()
    tk.convert(ImageFolder(_folder(tmp_path, {"x.jpg": data})), tmp_path / "ds")
    (batch,) = list(load_tf_dataset(tmp_path / "ds", batch_size=1).as_numpy_iterator())
    assert np.array_equal(batch["image"][0], expected)
    assert np.array_equal(_pixels(tmp_path / "ds"), expected)


def test_a_16_bit_png_is_refused_unless_a_reduction_is_asked_for(tmp_path):
    values = np.arange(0, 65536, 257 * 3, dtype=np.uint32)[:80].reshape(8, 10) + 200
    folder = _folder(tmp_path, {"deep.png": _png16(values)})
    with pytest.raises(SourceError, match=r"16-bit PNG.*reduce_16bit"):
        tk.convert(ImageFolder(folder), tmp_path / "refused")
    assert not (tmp_path / "refused" / "dataset.json").exists()
    result = tk.convert(ImageFolder(folder, reduce_16bit=True), tmp_path / "ds")
    assert "high byte" in result.manifest.created_by["conversions"]["png_16bit"]
    assert np.array_equal(_pixels(tmp_path / "ds")[..., 0], (values >> 8).astype(np.uint8))


def test_16_bit_png_bytes_given_to_the_schema_are_refused(tmp_path):
    schema = tk.Schema({"image": tk.Image("png")})
    with pytest.raises(tk.SchemaError, match="16-bit PNG"):
        schema.encode({"image": _png16(np.full((2, 2), 1000))})


def test_exif_orientation_is_not_applied_unless_asked(tmp_path):
    data, _ = _rotated_jpeg()
    folder = _folder(tmp_path, {"r.jpg": data})
    result = tk.convert(ImageFolder(folder), tmp_path / "kept")
    assert result.manifest.created_by["conversions"]["exif_orientation"].startswith("kept")
    assert _pixels(tmp_path / "kept").shape[:2] == (10, 30)  # as stored, like TensorFlow
    tk.convert(ImageFolder(folder, exif_transpose=True), tmp_path / "turned")
    turned = _pixels(tmp_path / "turned")
    assert turned.shape[:2] == (30, 10)
    stored_as_decoded = np.asarray(PILImage.open(io.BytesIO(data)).convert("RGB"))
    assert np.array_equal(turned, np.rot90(stored_as_decoded, k=-1))
