"""Classes from file names (``adopt(class_pattern=...)``): names are the captured text, ids are
dense, no class exists without files, one number written two ways is refused, and time and
memory follow the number of files, not the numbers in their names."""

from __future__ import annotations

from pathlib import Path

import pytest

import tfrecordkit as tk
from tfrecordkit import DatasetError
from tfrecordkit.format import RecordWriter, encode_example


def _files(folder: Path, names: list[str], records: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for k, name in enumerate(names):
        with RecordWriter(str(folder / name)) as writer:
            for i in range(records):
                writer.write(encode_example({"x": [100 * k + i]}))
    return folder


def _classes_by_file(manifest) -> dict[str, str]:
    names = manifest.class_names
    return {shard.file: names[shard.class_id] for shard in manifest.splits["train"].shards}


def test_numeric_captures_get_dense_ids_in_numeric_order(tmp_path):
    folder = _files(tmp_path / "d", ["class_10.tfrecord", "class_2.tfrecord",
                                     "class_7.tfrecord"])
    manifest = tk.adopt(folder, class_pattern=r"class_(\d+)")
    assert manifest.class_names == ("2", "7", "10")  # no class "0", "1", ... without files
    assert _classes_by_file(manifest) == {"class_10.tfrecord": "10", "class_2.tfrecord": "2",
                                          "class_7.tfrecord": "7"}
    assert manifest.splits["train"].class_counts == {"0": 3, "1": 3, "2": 3}  # by class id


def test_leading_zeros_are_kept_as_the_class_name(tmp_path):
    folder = _files(tmp_path / "d", ["class_007.tfrecord", "class_010.tfrecord"])
    manifest = tk.adopt(folder, class_pattern=r"class_(\d+)")
    assert manifest.class_names == ("007", "010")


def test_one_number_written_two_ways_is_refused_naming_both_files(tmp_path):
    folder = _files(tmp_path / "d", ["class_01.tfrecord", "class_1.tfrecord"])
    with pytest.raises(DatasetError) as caught:
        tk.adopt(folder, class_pattern=r"class_(\d+)")
    message = str(caught.value)
    assert "class_01.tfrecord" in message and "class_1.tfrecord" in message
    assert not (folder / "dataset.json").exists()


def test_text_captures_are_sorted(tmp_path):
    folder = _files(tmp_path / "d", ["class_dog.tfrecord", "class_cat.tfrecord",
                                     "class_10.tfrecord"])
    manifest = tk.adopt(folder, class_pattern=r"class_(\w+)\.")
    assert manifest.class_names == ("10", "cat", "dog")


def test_a_huge_number_in_a_name_is_one_class(tmp_path):
    # It used to build a name for every number up to it (21.8 GB, then killed).
    folder = _files(tmp_path / "d", ["class_999999999999.tfrecord", "class_3.tfrecord"])
    manifest = tk.adopt(folder, class_pattern=r"class_(\d+)")
    assert manifest.class_names == ("3", "999999999999")
    loader = tk.load_numpy_dataset(folder, batch_size=6, sampling=tk.InOrder())
    labels = sorted(int(v) for batch in loader for v in batch["label"])
    assert labels == [0, 0, 0, 1, 1, 1]


def test_given_numeric_names_are_names_not_ids(tmp_path):
    folder = _files(tmp_path / "d", ["class_1.tfrecord", "class_0.tfrecord"])
    with pytest.raises(DatasetError, match="not among"):
        # "0" is not a class here, and not the id of class "1" either.
        tk.adopt(folder, class_pattern=r"class_(\d+)", class_names=["1", "2"])
    manifest = tk.adopt(folder, class_pattern=r"class_(\d+)", class_names=["zero", "one"])
    assert _classes_by_file(manifest) == {"class_0.tfrecord": "zero",
                                          "class_1.tfrecord": "one"}


def test_a_val_split_joins_by_the_captured_names(tmp_path):
    train = _files(tmp_path / "train", ["class_3.tfrecord", "class_5.tfrecord"])
    val = _files(tmp_path / "val", ["class_5.tfrecord"])
    tk.adopt(train, class_pattern=r"class_(\d+)")
    manifest = tk.adopt(val, train, split="val", class_pattern=r"class_(\d+)")
    assert manifest.splits["val"].class_counts == {"1": 3}  # class id 1 is "5"
    assert [shard.class_id for shard in manifest.splits["val"].shards] == [1]
