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
    numpy_batches = list(tk.load_numpy_dataset(with_ids, batch_size=8,
                                               sampling=tk.Shuffled(),
                                               partition=tk.Partition(1, 2)))
    assert all(VALID in b for b in numpy_batches)
    every = _gather(list(tk.load_numpy_dataset(with_ids, batch_size=8,
                                               sampling=tk.Shuffled())))
    _check(every)
    assert sorted(every[RECORD_ID].tolist()) == list(range(N))
    pytest.importorskip("torch")
    torch_batches = [{k: v.numpy() if hasattr(v, "numpy") else v for k, v in b.items()}
                     for b in tk.load_torch_dataset(with_ids, batch_size=8,
                                                    sampling=tk.Shuffled())]
    _check(_gather(torch_batches))


def test_grain_source_returns_the_stored_id(with_ids):
    source = load_grain_source(with_ids)
    rows = [source[i] for i in range(len(source))]
    assert [int(r[RECORD_ID]) for r in rows] == list(range(N))
    _check({key: [r[key] for r in rows] for key in ("id", "valid", "class_position", "label")})


def test_pk_batches_keep_the_stored_id_beside_their_own_keys(with_ids):
    batch = next(iter(tk.load_numpy_dataset(with_ids, sampling=tk.PK(2, 4), seed=1)))
    assert sorted(batch[CLASS_POSITION].tolist()) == [0] * 4 + [1] * 4
    ids = batch["id"].tolist()
    assert all(1000 <= i < 1000 + N for i in ids)
    assert batch["class_position"].tolist() == [-(i - 1000) for i in ids]


@pytest.mark.parametrize("name", ["__id", "__valid", "__anything"])
def test_reserved_names_are_refused_for_features(name):
    with pytest.raises(SchemaError, match="kept for what readers add"):
        tk.Schema({name: tk.Scalar("int64")})


@pytest.fixture(scope="module")
def other_label(tmp_path_factory):
    """Per-class records whose class feature is ``kind`` and whose ``label`` is a plain
    number (not the class)."""
    path = tmp_path_factory.mktemp("other") / "ds"
    schema = tk.Schema({"label": tk.Scalar("int64"), "kind": tk.ClassLabel(["a", "b", "c"])})
    rows = [{"label": 500 + i, "kind": i % 3} for i in range(N)]
    tk.write_dataset(rows, path, schema, shards=tk.ShardOptions(layout="per_class"),
                     label_feature="kind")
    return path


def _pk_readers(path):
    torch = pytest.importorskip("torch")
    pk = {"sampling": tk.PK(3, 2)}
    out = {"numpy": next(iter(tk.load_numpy_dataset(path, **pk))),
           "torch": {k: v.numpy() if hasattr(v, "numpy") else v for k, v in next(iter(
               torch.utils.data.DataLoader(tk.load_torch_dataset(path, **pk),
                                           batch_size=None))).items()}}
    triplets = next(iter(tk.load_numpy_dataset(path, batch_size=4, sampling=tk.Triplets())))
    return out, triplets


def test_pk_and_triplets_keep_a_label_feature_and_give_class_ids_apart(other_label):
    batches, triplets = _pk_readers(other_label)
    for name, batch in batches.items():
        assert set(np.asarray(batch["label"]).tolist()) <= set(range(500, 500 + N)), name
        assert (np.asarray(batch["__class"]) == np.asarray(batch["kind"])).all(), name
        assert ((np.asarray(batch["label"]) - 500) % 3 == np.asarray(batch["kind"])).all()
    for role in ("anchor", "positive", "negative"):
        part = triplets[role]
        assert ((part["label"] - 500) % 3 == part["__class"]).all()


@pytest.mark.integration
def test_tf_pk_and_triplets_give_class_ids_the_same_way(other_label):
    pytest.importorskip("tensorflow")
    batch = next(iter(tk.load_tf_dataset(other_label, sampling=tk.PK(3, 2))))
    assert (batch["__class"].numpy() == batch["kind"].numpy()).all()
    assert ((batch["label"].numpy() - 500) % 3 == batch["kind"].numpy()).all()
    triplet = next(iter(tk.load_tf_dataset(other_label, batch_size=4, sampling=tk.Triplets())))
    assert ((triplet["anchor"]["label"].numpy() - 500) % 3
            == triplet["anchor"]["__class"].numpy()).all()
    # as_supervised: the class ids are the label, not an input.
    inputs, labels = next(iter(tk.load_tf_dataset(other_label, sampling=tk.PK(3, 2),
                                                  options=tk.DecodeOptions(as_supervised=True))))
    # the one input left is the "label" feature's numbers
    assert (inputs.numpy() >= 500).all() and labels.shape == (6,)


@pytest.mark.integration
@pytest.mark.parametrize("key", ["__id", "__valid", "__class"])
def test_globbed_files_with_reserved_keys_are_refused(tmp_path, key):
    pytest.importorskip("tensorflow")
    with tk.RecordWriter(tmp_path / "f.tfrecord") as writer:
        for i in range(3):
            writer.write(tk.encode_example({key: [100 + i], "x": [float(i)]}))
    with pytest.raises(tk.DatasetError, match=rf"'{key}': starts with '__'"):
        tk.load_numpy_dataset(str(tmp_path / "*.tfrecord"), batch_size=2)
    # Given a schema that leaves the key out, the files read.
    schema = tk.Schema({"x": tk.Scalar("float32")})
    batch = next(iter(tk.load_tf_dataset(str(tmp_path / "*.tfrecord"), batch_size=3,
                                         sampling=tk.InOrder(),
                                         read=tk.ReadOptions(schema=schema))))
    # The reader's own __id and __valid, as every reader gives them; the files' are not read.
    assert batch["x"].numpy().tolist() == [0.0, 1.0, 2.0]
    assert batch["__id"].numpy().tolist() == [0, 1, 2] and batch["__valid"].numpy().all()


def test_image_size_takes_one_int_for_a_square():
    assert tk.DecodeOptions(image_size=32).image_size == (32, 32)
    from tfrecordkit.readers import decode_options

    assert decode_options(None, image_size=16).image_size == (16, 16)
    combined = decode_options(tk.DecodeOptions(image_dtype="float32"), image_size=8)
    assert combined.image_size == (8, 8) and combined.image_dtype == "float32"
    with pytest.raises(tk.OptionError, match="conflicts"):
        decode_options(tk.DecodeOptions(image_size=(4, 4)), image_size=8)
