"""The dataset the loader tests share (NumPy, PyTorch, grain): small and mixed, written once
per session."""

from __future__ import annotations

import pytest

from tests.datasets import LOADER_RECORDS as RECORDS
from tfrecordkit import ShardOptions
from tfrecordkit.convert import write_dataset
from tfrecordkit.schema import ClassLabel, Scalar, Schema, Sequence, Text


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    """``RECORDS`` records in 5 shards: ``v`` = i, ``x`` = i / 7 (float32), ``seq`` (0 to 3
    numbers), ``text``, ``label`` (3 classes)."""
    out = tmp_path_factory.mktemp("loaders") / "ds"
    schema = Schema({"v": Scalar("int64"), "x": Scalar("float32"),
                     "seq": Sequence(Scalar("int64")), "text": Text(),
                     "label": ClassLabel(["a", "b", "c"])})
    rows = [{"v": i, "x": i / 7, "seq": list(range(i % 4)), "text": f"record {i}",
             "label": i % 3} for i in range(RECORDS)]
    write_dataset(rows, out, schema, shards=ShardOptions(num_shards=5), progress=False)
    return out
