"""What TFDS' example serializer/parser tests check, on our Schema: scalars, fixed tensors,
ragged sequences, empty sequences, bytes with NULs, int64 and float edges, against TF."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import own
from tfrecordkit import ShardOptions
from tfrecordkit.schema import ClassLabel, Scalar, Schema, Sequence, Tensor, Text

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
tf_data = pytest.importorskip("tfrecordkit.readers.tf_data")

SCHEMA = Schema({
    "i": Scalar("int64"),
    "f": Scalar("float32"),
    "b": Scalar("string"),
    "t": Tensor((2, 3), "int32"),
    "v": Tensor((None, 2), "float32"),
    "seq": Sequence(Scalar("int64")),
    "words": Sequence(Text()),
    "label": ClassLabel(["neg", "pos"]),
})

ROWS = [
    {"i": 2**63 - 1, "f": float("inf"), "b": b"\x00nul\x00", "t": np.arange(6).reshape(2, 3),
     "v": np.zeros((0, 2), np.float32), "seq": [], "words": [], "label": "pos"},
    {"i": -(2**63), "f": -0.0, "b": b"\xff\xfe not utf-8",
     "t": -np.arange(6).reshape(2, 3), "v": np.arange(8, dtype=np.float32).reshape(4, 2),
     "seq": [1, -1, 2**40], "words": ["ünï", ""], "label": 0},
    {"i": 0, "f": 3.4028234663852886e38, "b": b"", "t": np.zeros((2, 3), np.int32),
     "v": np.ones((1, 2), np.float32), "seq": [7], "words": ["a b"], "label": 1},
]


def test_schema_round_trip_and_tensorflow_agree(tmp_path):
    from tfrecordkit.convert import write_dataset

    write_dataset(ROWS, tmp_path / "ds", SCHEMA, shards=ShardOptions(shuffle=False), progress=False)
    records = []
    from tfrecordkit.format import RecordReader
    from tfrecordkit.store import load_manifest

    manifest = load_manifest(tmp_path / "ds")
    for shard in manifest.split("train").shards:
        records += list(RecordReader(tmp_path / "ds" / shard.file))
    decoded = sorted((SCHEMA.decode(r) for r in records), key=lambda d: d["i"])
    expected = sorted(ROWS, key=lambda r: r["i"])
    for got, row in zip(decoded, expected, strict=True):
        assert got["i"] == row["i"]
        assert np.float32(got["f"]).tobytes() == np.float32(row["f"]).tobytes()
        assert got["b"] == row["b"]
        assert np.array_equal(got["t"], row["t"]) and got["t"].dtype == np.int32
        assert np.array_equal(got["v"], row["v"]) and got["v"].shape == row["v"].shape
        assert list(got["seq"]) == row["seq"]
        assert got["words"] == row["words"]
    ds = tf_data.load_tf_dataset(tmp_path / "ds", sampling=tk.InOrder())
    from_tf = sorted(ds, key=lambda e: int(e["i"]))
    for example, row in zip(from_tf, expected, strict=True):
        assert int(example["i"]) == row["i"]
        assert example["b"].numpy() == row["b"]
        assert np.array_equal(example["t"].numpy(), row["t"])
        assert np.array_equal(own(example["v"]), row["v"])
        assert own(example["seq"]).tolist() == row["seq"]
        assert [w.decode() for w in own(example["words"]).tolist()] == row["words"]
