"""COCO detection annotations as a source: each image's objects become one Boxes feature with the
categories' names, corners the annotations' pixel boxes as fractions of the image; what is not
COCO's layout, or disagrees with the images, is refused naming the entry or the file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tfrecordkit import SourceError

CATEGORIES = [{"id": 3, "name": "car"}, {"id": 1, "name": "person"}, {"id": 18, "name": "dog"}]


def _coco(root: Path, images: int = 12, seed: int = 0) -> dict:
    """JPEGs under root/images and root/instances.json; the last image has no objects."""
    rng = np.random.default_rng(seed)
    (root / "images").mkdir(parents=True)
    entries, annotations = [], []
    for image_id in range(1, images + 1):
        height, width = int(rng.integers(40, 90)), int(rng.integers(40, 90))
        name = f"{image_id:012d}.jpg"
        PILImage.fromarray(rng.integers(0, 255, (height, width, 3), dtype=np.uint8)).save(
            root / "images" / name, quality=90)
        entries.append({"id": image_id, "file_name": name, "width": width, "height": height})
        for _ in range(int(rng.integers(1, 4)) if image_id < images else 0):
            w, h = float(rng.uniform(1, width / 2)), float(rng.uniform(1, height / 2))
            x, y = float(rng.uniform(0, width - w)), float(rng.uniform(0, height - h))
            annotations.append({"id": len(annotations) + 1, "image_id": image_id,
                                "category_id": int(rng.choice([1, 3, 18])),
                                "bbox": [x, y, w, h], "area": w * h,
                                "iscrowd": int(rng.random() < 0.1)})
    coco = {"images": entries, "annotations": annotations,
            "categories": [dict(c) for c in CATEGORIES]}
    (root / "instances.json").write_text(json.dumps(coco))
    return coco


def _by_file(path: Path) -> dict[str, tuple[np.ndarray, list[str]]]:
    names = tk.load_manifest(path).schema["image/object"].names
    out = {}
    options = tk.DecodeOptions(provenance=True, features=("image/object",))
    for batch in tk.load_numpy_dataset(path, batch_size=64, sampling=tk.InOrder(),
                                       options=options):
        objects = batch["image/object"]
        for k, source in enumerate(batch["__source"]):
            n = int(objects["labels"]["lengths"][k, 0])
            key = source.decode() if isinstance(source, bytes) else source
            out[key] = (objects["boxes"]["values"][k, :n],
                        [names[i] for i in objects["labels"]["values"][k, :n]])
    return out


def test_every_annotation_becomes_a_box_of_its_image_with_its_category_name(tmp_path):
    coco = _coco(tmp_path)
    result = tk.convert(tk.open_source(tmp_path / "instances.json", images=tmp_path / "images"),
                        tmp_path / "ds")
    assert result.records == len(coco["images"])
    assert tk.load_manifest(tmp_path / "ds").schema["image/object"].names == (
        "person", "car", "dog")  # in category id order
    got = _by_file(tmp_path / "ds")
    names = {c["id"]: c["name"] for c in CATEGORIES}
    images = {i["id"]: i for i in coco["images"]}
    want: dict[str, list] = {i["file_name"]: [] for i in coco["images"]}
    for a in coco["annotations"]:
        want[images[a["image_id"]]["file_name"]].append(a)
    assert set(got) == set(want)
    for name, objects in want.items():
        boxes, labels = got[name]
        image = next(i for i in coco["images"] if i["file_name"] == name)
        size = np.array([image["width"], image["height"]] * 2, np.float64)
        pixels = [[x, y, x + w, y + h] for x, y, w, h in (a["bbox"] for a in objects)]
        np.testing.assert_allclose(boxes * size, np.array(pixels).reshape(-1, 4), atol=1e-3)
        assert labels == [names[a["category_id"]] for a in objects]
    assert got[coco["images"][-1]["file_name"]][1] == []  # an image with no objects


def test_cocos_own_layout_and_the_cli(tmp_path):
    """annotations/instances_val2017.json beside val2017/: found without --images; images
    elsewhere are named with it."""
    _coco(tmp_path / "c", images=3)
    instances = tmp_path / "coco" / "annotations" / "instances_val2017.json"
    instances.parent.mkdir(parents=True)
    (tmp_path / "c" / "instances.json").rename(instances)
    (tmp_path / "c" / "images").rename(tmp_path / "coco" / "val2017")
    run = [sys.executable, "-m", "tfrecordkit", "convert", str(instances), "-q", "--json"]
    done = subprocess.run([*run, str(tmp_path / "ds")], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] == 3
    (tmp_path / "coco" / "val2017").rename(tmp_path / "pictures")
    done = subprocess.run([*run, str(tmp_path / "ds2"), "--images", str(tmp_path / "pictures")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("change", "message"), [
    (lambda c: c["annotations"][0].update(category_id=99), r"annotations\[0\]: category_id 99"),
    (lambda c: c["annotations"][1].update(image_id=999), r"annotations\[1\]: image_id 999"),
    (lambda c: c["annotations"][0].update(bbox=[1, 2, -3, 4]), r"annotations\[0\]: bbox must"),
    (lambda c: c["images"][2].pop("width"), r"images\[2\]: needs id, file_name"),
    (lambda c: c.pop("categories"), r"no 'categories' list"),
    (lambda c: c["categories"].append({"id": 5, "name": "car"}), "repeat a name"),
])
def test_what_is_not_cocos_layout_is_refused_naming_the_entry(tmp_path, change, message):
    coco = _coco(tmp_path, images=4)
    change(coco)
    (tmp_path / "instances.json").write_text(json.dumps(coco))
    with pytest.raises(SourceError, match=message):
        tk.open_source(tmp_path / "instances.json")


def test_an_image_of_another_size_than_annotated_is_refused(tmp_path):
    coco = _coco(tmp_path, images=3)
    coco["images"][1]["width"] += 10
    (tmp_path / "instances.json").write_text(json.dumps(coco))
    source = tk.open_source(tmp_path / "instances.json", images=tmp_path / "images")
    with pytest.raises(SourceError, match=r"000000000002\.jpg: is \d+x\d+ pixels; the "
                                          r"annotations say"):
        tk.convert(source, tmp_path / "ds")
    assert not (tmp_path / "ds" / "dataset.json").exists()


@pytest.mark.integration
def test_tf_data_reads_the_same_boxes(tmp_path):
    pytest.importorskip("tensorflow")
    _coco(tmp_path, images=6)
    tk.convert(tk.open_source(tmp_path / "instances.json", images=tmp_path / "images"),
               tmp_path / "ds")
    options = tk.DecodeOptions(features=("image/object",))
    numpy = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=6,
                                            sampling=tk.InOrder(), options=options)))
    tf_batch = next(iter(tk.load_tf_dataset(tmp_path / "ds", batch_size=6,
                                            sampling=tk.InOrder(), options=options)))
    for part in ("boxes", "labels"):
        for key in ("values", "lengths"):
            a = numpy["image/object"][part][key]
            b = tf_batch["image/object"][part][key].numpy()
            assert a.shape == b.shape and (a == b).all()


@pytest.mark.parametrize(("text", "says"), [
    ('{"images": [], "annotations": [], "categories": [{"id": 1, "name": "\\ud800"}]}',
     "categories[0].name"),
    ("[" * 100_000 + "]" * 100_000, "nested deeper"),
])
def test_hostile_json_is_one_line_naming_the_file(tmp_path, text, says):
    (tmp_path / "instances.json").write_text(text)
    with pytest.raises(tk.SourceError) as err:
        tk.open_source(tmp_path / "instances.json")
    message = str(err.value)
    assert "instances.json" in message and says in message and "\n" not in message


def test_images_not_where_they_were_looked_for_say_where_and_how_to_point_there(tmp_path):
    _coco(tmp_path)
    with pytest.raises(tk.SourceError) as err:
        tk.convert(tk.open_source(tmp_path / "instances.json"), tmp_path / "ds", workers=1)
    message = str(err.value)
    assert f"looked for in {tmp_path}" in message and "images= (--images)" in message
    assert "\n" not in message


@pytest.mark.parametrize("escape", ["dotdot", "absolute", "symlink"])
def test_an_image_outside_the_images_folder_is_refused_unless_asked(tmp_path, escape):
    coco = _coco(tmp_path / "data")
    outside = tmp_path / "elsewhere.jpg"
    first = coco["images"][0]
    (tmp_path / "data" / "images" / first["file_name"]).rename(outside)
    if escape == "symlink":
        (tmp_path / "data" / "images" / first["file_name"]).symlink_to(outside)
    else:
        first["file_name"] = "../../elsewhere.jpg" if escape == "dotdot" else str(outside)
    (tmp_path / "data" / "instances.json").write_text(json.dumps(coco))
    with pytest.raises(tk.SourceError, match="leads outside the images folder") as err:
        tk.convert(tk.open_source(tmp_path / "data" / "instances.json",
                                  images=tmp_path / "data" / "images"), tmp_path / "ds",
                   workers=1)
    assert "\n" not in str(err.value) and not (tmp_path / "ds" / "dataset.json").exists()
    result = tk.convert(tk.sources.Coco(tmp_path / "data" / "instances.json",
                                        tmp_path / "data" / "images", images_outside=True),
                        tmp_path / "ds", workers=1)
    assert result.records == len(coco["images"])


def _edit(root: Path, change) -> Path:
    path = root / "instances.json"
    coco = json.loads(path.read_text())
    change(coco)
    path.write_text(json.dumps(coco))
    return path


def test_a_box_past_its_images_edge_is_refused_naming_it_and_skipped_per_image(tmp_path):
    """Up to a pixel past the edge is COCO's rounding, clipped; a box 1.5x its image (or one
    wholly outside) is refused naming the annotation, the image and the convention, and with
    on_error="skip" only its image is left out."""
    coco = _coco(tmp_path, images=6)
    first = coco["annotations"][0]
    image = next(e for e in coco["images"] if e["id"] == first["image_id"])

    def grow(c):
        c["annotations"][0]["bbox"] = [0, 0, image["width"] * 1.5, image["height"] * 1.5]
        c["annotations"][1]["bbox"][0] = -0.6  # rounding: kept, clipped at 0
    path = _edit(tmp_path, grow)
    with pytest.raises(SourceError, match=rf"{image['file_name']}: annotation id "
                                          rf"{first['id']}: bbox .* px past the edge of the "
                                          r".*\[x, y, width, height\] in pixels"):
        tk.convert(tk.Coco(path, images=tmp_path / "images"), tmp_path / "refused",
                   progress=False)
    result = tk.convert(tk.Coco(path, images=tmp_path / "images"), tmp_path / "skipped",
                        progress=False, on_error="skip")
    skipped = result.manifest.skipped
    assert result.records == 5 and len(skipped) == 1
    assert image["file_name"] in json.dumps(skipped[0]) and "past the edge" in json.dumps(
        skipped[0])
    kept = _by_file(tmp_path / "skipped")
    second = next(e for e in coco["images"] if e["id"] == coco["annotations"][1]["image_id"])
    if second["id"] != image["id"]:
        assert kept[second["file_name"]][0].min() >= 0.0


def test_a_file_of_corners_or_fractions_is_refused_as_not_cocos_convention(tmp_path):
    coco = _coco(tmp_path, images=6)

    def corners(c):  # [x1, y1, x2, y2] written where COCO wants [x, y, w, h]
        for a in c["annotations"]:
            x, y, w, h = a["bbox"]
            a["bbox"] = [x + w * 0.9, y + h * 0.9, x + w + 30, y + h + 30]
    with pytest.raises(SourceError, match=r"were corners \[x1, y1, x2, y2\]"):
        tk.convert(tk.Coco(_edit(tmp_path, corners), images=tmp_path / "images"),
                   tmp_path / "a", progress=False)
    sizes = {e["id"]: (e["width"], e["height"]) for e in coco["images"]}

    def fractions(c):
        for a, original in zip(c["annotations"], coco["annotations"], strict=True):
            x, y, w, h = original["bbox"]
            width, height = sizes[original["image_id"]]
            a["bbox"] = [x / width, y / height, w / width, h / height]
    with pytest.raises(SourceError, match=r"lies in \[0, 1\].*look like fractions"):
        tk.Coco(_edit(tmp_path, fractions))


def test_stats_counts_objects_per_category_and_boxes_per_image_as_the_json_does(
        tmp_path, capsys):
    from collections import Counter

    from tfrecordkit.cli import main

    coco = _coco(tmp_path, images=10)
    tk.convert(tk.Coco(tmp_path / "instances.json", images=tmp_path / "images"),
               tmp_path / "ds", split={"train": 1.0}, progress=False)
    assert main(["stats", str(tmp_path / "ds"), "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)["objects"]["image/object"]
    names = {c["id"]: c["name"] for c in CATEGORIES}
    per_class = Counter(names[a["category_id"]] for a in coco["annotations"])
    per_image = Counter(a["image_id"] for a in coco["annotations"])
    counts = [per_image.get(e["id"], 0) for e in coco["images"]]
    train = entry["splits"]["train"]
    assert entry["names"] == ["person", "car", "dog"]  # category id order
    assert train["per_class"] == {n: per_class.get(n, 0) for n in entry["names"]}
    assert train["objects"] == len(coco["annotations"])
    assert train["boxes_per_image"] == {"min": min(counts), "median": float(np.median(counts)),
                                        "mean": round(float(np.mean(counts)), 3),
                                        "max": max(counts)}
    assert train["images_without_boxes"] == counts.count(0) == 1
    assert main(["stats", str(tmp_path / "ds")]) == 0
    text = capsys.readouterr().out
    assert "image/object: 3 box categories" in text
    assert main(["stats", str(tmp_path / "ds"), "--json", "--no-objects"]) == 0
    assert "objects" not in json.loads(capsys.readouterr().out)
    assert f"train: {len(coco['annotations'])} objects" in text and "person" in text


def _unpadded(part):
    """One example's per-object part: ``{"values", "lengths"}`` cut to its objects."""
    return np.asarray(part["values"])[:int(np.asarray(part["lengths"])[0])]


