"""``export(..., boxes="coco")``: a COCO conversion handed to Hugging Face ``datasets`` (and
Parquet, WebDataset) in its detection datasets' layout: ``objects`` with COCO's pixel boxes,
categories and per-object fields, the image's width and height; checked against COCO's JSON,
read back by ``datasets`` itself."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tfrecordkit import OptionError

datasets = pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    root = tmp_path_factory.mktemp("coco")
    rng = np.random.default_rng(11)
    (root / "images").mkdir()
    images, annotations = [], []
    for k in range(1, 7):
        h, w = int(rng.integers(20, 50)), int(rng.integers(20, 50))
        PILImage.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(
            root / "images" / f"{k}.jpg", quality=90)
        images.append({"id": k, "file_name": f"{k}.jpg", "width": w, "height": h})
        for j in range(k % 3):
            bw, bh = float(rng.uniform(2, w / 2)), float(rng.uniform(2, h / 2))
            annotations.append({"id": 100 * k + j, "image_id": k, "category_id": [4, 9][j % 2],
                                "bbox": [float(rng.uniform(0, w - bw)),
                                         float(rng.uniform(0, h - bh)), bw, bh],
                                "area": bw * bh * 0.8, "iscrowd": j % 2})
    path = root / "instances.json"
    path.write_text(json.dumps({"images": images, "annotations": annotations, "categories": [
        {"id": 9, "name": "bike"}, {"id": 4, "name": "person"}]}))
    tk.convert(tk.Coco(path, images=root / "images"), root / "ds", split={"train": 1.0},
               progress=False)
    return json.loads(path.read_text()), root / "ds"


def _check(objects_by_image: dict, coco: dict, names: list[str]) -> None:
    """Each image's exported objects (keyed by image id) equal COCO's annotations."""
    categories = {c["id"]: c["name"] for c in coco["categories"]}
    assert len(objects_by_image) == len(coco["images"])
    for entry in coco["images"]:
        got, width, height = objects_by_image[entry["id"]]
        assert (width, height) == (entry["width"], entry["height"])
        mine = [a for a in coco["annotations"] if a["image_id"] == entry["id"]]
        assert np.allclose(np.asarray(got["bbox"], np.float64).reshape(-1, 4),
                           np.asarray([a["bbox"] for a in mine]).reshape(-1, 4), atol=2e-3)
        assert [names[c] for c in got["category"]] == [categories[a["category_id"]]
                                                       for a in mine]
        assert got["id"] == [a["id"] for a in mine]
        assert got["is_crowd"] == [a["iscrowd"] for a in mine]
        assert np.allclose(got["area"], [a["area"] for a in mine], rtol=1e-6)


@pytest.mark.parametrize("to", ["hf", "parquet"])
def test_hugging_face_reads_the_export_with_its_detection_features(coco, tmp_path, to):
    json_, dataset = coco
    tk.export(dataset, tmp_path / "out", to=to, boxes="coco", progress=False)
    if to == "hf":
        train = datasets.load_from_disk(str(tmp_path / "out"))["train"]
    else:
        train = datasets.load_dataset("parquet", data_dir=str(tmp_path / "out"))["train"]
    features = train.features
    assert "image/object" not in features and {"objects", "width", "height"} <= set(features)
    category = features["objects"]["category"].feature
    assert isinstance(category, datasets.ClassLabel)
    assert category.names == ["person", "bike"]  # category id order
    assert isinstance(features["image"], datasets.Image)
    by_image = {row["image/id"]: (row["objects"], row["width"], row["height"]) for row in train}
    _check(by_image, json_, category.names)
    first = train[0]["image"]  # decoded by datasets: the image's own size
    assert first.size == (train[0]["width"], train[0]["height"])


def test_webdataset_json_holds_the_same_objects(coco, tmp_path):
    json_, dataset = coco
    tk.export(dataset, tmp_path / "wds", to="webdataset", boxes="coco", progress=False)
    by_image = {}
    for tar in sorted(Path(tmp_path / "wds").glob("*.tar")):
        with tarfile.open(tar) as archive:
            for member in archive.getmembers():
                if member.name.endswith(".json"):
                    row = json.loads(archive.extractfile(member).read())
                    by_image[row["image/id"]] = (row["objects"], row["width"], row["height"])
                    assert row["objects"]["category_names"] == [
                        ["person", "bike"][c] for c in row["objects"]["category"]]
    _check(by_image, json_, ["person", "bike"])


def test_the_default_keeps_the_readers_form_and_coco_needs_one_measurable_box_feature(
        coco, tmp_path):
    _, dataset = coco
    tk.export(dataset, tmp_path / "plain", to="hf", progress=False)
    assert "image/object" in datasets.load_from_disk(str(tmp_path / "plain"))["train"].features
    rows = [{"a": {"boxes": [[0, 0, 1, 1]], "labels": [0]},
             "b": {"boxes": [], "labels": []}, "image": _png()}]
    schema = tk.Schema({"a": tk.Boxes(["x"]), "b": tk.Boxes(["x"]), "image": tk.Image("png")})
    tk.write_dataset(rows, tmp_path / "two", schema, progress=False)
    with pytest.raises(OptionError, match="writes one Boxes feature"):
        tk.export(tmp_path / "two", tmp_path / "x", to="hf", boxes="coco", progress=False)
    with pytest.raises(OptionError, match="boxes must be one of"):
        tk.export(dataset, tmp_path / "y", to="hf", boxes="pixels", progress=False)


def _png() -> bytes:
    out = io.BytesIO()
    PILImage.fromarray(np.zeros((4, 4, 3), np.uint8)).save(out, "PNG")
    return out.getvalue()


def test_masks_kept_as_written_are_exported_with_their_objects(coco, tmp_path):
    """With masks=True each object's segmentation (as written) rides in ``objects`` beside
    its box, as bytes, and reads back as COCO's JSON."""
    _, dataset = coco
    root = dataset.parent
    data = json.loads((root / "instances.json").read_text())
    for a in data["annotations"]:
        x, y, w, h = a["bbox"]
        a["segmentation"] = [[x, y, x + w, y, x + w, y + h]]
    (root / "masked.json").write_text(json.dumps(data))
    tk.convert(tk.Coco(root / "masked.json", images=root / "images", masks=True),
               tmp_path / "ds", split={"train": 1.0}, progress=False)
    tk.export(tmp_path / "ds", tmp_path / "out", to="hf", boxes="coco", progress=False)
    train = datasets.load_from_disk(str(tmp_path / "out"))["train"]
    by_image = {a["image_id"]: [] for a in data["annotations"]}
    for a in data["annotations"]:
        by_image[a["image_id"]].append(a["segmentation"])
    for row in train:
        got = [json.loads(s) for s in row["objects"]["segmentation"]]
        assert got == by_image.get(row["image/id"], [])
