"""One table of image options, taken by every source that reads images (an image folder, a
table's image columns, COCO, Hugging Face) with the same defaults, and offered by the CLI from
that table: each option reaches the source, or is refused naming the flag."""

from __future__ import annotations

import dataclasses
import inspect
import io
import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tfrecordkit import OptionError, SourceError
from tfrecordkit.cli import build_parser, main
from tfrecordkit.sources import IMAGE_OPTIONS, Coco, HuggingFace, ImageFolder, ImageOptions, Table


def _coco(root: Path) -> Path:
    """Three PNGs (RGB, RGBA, grey) of 20x16 with one box each, in COCO's JSON."""
    rng = np.random.default_rng(0)
    root.mkdir()
    images, annotations = [], []
    for k, mode in enumerate(("RGB", "RGBA", "L"), 1):
        shape = (16, 20) if mode == "L" else (16, 20, len(mode))
        PILImage.fromarray(rng.integers(0, 255, shape, dtype=np.uint8), mode).save(
            root / f"{k}.png")
        images.append({"id": k, "file_name": f"{k}.png", "width": 20, "height": 16})
        annotations.append({"id": k, "image_id": k, "category_id": 7,
                            "bbox": [2.0, 4.0, 10.0, 8.0], "area": 80.0, "iscrowd": 0})
    path = root / "instances.json"
    path.write_text(json.dumps({"images": images, "annotations": annotations,
                                "categories": [{"id": 7, "name": "cat"}]}))
    return path


def _stored(path: Path) -> list[tuple[tuple[int, ...], str, list[float]]]:
    """Each record's decoded image shape, its stored format and its first box."""
    out = []
    for batch in tk.load_numpy_dataset(path, batch_size=None, sampling=tk.InOrder(),
                                       options=tk.DecodeOptions(decode=False)):
        data = bytes(batch["image"]) if not isinstance(batch["image"], dict) else None
        with PILImage.open(io.BytesIO(data)) as image:
            shape = np.asarray(image).shape
            out.append((shape, image.format, []))
    boxes = [b["image/object"]["boxes"] for b in tk.load_numpy_dataset(
        path, batch_size=None, sampling=tk.InOrder(),
        options=tk.DecodeOptions(features=("image/object",)))]
    return [(shape, fmt, np.asarray(b["values"] if isinstance(b, dict) else b)[0].tolist())
            for (shape, fmt, _), b in zip(out, boxes, strict=True)]


@pytest.mark.parametrize("source", [ImageFolder, Table, Coco, HuggingFace])
def test_every_image_source_takes_every_image_option_with_the_same_default(source):
    parameters = inspect.signature(source).parameters
    defaults = {f.name: f.default for f in dataclasses.fields(ImageOptions)}
    assert {o.name for o in IMAGE_OPTIONS} == set(defaults)
    for name, default in defaults.items():
        assert name in parameters, f"{source.__name__} takes no {name}="
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert parameters[name].default == default, (source.__name__, name)


def test_the_cli_offers_every_option_of_the_table():
    parser = build_parser()
    convert = parser._subparsers._group_actions[0].choices["convert"]  # type: ignore[union-attr]
    flags = {flag for action in convert._actions for flag in action.option_strings}
    assert {o.flag for o in IMAGE_OPTIONS} <= flags


def test_coco_takes_channels_size_and_encoding_from_the_cli(tmp_path):
    """One RGBA PNG among RGB ones made the dataset 4-channel, and --channels was a
    traceback: now every image is what was asked, and the boxes (fractions) stay put."""
    annotations = _coco(tmp_path / "coco")
    assert main(["convert", str(annotations), str(tmp_path / "kept"), "-q"]) == 0
    kept = _stored(tmp_path / "kept")
    assert sorted(s for s, _, _ in kept) == [(16, 20), (16, 20, 3), (16, 20, 4)]
    assert main(["convert", str(annotations), str(tmp_path / "asked"), "-q", "--channels", "3",
                 "--image-size", "8", "10", "--image-encoding", "jpeg"]) == 0
    asked = _stored(tmp_path / "asked")
    assert [(s, f) for s, f, _ in asked] == [((8, 10, 3), "JPEG")] * 3
    assert [b for _, _, b in asked] == [b for _, _, b in kept]
    assert asked[0][2] == pytest.approx([0.1, 0.25, 0.6, 0.75])
    assert tk.load_manifest(tmp_path / "asked").schema["image"].channels == 3