def test_crowd_flags_areas_and_ids_are_kept_record_for_record(tmp_path):
    """COCO's JSON is the oracle: each record's image id, and per object its annotation id,
    crowd flag, area, box and category, as written; the category ids are the schema's."""
    coco = _coco(tmp_path, images=12)
    path = tmp_path / "ds"
    tk.convert(tk.Coco(tmp_path / "instances.json", images=tmp_path / "images"), path,
               split={"train": 1.0}, progress=False)
    feature = tk.load_manifest(path).schema["image/object"]
    by_id = {c["id"]: c["name"] for c in CATEGORIES}
    assert list(feature.ids) == sorted(by_id) and [by_id[i] for i in feature.ids] == list(
        feature.names)
    assert dict(feature.fields) == {"id": "int64", "is_crowd": "int64", "area": "float32"}
    images = {e["id"]: e for e in coco["images"]}
    seen = 0
    for row in tk.load_numpy_dataset(path, batch_size=None, sampling=tk.InOrder()):
        entry = images[int(row["image/id"])]
        objects = {k: _unpadded(v) for k, v in row["image/object"].items()}
        mine = [a for a in coco["annotations"] if a["image_id"] == entry["id"]]
        assert objects["id"].tolist() == [a["id"] for a in mine]
        assert objects["is_crowd"].tolist() == [a["iscrowd"] for a in mine]
        assert objects["area"].tolist() == [float(np.float32(a["area"])) for a in mine]
        assert [feature.ids[i] for i in objects["labels"]] == [a["category_id"] for a in mine]
        w, h = entry["width"], entry["height"]
        want = [[x / w, y / h, (x + bw) / w, (y + bh) / h] for x, y, bw, bh in
                (a["bbox"] for a in mine)]
        assert np.allclose(objects["boxes"], np.asarray(want, np.float32).reshape(-1, 4))
        seen += 1
    assert seen == len(images)
    crowds = sum(a["iscrowd"] for a in coco["annotations"])
    assert crowds > 0
    source = tk.Coco(tmp_path / "instances.json", images=tmp_path / "images", crowds=False)
    assert source.crowds_left_out == crowds
    tk.convert(source, tmp_path / "no_crowds", split={"train": 1.0}, progress=False)
    flags = [f for row in tk.load_numpy_dataset(tmp_path / "no_crowds", batch_size=None,
                                                sampling=tk.InOrder())
             for f in _unpadded(row["image/object"]["is_crowd"]).tolist()]
    assert len(flags) == len(coco["annotations"]) - crowds and not any(flags)


