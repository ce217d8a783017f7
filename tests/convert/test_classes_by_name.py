"""Class ids are matched by name, never read by position: a folder holding some of a schema's
classes converts under the schema's ids; files another conversion numbered are adopted with
their own names, or refused where a dataset would read them under others."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tfrecordkit import DatasetError, SchemaError


def _folder(root: Path, classes: dict[str, int]) -> None:
    for name, count in classes.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            PILImage.fromarray(np.full((4, 5, 3), i * 9, np.uint8)).save(root / name / f"{i}.png")


def _labels(path: Path) -> dict[str, str]:
    """Each record's file (under the folder converted) -> its class name as read."""
    names = tk.load_manifest(path).class_names
    out = {}
    for split in tk.load_manifest(path).splits:
        for batch in tk.load_numpy_dataset(path, split, batch_size=64, sampling=tk.InOrder(),
                                           options=tk.DecodeOptions(provenance=True,
                                                                    decode=False)):
            for source, label in zip(batch["__source"], batch["label"], strict=True):
                out[source.decode()] = names[int(label)]
    return out


SCHEMA = tk.Schema({"image": tk.Image(), "label": tk.ClassLabel(["ant", "bee", "cat", "dog"])})


@pytest.mark.parametrize("classes", [["bee", "dog"], ["dog"], ["ant", "bee", "cat", "dog"],
                                     ["cat", "ant"]])
def test_a_folder_with_some_of_the_classes_keeps_the_schemas_ids(tmp_path, classes):
    _folder(tmp_path / "src", {c: 3 for c in classes})
    tk.convert(tk.open_source(tmp_path / "src"), tmp_path / "ds", schema=SCHEMA,
               split={"train": 0.5, "val": 0.5})
    got = _labels(tmp_path / "ds")
    assert len(got) == 3 * len(classes)
    assert all(path.split("/")[0] == name for path, name in got.items())
    assert tk.load_manifest(tmp_path / "ds").class_names == SCHEMA["label"].names


def test_a_class_the_schema_lacks_is_refused_naming_it_and_the_known_ones(tmp_path):
    _folder(tmp_path / "src", {"bee": 1, "eel": 1})
    with pytest.raises(SchemaError, match=r"classes \['eel'\].*\['ant', 'bee', 'cat', 'dog'\]"):
        tk.convert(tk.open_source(tmp_path / "src"), tmp_path / "ds", schema=SCHEMA)
    assert not (tmp_path / "ds" / "dataset.json").exists()


def test_files_of_another_conversion_keep_their_own_names(tmp_path):
    _folder(tmp_path / "some", {"bee": 2, "dog": 3})
    tk.convert(tk.open_source(tmp_path / "some"), tmp_path / "B")
    files = sorted(str(p) for p in (tmp_path / "B").glob("*.tfrecord"))
    manifest = tk.adopt(files, tmp_path / "adopted")
    assert manifest.class_names == ("bee", "dog")
    want = _labels(tmp_path / "B")
    assert _labels(tmp_path / "adopted") == want


def test_adopting_them_into_a_dataset_with_other_ids_is_refused(tmp_path):
    _folder(tmp_path / "all", {"ant": 1, "bee": 2, "cat": 1, "dog": 3})
    _folder(tmp_path / "some", {"bee": 2, "dog": 3})
    tk.convert(tk.open_source(tmp_path / "all"), tmp_path / "A")
    tk.convert(tk.open_source(tmp_path / "some"), tmp_path / "B")
    before = (tmp_path / "A" / "dataset.json").read_bytes()
    files = [str(p) for p in (tmp_path / "B").glob("*.tfrecord")]
    with pytest.raises(DatasetError, match=r"id 0: 'bee' there, 'ant' in .*A.*wrong names"):
        tk.adopt(files, tmp_path / "A", split="extra")
    assert (tmp_path / "A" / "dataset.json").read_bytes() == before
    assert not list((tmp_path / "A").glob("extra*"))
    # Ids that mean the same there and here join.
    _folder(tmp_path / "same", {"ant": 2, "bee": 1, "cat": 1, "dog": 1})
    tk.convert(tk.open_source(tmp_path / "same"), tmp_path / "S")
    files = [str(p) for p in (tmp_path / "S").glob("*.tfrecord")]
    tk.adopt(files, tmp_path / "A", split="extra")
    assert tk.load_manifest(tmp_path / "A").splits["extra"].records == 5


def test_class_names_that_contradict_the_files_own_are_refused(tmp_path):
    _folder(tmp_path / "some", {"bee": 1, "dog": 1})
    tk.convert(tk.open_source(tmp_path / "some"), tmp_path / "B")
    files = [str(p) for p in (tmp_path / "B").glob("*.tfrecord")]
    with pytest.raises(DatasetError, match="id 0: 'bee' there, 'dog' in class_names"):
        tk.adopt(files, tmp_path / "adopted", class_names=["dog", "bee"])


def test_convert_takes_a_path_and_refuses_what_is_neither(tmp_path):
    _folder(tmp_path / "src", {"bee": 2})
    result = tk.convert(tmp_path / "src", tmp_path / "ds")  # as open_source(path) opens it
    assert result.records == 2 and tk.load_manifest(tmp_path / "ds").class_names == ("bee",)
    with pytest.raises(tk.OptionError, match=r"a path or a source.*got int"):
        tk.convert(42, tmp_path / "other")  # type: ignore[arg-type]


def test_a_schema_naming_the_provenance_key_is_refused_with_why(tmp_path):
    schema = tk.Schema({"x": tk.Scalar("int64"), "__source": tk.Text()})
    with pytest.raises(SchemaError, match=r"'__source'.*leave it out"):
        tk.write_dataset([{"x": 1, "__source": "a"}], tmp_path / "ds", schema, progress=False)


def test_a_manifest_beside_files_it_does_not_list_names_nothing(tmp_path):
    """A dataset.json is believed only for the files it lists: a file copied into another
    dataset's folder does not take that dataset's class names."""
    _folder(tmp_path / "some", {"bee": 1, "dog": 1})
    _folder(tmp_path / "other", {"x": 1, "y": 1, "z": 1})
    tk.convert(tk.open_source(tmp_path / "some"), tmp_path / "B")
    tk.convert(tk.open_source(tmp_path / "other"), tmp_path / "O")
    stranger = tmp_path / "O" / "stranger-00000-of-00001.tfrecord"
    stranger.write_bytes(next((tmp_path / "B").glob("*.tfrecord")).read_bytes())
    manifest = tk.adopt([str(stranger)], tmp_path / "adopted")
    assert manifest.class_names != ("x", "y", "z")


def test_a_hugging_face_class_label_maps_by_name_too(tmp_path):
    datasets = pytest.importorskip("datasets")
    hf = datasets.Dataset.from_dict(
        {"text": ["a dog", "a cat", "a dog"], "label": [1, 0, 1]},
        features=datasets.Features({"text": datasets.Value("string"),
                                    "label": datasets.ClassLabel(names=["cat", "dog"])}))
    schema = tk.Schema({"text": tk.Text(), "label": tk.ClassLabel(["ant", "cat", "dog"])})
    tk.convert(tk.open_source(hf, provenance=False), tmp_path / "ds", schema=schema,
               shards=tk.ShardOptions(shuffle=False))
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=3,
                                            sampling=tk.InOrder())))
    names = tk.load_manifest(tmp_path / "ds").class_names
    assert [names[i] for i in batch["label"]] == ["dog", "cat", "dog"]
    assert batch["text"] == ["a dog", "a cat", "a dog"]
