"""What Ray Data's read_tfrecords tests expect of a TFRecord reader, through our tf.data
reader and our NumPy decode: every list type with one, many and no values, several files."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import own
from tfrecordkit import DatasetError, RecordWriter, decode_example, encode_example

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
tf_data = pytest.importorskip("tfrecordkit.readers.tf_data")

ROWS = [
    {"int_item": 1, "int_list": [2, 2, 3], "float_item": 1.0, "float_list": [2.0, 3.0, 4.0],
     "bytes_item": b"abc", "bytes_list": [b"abc", b"1234"], "int_empty": np.array([], np.int64)},
    {"int_item": 2, "int_list": [3, 3, 4], "float_item": 2.0, "float_list": [5.0, 6.0, 7.0],
     "bytes_item": b"def", "bytes_list": [b"def", b"1234"], "int_empty": np.array([], np.int64)},
]


def _files(tmp_path, copies=2):
    paths = []
    for i in range(copies):
        path = tmp_path / f"part-{i}.tfrecord"
        with RecordWriter(path) as writer:
            writer.write_all(encode_example(r) for r in ROWS)
        paths.append(str(path))
    return paths


def test_every_type_reads_back_through_tf_data(tmp_path):
    paths = _files(tmp_path)
    ds = tf_data.load_tf_dataset(paths, sampling=tk.InOrder())
    got = sorted(ds, key=lambda e: int(e["int_item"]))
    assert len(got) == 4
    for row, example in zip([ROWS[0], ROWS[0], ROWS[1], ROWS[1]], got, strict=True):
        assert int(example["int_item"]) == row["int_item"]
        assert own(example["int_list"]).tolist() == row["int_list"]
        assert float(example["float_item"]) == row["float_item"]
        assert own(example["float_list"]).tolist() == row["float_list"]
        assert example["bytes_item"].numpy() == row["bytes_item"]
        assert own(example["bytes_list"]).tolist() == row["bytes_list"]
        assert own(example["int_empty"]).tolist() == []


def test_tf_data_and_numpy_decode_agree(tmp_path):
    paths = _files(tmp_path, copies=1)
    parsed = next(iter(tf_data.load_tf_dataset(paths, sampling=tk.InOrder())))
    ours = decode_example(encode_example(ROWS[0]))
    for name, value in ours.items():
        theirs = own(parsed[name])
        assert np.asarray(value).ravel().tolist() == np.asarray(theirs).ravel().tolist(), name


def test_a_missing_path_and_an_empty_glob_raise(tmp_path):
    paths = _files(tmp_path, copies=1)
    with pytest.raises(DatasetError, match="no such file"):
        tf_data.load_tf_dataset([*paths, str(tmp_path / "gone.tfrecord")])
    with pytest.raises(DatasetError, match="match"):
        tf_data.load_tf_dataset(str(tmp_path / "nothing-*.tfrecord"))