def _mask(segmentation, height, width):
    """COCO's own decoder (pycocotools) of a polygon list or an RLE, as a [h, w] mask."""
    mask_api = pytest.importorskip("pycocotools.mask")
    if isinstance(segmentation, list):
        rles = mask_api.frPyObjects(segmentation, height, width)
        return mask_api.decode(mask_api.merge(rles))
    if isinstance(segmentation.get("counts"), list):  # uncompressed RLE
        segmentation = mask_api.frPyObjects(segmentation, height, width)
    return mask_api.decode(segmentation)


@pytest.mark.integration
def test_masks_are_kept_as_written_and_decode_as_cocos_own(tmp_path):
    """masks=True keeps each object's segmentation (polygons, an uncompressed RLE crowd, a
    compressed RLE) as written; pycocotools decodes the stored text to COCO's own mask; a
    crop or flip of records carrying them is refused, naming why."""
    mask_api = pytest.importorskip("pycocotools.mask")
    coco = _coco(tmp_path, images=5)
    sizes = {e["id"]: (e["height"], e["width"]) for e in coco["images"]}
    for k, a in enumerate(coco["annotations"]):
        h, w = sizes[a["image_id"]]
        x, y, bw, bh = a["bbox"]
        if k % 3 == 0:
            a["segmentation"] = [[x, y, x + bw, y, x + bw, y + bh, x, y + bh]]
        else:
            full = np.zeros((h, w), np.uint8, order="F")
            full[int(y):int(y + bh), int(x):int(x + bw)] = 1
            rle = mask_api.encode(np.asfortranarray(full))
            if k % 3 == 1:
                a["segmentation"] = {"size": rle["size"], "counts": rle["counts"].decode()}
            else:
                runs, value, count = [], 0, 0
                for bit in full.flatten(order="F"):
                    if bit == value:
                        count += 1
                    else:
                        runs.append(count)
                        value, count = bit, 1
                runs.append(count)
                a["segmentation"] = {"size": [h, w], "counts": runs}
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(coco))
    tk.convert(tk.Coco(path, images=tmp_path / "images", masks=True), tmp_path / "ds",
               split={"train": 1.0}, progress=False)
    checked = 0
    for row in tk.load_numpy_dataset(tmp_path / "ds", batch_size=None, sampling=tk.InOrder()):
        image_id = int(row["image/id"])
        h, w = sizes[image_id]
        mine = [a for a in coco["annotations"] if a["image_id"] == image_id]
        stored = _unpadded(row["image/object"]["segmentation"])
        assert len(stored) == len(mine)
        for text, a in zip(stored, mine, strict=True):
            assert json.loads(text) == a["segmentation"]
            assert (_mask(json.loads(text), h, w) == _mask(a["segmentation"], h, w)).all()
            checked += 1
    assert checked == len(coco["annotations"])
    with pytest.raises(tk.OptionError, match="'segmentation' is kept as written, in the "
                                             "source image's coordinates"):
        tk.load_numpy_dataset(tmp_path / "ds", batch_size=2, image_size=16,
                              options=tk.DecodeOptions(crop="random", flip=True))
    pytest.importorskip("tensorflow")
    common = {"batch_size": 2, "sampling": tk.InOrder()}
    for a, b in zip(tk.load_numpy_dataset(tmp_path / "ds", **common),
                    tk.load_tf_dataset(tmp_path / "ds", **common), strict=True):
        for key in ("values", "lengths"):
            assert (np.asarray(a["image/object"]["segmentation"][key])
                    == b["image/object"]["segmentation"][key].numpy()).all()
    without = tk.load_numpy_dataset(tmp_path / "ds", batch_size=2, image_size=16,
                                    options=tk.DecodeOptions(crop="random",
                                                             features=("image",)))
    assert next(iter(without))["image"].shape == (2, 16, 16, 3)
