"""``root/train/<class>/…``, ``root/val/<class>/…``: the top folders are splits, each image keeps
its split, and classes are numbered by name across every split (torchvision's ``ImageFolder``
of each split is the oracle: the same names and, where a split holds every class, the same
ids). An unclear tree is refused, naming the folders and the option that decides."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tfrecordkit import SourceError
from tfrecordkit.sources import ImageFolder


def _tree(root: Path, layout: dict[str, int]) -> dict[str, str]:
    """PNGs at ``root/<relative folder>/`` (``layout``: folder -> count); returns each
    file's key (path relative to root) -> its folder."""
    rng = np.random.default_rng(len(layout))
    out = {}
    for folder, count in layout.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            path = root / folder / f"{i:03d}.png"
            PILImage.fromarray(rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)).save(path)
            out[str(path.relative_to(root))] = folder
    return out


def _read(path: Path) -> dict[str, dict[str, str]]:
    """Each split's records: their source key -> class name."""
    manifest = tk.load_manifest(path)
    names = manifest.schema["label"].names
    out = {}
    for split in manifest.splits:
        options = tk.DecodeOptions(provenance=True, decode=False)
        rows = {}
        for batch in tk.load_numpy_dataset(path, split, batch_size=64, options=options,
                                           sampling=tk.InOrder()):
            for source, label in zip(batch["__source"], batch["label"], strict=True):
                text = source.decode() if isinstance(source, bytes) else source
                rows[text] = names[int(label)]
        out[split] = rows
    return out


def test_split_folders_keep_their_split_and_classes_by_name(tmp_path):
    files = _tree(tmp_path / "src", {"train/cat": 5, "train/dog": 4, "train/eel": 3,
                                     "val/cat": 2, "val/eel": 2})  # val lacks dog
    tk.convert(tk.open_source(tmp_path / "src"), tmp_path / "ds")
    got = _read(tmp_path / "ds")
    assert set(got) == {"train", "val"}
    assert tk.load_manifest(tmp_path / "ds").schema["label"].names == ("cat", "dog", "eel")
    for split, rows in got.items():
        want = {key: folder.split("/")[1] for key, folder in files.items()
                if folder.startswith(split + "/")}
        assert rows == want  # every file once, in its own split, under its folder's name


def _torchvision_rule(folder: Path) -> tuple[list[str], dict[str, int]]:
    """torchvision's ``ImageFolder`` as its documentation states it (rewritten; torchvision
    does not install beside this machine's torch): classes are the sorted sub-folder names,
    ids their positions; every image file below a class folder is a sample of it."""
    classes = sorted(entry.name for entry in folder.iterdir() if entry.is_dir())
    samples = {str(path.relative_to(folder.parent)): i for i, name in enumerate(classes)
               for path in sorted((folder / name).rglob("*.png"))}
    return classes, samples


def test_ids_agree_with_torchvisions_imagefolder_per_split(tmp_path):
    """torchvision numbers each split's classes alone: where a split holds every class, the
    ids are the same as here (where it doesn't, here they stay the names' across splits)."""
    _tree(tmp_path / "src", {"train/a": 2, "train/b": 3, "val/a": 1, "val/b": 2})
    tk.convert(tk.open_source(tmp_path / "src"), tmp_path / "ds")
    names = tk.load_manifest(tmp_path / "ds").schema["label"].names
    got = _read(tmp_path / "ds")
    for split in ("train", "val"):
        classes, samples = _torchvision_rule(tmp_path / "src" / split)
        assert list(names) == classes
        assert got[split] == {key: classes[c] for key, c in samples.items()}


@pytest.mark.parametrize("top", ["Train", "validation", "dev", "test"])
def test_each_usual_split_name_is_recognised(tmp_path, top):
    _tree(tmp_path, {f"{top}/x": 1, f"{top}/y": 1})
    source = ImageFolder(tmp_path)
    assert source.splits == [top] and source.class_names == ["x", "y"]
    assert {item.split for item in source.items()} == {top}


@pytest.mark.parametrize(("layout", "names"), [
    ({"train/cat": 1, "cat": 1, "dog": 1}, r"\['train'\] are split names beside \['cat', 'dog'\]"),
    ({"test": 2, "train": 2}, r"\['test', 'train'\] are split names but hold no class"),
    ({"train/cat": 1, "test": 1}, r"\['test'\] are split names but hold no class"),
])
def test_an_unclear_tree_is_refused_naming_folders_and_the_option(tmp_path, layout, names):
    _tree(tmp_path, layout)
    with pytest.raises(SourceError, match=names + r".*splits=True.*splits=False"):
        ImageFolder(tmp_path)


def test_the_option_decides(tmp_path):
    _tree(tmp_path, {"train/cat": 2, "cat": 1, "dog": 1})
    classes = ImageFolder(tmp_path, splits=False)
    assert classes.splits == [] and classes.class_names == ["cat", "dog", "train"]
    assert {item.split for item in classes.items()} == {None}
    with pytest.raises(SourceError, match=r"splits=True, but \['cat', 'dog'\] hold no class"):
        ImageFolder(tmp_path, splits=True)
    # A plain tree is classes; splits=True on a real split tree agrees with the default.
    _tree(tmp_path / "plain", {"a": 1, "b": 1})
    assert ImageFolder(tmp_path / "plain").splits == []
    _tree(tmp_path / "tree", {"training/a": 1, "testing/a": 1})
    assert ImageFolder(tmp_path / "tree", splits=True).splits == ["testing", "training"]


def test_files_beside_the_class_folders_are_counted_not_classed(tmp_path):
    _tree(tmp_path, {"train/a": 2, "val/a": 1})
    (tmp_path / "train" / "README.txt").write_text("notes")
    source = ImageFolder(tmp_path)
    assert len(list(source.items())) == 3
    assert source.ignored_count == 1 and source.ignored == ["train/README.txt"]


def test_the_cli_takes_the_option(tmp_path):
    _tree(tmp_path / "src", {"train/cat": 2, "cat": 1})
    run = [sys.executable, "-m", "tfrecordkit", "convert", str(tmp_path / "src"), "-q"]
    refused = subprocess.run([*run, str(tmp_path / "a")], capture_output=True, text=True,
                             check=False)
    assert refused.returncode == 1 and "--no-split-folders" in refused.stderr
    done = subprocess.run([*run, str(tmp_path / "b"), "--no-split-folders"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert tk.load_manifest(tmp_path / "b").schema["label"].names == ("cat", "train")
