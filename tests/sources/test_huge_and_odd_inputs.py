"""Inputs conversion must refuse with the library's one-line error, before anything is
written: an image over the pixel limit (a decompression bomb), a split name no reader would
open, an object-dtype .npy file."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit.codecs import MAX_IMAGE_PIXELS


def _huge_png(width: int, height: int) -> bytes:
    """A valid PNG header claiming ``width x height`` (its pixels: one tiny IDAT)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body)))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))


def test_an_image_over_the_pixel_limit_is_refused_at_writing(tmp_path):
    schema = tk.Schema({"image": tk.Image("png")})
    data = _huge_png(30_000, 30_000)  # 900 megapixels
    with pytest.raises(tk.TFRecordKitError, match=r"'image'.*30000x30000 pixels is over the "
                                                  r"limit of 89,478,485"):
        tk.write_dataset([{"image": data}], tmp_path / "ds", schema, progress=False)
    assert not (tmp_path / "ds" / "dataset.json").exists()


@pytest.mark.parametrize(("height", "width", "dim"), [
    (30_000, 30_000, int), (30_000, 30_000, np.int64), (3, 2**40, int)])
def test_a_source_dict_claiming_too_many_pixels_among_many_is_refused(tmp_path, height, width,
                                                                      dim):
    """Dicts as sources give them ({"bytes", "height", "width", "channels"}): the batch's
    check finds the one over the limit wherever it is, whatever int type its sizes have."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(buffer, format="JPEG")
    rows = [{"image": {"bytes": buffer.getvalue(), "height": dim(8), "width": dim(8),
                       "channels": 3}} for _ in range(300)]
    rows[137]["image"] = {**rows[137]["image"], "height": dim(height), "width": dim(width)}
    schema = tk.Schema({"image": tk.Image("jpeg", channels=3)})
    with pytest.raises(tk.TFRecordKitError, match=rf"'image'.*{width}x{height} pixels is over"):
        tk.write_dataset(rows, tmp_path / "ds", schema, progress=False)
    assert not (tmp_path / "ds" / "dataset.json").exists()


def test_readers_refuse_it_with_the_librarys_error(tmp_path):
    with tk.RecordWriter(tmp_path / "f.tfrecord") as writer:
        writer.write(tk.encode_example({"image": [_huge_png(20_000, 20_000)]}))
    loader = tk.load_numpy_dataset(str(tmp_path / "f.tfrecord"), batch_size=1)
    with pytest.raises(tk.SchemaError, match="over the limit"):
        next(iter(loader))
    assert MAX_IMAGE_PIXELS == 89_478_485


@pytest.mark.parametrize("split", ["a/b", "", "x" * 65, "..", "train set", "train\n"])
def test_split_names_no_reader_would_open_are_refused_at_writing(tmp_path, split):
    schema = tk.Schema({"x": tk.Scalar("int64")})
    with pytest.raises(tk.DatasetError, match="split name"):
        tk.write_dataset({split: [{"x": 1}, {"x": 2}]}, tmp_path / "ds", schema,
                         progress=False)
    assert not (tmp_path / "ds" / "dataset.json").exists()


def test_an_object_npy_is_a_source_error(tmp_path):
    path = tmp_path / "objects.npy"
    np.save(path, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(tk.SourceError, match=r"objects\.npy.*object"):
        tk.convert(tk.open_source(path), tmp_path / "ds", progress=False)


def test_a_symlink_loop_in_a_class_folder_is_passed_over_and_listed(tmp_path):
    """A link back up the tree (it aborted the conversion with a raw OSError, on_error="skip"
    included): each folder is walked once, the link listed among the files passed over."""
    from tests.datasets import encode_image

    for name in ("a", "b"):
        (tmp_path / "src" / name).mkdir(parents=True)
        (tmp_path / "src" / name / "x.png").write_bytes(
            encode_image(np.zeros((3, 3, 3), np.uint8), "PNG"))
    (tmp_path / "src" / "a" / "loop").symlink_to(tmp_path / "src" / "a")
    (tmp_path / "src" / "b" / "nowhere").symlink_to(tmp_path / "missing")
    for on_error in ("raise", "skip"):
        result = tk.convert(tk.open_source(tmp_path / "src"), tmp_path / on_error,
                            on_error=on_error)  # type: ignore[arg-type]
        assert result.records == 2


@pytest.mark.parametrize("inside", [False, True])
def test_an_output_that_is_a_file_is_refused_in_one_line(tmp_path, inside):
    (tmp_path / "taken").write_text("not a folder")
    out = tmp_path / "taken" / "ds" if inside else tmp_path / "taken"
    schema = tk.Schema({"x": tk.Scalar("int64")})
    with pytest.raises(tk.DatasetError, match="the output must be a folder"):
        tk.write_dataset([{"x": 1}], out, schema, progress=False)
    assert (tmp_path / "taken").read_text() == "not a folder"
