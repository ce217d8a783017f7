"""Datasets written by an earlier release (tests/golden/release_0_1, made by the script beside
them with that release) still read, with the values they were written with, in every reader."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import tfrecordkit as tk
from tests.conftest import GOLDEN

RELEASE = GOLDEN / "release_0_1"
EXPECTED = json.loads((RELEASE / "values.json").read_text())["records"]


@pytest.fixture
def release(tmp_path) -> Path:
    """A copy, so that no reader can touch the committed files."""
    shutil.copytree(RELEASE, tmp_path / "release")
    return tmp_path / "release"


def _check_row(row: dict) -> None:
    want = EXPECTED[str(int(row["n"]))]
    assert float(row["f64"]) == want["f64"]
    assert float(row["f16"]) == want["f16"] and int(row["small"]) == want["small"]
    assert np.array_equal(row["image"], np.array(want["pixels"], np.uint8))
    assert row["text"] == want["text"] and list(row["tokens"]) == want["tokens"]
    assert np.array_equal(row["grid"], np.array(want["grid"], np.float32).reshape(-1, 2))
    assert int(row["label"]) == want["label"]


@pytest.mark.parametrize("layout", ["mixed", "per_class"])
def test_every_record_reads_as_written(release, layout):
    manifest = tk.load_manifest(release / layout)
    assert manifest.schema["f64"].dtype == "float64"
    records = tk.open_split(release / layout)
    assert len(records) == len(EXPECTED) == 12
    for i in range(len(records)):
        _check_row(records.schema.decode(records[i]))
    seen = []
    for batch in tk.load_numpy_dataset(release / layout, batch_size=5,
                                       sampling=tk.Shuffled(),
                                       options=tk.DecodeOptions(padding="ragged")):
        for k in range(len(batch["n"])):
            if batch.get("__valid", np.ones(len(batch["n"]), bool))[k]:
                _check_row({name: batch[name][k] for name in EXPECTED["0"] if name in batch}
                           | {"n": batch["n"][k], "image": batch["image"][k],
                              "grid": batch["grid"][k]})
                seen.append(int(batch["n"][k]))
    assert sorted(seen) == list(range(12))


def test_an_adopted_release_dataset_still_gives_file_classes(release):
    loader = tk.load_numpy_dataset(release / "adopted", batch_size=12, sampling=tk.InOrder())
    (batch,) = list(loader)
    assert (batch["x"] // 10).tolist() == batch["label"].tolist()
    assert tk.load_manifest(release / "adopted").class_names == ("0", "1", "2")


@pytest.mark.integration
def test_tf_data_reads_the_release_dataset(release):
    pytest.importorskip("tensorflow")
    from tfrecordkit.readers.tf_data import load_tf_dataset

    ds = load_tf_dataset(release / "mixed", batch_size=12, sampling=tk.InOrder())
    (batch,) = list(ds.as_numpy_iterator())
    for k, n in enumerate(batch["n"].tolist()):
        want = EXPECTED[str(n)]
        assert float(batch["f64"][k]) == want["f64"] and int(batch["label"][k]) == want["label"]
        assert batch["text"][k].decode() == want["text"]