def test_coco_honours_the_checks_it_ignored(tmp_path):
    annotations = _coco(tmp_path / "coco")
    with pytest.raises(SourceError, match=r"\d\.png: image of 20x16 pixels is over the "
                                          "limit of 100"):
        tk.convert(Coco(annotations, max_image_pixels=100), tmp_path / "small", progress=False)
    assert main(["convert", str(annotations), str(tmp_path / "cli"), "-q",
                 "--max-image-pixels", "100"]) == 1
    # A PNG whose pixel data is damaged but whose chunks and CRCs are whole: only a decode
    # finds it, and --check decode now reaches COCO.
    png = (tmp_path / "coco" / "2.png").read_bytes()
    start = png.index(b"IDAT") + 4
    length = int.from_bytes(png[start - 8:start - 4], "big")
    data = bytearray(png[start:start + length])
    data[len(data) // 2:] = b"\x00" * (len(data) - len(data) // 2)
    chunk = b"IDAT" + bytes(data)
    damaged = (png[:start - 4] + chunk + zlib.crc32(chunk).to_bytes(4, "big")
               + png[start + length + 4:])
    (tmp_path / "coco" / "2.png").write_bytes(damaged)
    tk.convert(Coco(annotations), tmp_path / "structure", progress=False)
    with pytest.raises(SourceError, match=r"2\.png: corrupt image data"):
        tk.convert(Coco(annotations, check="decode"), tmp_path / "decode", progress=False)


def test_coco_refuses_exif_transpose_saying_why(tmp_path):
    annotations = _coco(tmp_path / "coco")
    with pytest.raises(OptionError, match="boxes are in the stored pixels' frame"):
        Coco(annotations, exif_transpose=True)


def test_a_16bit_png_in_coco_is_refused_unless_reduced(tmp_path):
    annotations = _coco(tmp_path / "coco")
    deep = (np.arange(320, dtype=np.uint16).reshape(16, 20) * 200)
    PILImage.fromarray(deep).save(tmp_path / "coco" / "3.png")
    with pytest.raises(SourceError, match="16-bit PNG"):
        tk.convert(Coco(annotations), tmp_path / "refused", progress=False)
    assert main(["convert", str(annotations), str(tmp_path / "reduced"), "-q",
                 "--reduce-16bit"]) == 0
    shapes = [s for s, _, _ in _stored(tmp_path / "reduced")]
    assert (16, 20) in shapes


def test_an_image_option_for_a_source_without_images_is_refused_naming_the_flag(
        tmp_path, capsys):
    (tmp_path / "lines.txt").write_text("one\ntwo\n")
    assert main(["convert", str(tmp_path / "lines.txt"), str(tmp_path / "out"), "-q",
                 "--channels", "3"]) != 0
    err = capsys.readouterr().err.strip()
    assert "--channels is an image option" in err and "read as text" in err
    assert len(err.splitlines()) == 1


def test_a_tables_image_column_takes_the_options(tmp_path):
    rng = np.random.default_rng(1)
    for k in range(3):
        PILImage.fromarray(rng.integers(0, 255, (12, 9, 3), dtype=np.uint8)).save(
            tmp_path / f"{k}.png")
    (tmp_path / "t.csv").write_text("image_path,label\n" + "".join(
        f"{k}.png,{'ab'[k % 2]}\n" for k in range(3)))
    assert main(["convert", str(tmp_path / "t.csv"), str(tmp_path / "grey"), "-q",
                 "--channels", "1"]) == 0
    assert tk.load_manifest(tmp_path / "grey").schema["image_path"].channels == 1
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "grey", batch_size=3,
                                            sampling=tk.InOrder())))
    assert batch["image_path"].shape == (3, 12, 9, 1)


def test_a_hugging_face_image_column_takes_the_options(tmp_path):
    datasets = pytest.importorskip("datasets")
    rng = np.random.default_rng(2)
    images = []
    for _ in range(2):
        buffer = io.BytesIO()
        PILImage.fromarray(rng.integers(0, 255, (10, 14, 4), dtype=np.uint8), "RGBA").save(
            buffer, format="PNG")
        images.append({"bytes": buffer.getvalue(), "path": None})
    ds = datasets.Dataset.from_dict({"image": images},
                                    features=datasets.Features({"image": datasets.Image()}))
    tk.convert(tk.open_source(ds, channels=3, resize=(5, 7)), tmp_path / "hf", progress=False)
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "hf", batch_size=2,
                                            sampling=tk.InOrder())))
    assert batch["image"].shape == (2, 5, 7, 3)
