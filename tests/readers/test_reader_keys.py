"""A reader never puts its own keys where a feature lives: a user's ``id`` (any table with an
id column) comes back as stored from every TF-free reader, after the write-time shuffle, and
what readers add goes under ``__`` names that the schema refuses for features."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit import SchemaError
from tfrecordkit.readers import CLASS_POSITION, RECORD_ID, VALID
from tfrecordkit.readers.grain_source import load_grain_source

N = 40


@pytest.fixture(scope="module")
def with_ids(tmp_path_factory):
    path = tmp_path_factory.mktemp("ids") / "ds"
    schema = tk.Schema({"id": tk.Scalar("int64"), "valid": tk.Scalar("bool"),
                        "class_position": tk.Scalar("int64"),
                        "label": tk.ClassLabel(["a", "b"])})
    rows = [{"id": 1000 + i, "valid": i % 3 == 0, "class_position": -i, "label": i % 2}
            for i in range(N)]
    tk.write_dataset(rows, path, schema,
                     shards=tk.ShardOptions(seed=5, layout="per_class"))  # shuffled at write
    return path


def _check(values_by_key):
    ids = np.asarray(values_by_key["id"]).tolist()
    assert sorted(ids) == [1000 + i for i in range(N)]
    for i, valid, position, label in zip(ids, values_by_key["valid"],
                                         values_by_key["class_position"],
                                         values_by_key["label"], strict=True):
        k = i - 1000
        assert bool(valid) == (k % 3 == 0) and int(position) == -k and int(label) == k % 2


def _gather(batches):
    keys = ("id", "valid", "class_position", "label", RECORD_ID)
    return {key: np.concatenate([np.asarray(b[key]).reshape(-1) for b in batches])
            for key in keys}


def test_numpy_and_torch_loaders_return_the_stored_id(with_ids):
    numpy_batches = list(tk.load_numpy_dataset(with_ids, batch_size=8, drop_last=False,
                                               world_size=2, rank=1))
    assert all(VALID in b for b in numpy_batches)
    every = _gather(list(tk.load_numpy_dataset(with_ids, batch_size=8, drop_last=False)))
    _check(every)
    assert sorted(every[RECORD_ID].tolist()) == list(range(N))
    pytest.importorskip("torch")
    torch_batches = [{k: v.numpy() if hasattr(v, "numpy") else v for k, v in b.items()}
                     for b in tk.load_torch_dataset(with_ids, batch_size=8, drop_last=False)]
    _check(_gather(torch_batches))


def test_grain_source_returns_the_stored_id(with_ids):
    source = load_grain_source(with_ids)
    rows = [source[i] for i in range(len(source))]
    assert [int(r[RECORD_ID]) for r in rows] == list(range(N))
    _check({key: [r[key] for r in rows] for key in ("id", "valid", "class_position", "label")})


def test_pk_batches_keep_the_stored_id_beside_their_own_keys(with_ids):
    batch = next(iter(tk.iter_pk_batches(with_ids, classes_per_batch=2,
                                         examples_per_class=4, seed=1)))
    assert sorted(batch[CLASS_POSITION].tolist()) == [0] * 4 + [1] * 4
    ids = batch["id"].tolist()
    assert all(1000 <= i < 1000 + N for i in ids)
    assert batch["class_position"].tolist() == [-(i - 1000) for i in ids]


@pytest.mark.parametrize("name", ["__id", "__valid", "__anything"])
def test_reserved_names_are_refused_for_features(name):
    with pytest.raises(SchemaError, match="kept for what readers add"):
        tk.Schema({name: tk.Scalar("int64")})
