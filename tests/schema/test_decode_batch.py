"""Schema.decode_batch (columns through the codec) equals Schema.decode record by record, for
every feature kind, and reports the same errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.datasets import MIXED_SCHEMA as SCHEMA
from tests.datasets import mixed_row as _row
from tfrecordkit import SchemaError, encode_example
from tfrecordkit.schema import (
    ClassLabel,
    Scalar,
    Schema,
)


def _same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, np.ndarray | np.generic) or isinstance(b, np.ndarray | np.generic):
        assert np.array_equal(np.asarray(a), np.asarray(b)), (a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype or np.asarray(a).ndim == 0
    elif isinstance(a, list):
        assert len(a) == len(b) and all(_same(x, y) is None for x, y in zip(a, b, strict=True))
    else:
        assert (a == b and type(a) is type(b)) or (isinstance(a, float) and a == b), (a, b)


@given(st.integers(0, 2**32 - 1), st.integers(1, 12))
def test_decode_batch_equals_decode_for_every_kind(seed, n):
    rng = np.random.default_rng(seed)
    records = [SCHEMA.encode(_row(i, rng)) for i in range(n)]
    batch = SCHEMA.decode_batch(records)
    for i, record in enumerate(records):
        one = SCHEMA.decode(record)
        for name in SCHEMA:
            value = batch[name][i]
            if isinstance(value, np.generic):  # numbers come as arrays: compare the value
                assert value.item() == one[name] or (value != value and one[name] != one[name])
            else:
                _same(value, one[name])


def test_selected_features_and_errors_name_the_record():
    rng = np.random.default_rng(0)
    records = [SCHEMA.encode(_row(i, rng)) for i in range(4)]
    assert set(SCHEMA.decode_batch(records, features=["label", "seq"])) == {"label", "seq"}
    schema = Schema({"x": Scalar("int8"), "label": ClassLabel(["a", "b"])})
    good = schema.encode({"x": 1, "label": 1})
    for bad, match in [(encode_example({"x": [300], "label": [1]}), "300 does not fit int8"),
                       (encode_example({"x": [1], "label": [5]}), "class index 5 outside"),
                       (encode_example({"x": [1.5], "label": [1]}), "holds a float32 list")]:
        with pytest.raises(SchemaError, match=f"record r2: .*{match}"):
            schema.decode_batch([good, good, bad], where=lambda i: f"r{i}")
        with pytest.raises(SchemaError, match=match):
            schema.decode(bad)


def test_fixed_raw_tensors_decode_as_one_array_and_bad_sizes_are_named():
    from tfrecordkit.schema import Tensor

    schema = Schema({"x": Tensor((2, 3), "float32"), "b": Tensor((4,), "uint16")})
    rng = np.random.default_rng(0)
    rows = [{"x": rng.normal(size=(2, 3)).astype(np.float32),
             "b": rng.integers(0, 2**16, 4).astype(np.uint16)} for _ in range(5)]
    records = [schema.encode(r) for r in rows]
    batch = schema.decode_batch(records)
    assert batch["x"].shape == (5, 2, 3) and batch["x"].dtype == np.float32
    assert batch["b"].shape == (5, 4) and batch["b"].dtype == np.uint16
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(batch["x"][i], row["x"])
        np.testing.assert_array_equal(batch["b"][i], schema.decode(records[i])["b"])
    short = encode_example({"x": [b"\x00" * 20], "b": [b"\x00" * 8]})  # 20 bytes, not 24
    with pytest.raises(SchemaError, match=r"record 2: feature 'x': 20 bytes"):
        schema.decode_batch([*records[:2], short])
