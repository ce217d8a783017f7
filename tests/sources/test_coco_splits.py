"""COCO's splits in one call: a split -> source mapping wherever a source goes, COCO's own
layout by its root, records keyed by image folder and file name (so ``train/0000.png`` and a
different ``val/0000.png`` are two records), the key rule recorded in the manifest, and an
append to a dataset written before the rule keyed as that dataset was."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tfrecordkit import OptionError, SourceError
from tfrecordkit.cli import main

GOLDEN = Path(__file__).parent.parent / "golden" / "coco_before_key_rule"


def _split(root: Path, folder: str, seed: int, count: int = 3) -> Path:
    """``count`` PNGs named 0000.png... in ``root/folder`` and their annotations in
    ``root/annotations/instances_<folder>.json``: every split reuses the same file names."""
    rng = np.random.default_rng(seed)
    (root / folder).mkdir(parents=True)
    (root / "annotations").mkdir(exist_ok=True)
    images, annotations = [], []
    for k in range(count):
        name = f"{k:04d}.png"
        PILImage.fromarray(rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)).save(
            root / folder / name)
        images.append({"id": 100 * seed + k, "file_name": name, "width": 12, "height": 10})
        annotations.append({"id": 1000 * seed + k, "image_id": 100 * seed + k,
                            "category_id": 1 + k % 2, "bbox": [1.0, 2.0, 5.0, 4.0],
                            "area": 20.0, "iscrowd": 0})
    path = root / "annotations" / f"instances_{folder}.json"
    path.write_text(json.dumps({"images": images, "annotations": annotations, "categories": [
        {"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]}))
    return path


def _pixels_by_split(path: Path) -> dict[str, list[bytes]]:
    out = {}
    for split in tk.load_manifest(path).splits:
        out[split] = sorted(bytes(b["image"].tobytes()) for b in tk.load_numpy_dataset(
            path, split, batch_size=None, sampling=tk.InOrder()))
    return out


def test_a_mapping_of_splits_converts_each_json_into_its_split_keyed_by_folder(tmp_path):
    train = _split(tmp_path / "coco", "train2017", seed=1)
    val = _split(tmp_path / "coco", "val2017", seed=2)
    result = tk.convert({"train": train, "val": val}, tmp_path / "ds", progress=False)
    manifest = result.manifest
    assert {s: v.records for s, v in manifest.splits.items()} == {"train": 3, "val": 3}
    assert manifest.created_by["keys"] == "coco:folder/file_name"
    # 0000.png of train and of val are two records (different pixels), each in its split.
    one = {s: _pixels_by_split(tmp_path / "ds")[s] for s in ("train", "val")}
    assert not set(one["train"]) & set(one["val"])
    # COCO's own layout by its root, from the CLI: the same dataset.
    assert main(["convert", str(tmp_path / "coco"), str(tmp_path / "root"), "-q"]) == 0
    assert _pixels_by_split(tmp_path / "root") == _pixels_by_split(tmp_path / "ds")
    # And splits named on the command line.
    assert main(["convert", f"train={train},val={val}", str(tmp_path / "named"), "-q"]) == 0
    assert _pixels_by_split(tmp_path / "named") == _pixels_by_split(tmp_path / "ds")


def test_a_mapping_takes_no_ratios_and_an_append_of_one_finds_its_splits(tmp_path):
    train = _split(tmp_path / "coco", "train2017", seed=1)
    val = _split(tmp_path / "coco", "val2017", seed=2)
    with pytest.raises(OptionError, match="takes no split ratios or stratify"):
        tk.convert({"train": train, "val": val}, tmp_path / "a", split={"a": 0.5, "b": 0.5})
    with pytest.raises(OptionError, match="takes no split ratios or stratify"):
        tk.convert({"train": train, "val": val}, tmp_path / "a", stratify=True)
    tk.convert({"train": train}, tmp_path / "ds", progress=False)
    with pytest.raises(OptionError, match=r"has no split 'val'.*new_split=True"):
        tk.append(tmp_path / "ds", {"val": val})
    grown = tk.append(tmp_path / "ds", {"val": val}, new_split=True)
    assert grown.added == 3 and {s: v.records for s, v in grown.manifest.splits.items()} == {
        "train": 3, "val": 3}
    again = tk.append(tmp_path / "ds", {"train": train, "val": val})
    assert again.added == 0 and again.present == 6
    with pytest.raises(tk.DatasetError, match="split -> source mapping"):
        tk.append(tmp_path / "ds", tk.Coco(val))


def test_one_file_name_under_two_image_ids_is_refused(tmp_path):
    path = _split(tmp_path / "coco", "val2017", seed=2)
    coco = json.loads(path.read_text())
    coco["images"][1]["file_name"] = coco["images"][0]["file_name"]
    path.write_text(json.dumps(coco))
    with pytest.raises(SourceError, match=r"images\[1\]: file_name '0000.png' is also "
                                          r"images\[0\]"):
        tk.Coco(path)


def test_an_append_to_a_dataset_written_before_the_key_rule_keys_by_file_name(tmp_path):
    """The dataset in tests/golden/coco_before_key_rule was written by the commit before this
    change (records keyed by file name, no rule recorded): appending the same JSON finds every
    image already there, and a new image is added in the split the dataset's rule gives it."""
    dataset = tmp_path / "dataset"
    shutil.copytree(GOLDEN / "dataset", dataset)
    shutil.copytree(GOLDEN / "coco", tmp_path / "coco")
    before = json.loads((dataset / "dataset.json").read_text())
    assert "keys" not in before["created_by"]
    instances = tmp_path / "coco" / "instances.json"
    images = tmp_path / "coco" / "images"
    again = tk.append(dataset, tk.Coco(instances, images=images))
    assert again.added == 0 and again.present == 3
    coco = json.loads(instances.read_text())
    PILImage.fromarray(np.full((8, 8, 3), 77, np.uint8)).save(images / "0004.png")
    coco["images"].append({"id": 4, "file_name": "0004.png", "width": 8, "height": 8})
    instances.write_text(json.dumps(coco))
    grown = tk.append(dataset, tk.Coco(instances, images=images))
    assert grown.added == 1 and grown.present == 3
    assert "keys" not in json.loads((dataset / "dataset.json").read_text())["created_by"]
    # The one-shot conversion with the old rule puts 0004.png in the same split.
    once = tmp_path / "once"
    tk.convert(tk.Coco(instances, images=images).keyed_as(None), once,
               split={"train": 0.5, "val": 0.5}, progress=False)
    assert _pixels_by_split(once) == _pixels_by_split(dataset)


