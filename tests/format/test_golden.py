"""Files written by real TensorFlow (tests/golden/make_golden.py), read without TensorFlow."""

from __future__ import annotations

import base64
import hashlib
import json

import numpy as np
import pytest

from tfrecordkit import RecordReader, decode_example, decode_sequence_example


@pytest.fixture
def expected(golden):
    return json.loads((golden / "expected.json").read_text())


@pytest.mark.parametrize(("name", "compression"), [
    ("examples.tfrecord", None), ("examples.tfrecord.gz", "gzip"), ("examples.tfrecord.zz", "zlib"),
])
def test_golden_records_read_identically(golden, expected, name, compression):
    reader = RecordReader(golden / name)
    assert reader.compression == compression
    records = list(reader)
    assert records == [base64.b64decode(r) for r in expected["records_base64"]]


def test_golden_examples_decode_to_what_tf_wrote(golden, expected):
    for record, want in zip(RecordReader(golden / "examples.tfrecord"), expected["decoded"],
                            strict=True):
        got = decode_example(record)
        assert hashlib.sha256(got["image"][0]).hexdigest() == want["image_sha256"]
        assert got["label"].tolist() == want["label"]
        assert np.array_equal(got["scores"], np.array(want["scores"], dtype=np.float32))
        assert got["caption"] == [want["caption"].encode()]
        assert got["extremes"].tolist() == want["extremes"]


def test_golden_sequence_example(golden):
    (record,) = RecordReader(golden / "sequence.tfrecord")
    context, lists = decode_sequence_example(record)
    assert context == {"id": [b"clip-7"]}
    assert [t.tolist() for t in lists["tokens"]] == [[1, 2], [3]]
    assert [f.tolist() for f in lists["frames"]] == [[0.5, -1.25]]