def _week(root: Path, name: str, images: list[tuple[str, list[int]]],
          categories: list[tuple[int, str]]) -> Path:
    """``images``: (file name, category id of each object) under root/images."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    (root / "images").mkdir(parents=True, exist_ok=True)
    entries, annotations = [], []
    for file, objects in images:
        if not (root / "images" / file).exists():
            PILImage.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(
                root / "images" / file)
        image_id = int(file.split(".")[0])
        entries.append({"id": image_id, "file_name": file, "width": 16, "height": 16})
        for j, category in enumerate(objects):
            annotations.append({"id": image_id * 10 + j, "image_id": image_id,
                                "category_id": category, "bbox": [j, j, 6.0, 5.0],
                                "area": 30.0, "iscrowd": 0})
    path = root / f"{name}.json"
    path.write_text(json.dumps({"images": entries, "annotations": annotations, "categories": [
        {"id": i, "name": n} for i, n in categories]}))
    return path


def _named_objects(path: Path, split: str = "train"
                   ) -> dict[str, list[tuple[str, list[float]]]]:
    names = tk.load_manifest(path).schema["image/object"].names
    out = {}
    for row in tk.load_numpy_dataset(path, split, batch_size=None, sampling=tk.InOrder(),
                                     options=tk.DecodeOptions(provenance=True)):
        objects = row["image/object"]
        n = int(objects["labels"]["lengths"][0])
        out[str(row["__source"])] = [
            (names[int(i)], [round(float(v), 6) for v in box]) for i, box in zip(
                objects["labels"]["values"][:n], objects["boxes"]["values"][:n], strict=True)]
    return out


def test_an_append_with_a_new_category_grows_the_box_names_as_one_conversion_would(tmp_path):
    """Week 2 brings category 'cyan' (and an image of week 1 again): the append gives cyan
    the next id, old ids keep their names, the category ids grow with it, and every record
    holds the same named boxes as converting both weeks' images at once."""
    cats = [(1, "cat"), (2, "dog")]
    one = _week(tmp_path, "week1", [("1.png", [1]), ("2.png", [2, 1]), ("3.png", [])], cats)
    two = _week(tmp_path, "week2", [("3.png", []), ("4.png", [5, 1]), ("5.png", [5])],
                [*cats, (5, "cyan")])
    every = _week(tmp_path, "every", [("1.png", [1]), ("2.png", [2, 1]), ("3.png", []),
                                      ("4.png", [5, 1]), ("5.png", [5])], [*cats, (5, "cyan")])
    images = tmp_path / "images"
    tk.convert(tk.Coco(one, images=images), tmp_path / "ds", progress=False)
    grown = tk.append(tmp_path / "ds", tk.Coco(two, images=images))
    assert grown.added == 2 and grown.present == 1
    boxes = grown.manifest.schema["image/object"]
    assert boxes.names == ("cat", "dog", "cyan") and boxes.ids == (1, 2, 5)
    tk.convert(tk.Coco(every, images=images), tmp_path / "once", progress=False)
    assert _named_objects(tmp_path / "ds") == _named_objects(tmp_path / "once")
    clash = _week(tmp_path, "clash", [("6.png", [2])], [(1, "cat"), (2, "owl")])
    with pytest.raises(tk.SchemaError, match="new category 'owl' id 2, which is 'dog'"):
        tk.append(tmp_path / "ds", tk.Coco(clash, images=images))


def test_splits_holding_other_categories_join_their_names(tmp_path):
    """A val file with a category train lacks (and train one val lacks) converts in one call:
    the box names are joined by name, every record's boxes named as its JSON says."""
    images = tmp_path / "images"
    train = _week(tmp_path, "train", [("1.png", [1]), ("2.png", [2, 1])], [(1, "cat"),
                                                                          (2, "dog")])
    val = _week(tmp_path, "val", [("3.png", [5]), ("4.png", [1])], [(1, "cat"), (5, "owl")])
    result = tk.convert({"train": tk.Coco(train, images=images),
                         "val": tk.Coco(val, images=images)}, tmp_path / "ds", progress=False)
    boxes = result.manifest.schema["image/object"]
    assert boxes.names == ("cat", "dog", "owl") and boxes.ids == (1, 2, 5)
    named = {**_named_objects(tmp_path / "ds"), **_named_objects(tmp_path / "ds", "val")}
    assert [n for n, _ in named["3.png"]] == ["owl"] and [n for n, _ in named["2.png"]] == [
        "dog", "cat"]
    other = _week(tmp_path, "other", [("5.png", [1])], [(1, "cat")])
    coco = json.loads(other.read_text())
    coco["annotations"][0]["area"] = "big"  # the fields differ: area is not kept
    other.write_text(json.dumps(coco))
    with pytest.raises(SourceError, match="features differ from split 'train'"):
        tk.convert({"train": tk.Coco(train, images=images),
                    "x": tk.Coco(other, images=images)}, tmp_path / "x", progress=False)


def test_a_mapping_of_tables_keys_each_row_by_its_split(tmp_path):
    """Two tables keyed by row number (1, 2 in each) are four records, not a key clash;
    appending the same mapping again finds all four."""
    (tmp_path / "t1.csv").write_text("x,label\n1,a\n2,b\n")
    (tmp_path / "t2.csv").write_text("x,label\n3,a\n4,b\n")
    mapping = {"train": tmp_path / "t1.csv", "val": tmp_path / "t2.csv"}
    result = tk.convert(mapping, tmp_path / "ds", progress=False)
    assert {s: v.records for s, v in result.manifest.splits.items()} == {"train": 2, "val": 2}
    values = sorted(int(v) for split in ("train", "val") for b in tk.load_numpy_dataset(
        tmp_path / "ds", split, batch_size=2, sampling=tk.InOrder()) for v in b["x"])
    assert values == [1, 2, 3, 4]
    again = tk.append(tmp_path / "ds", mapping)
    assert again.added == 0 and again.present == 4
