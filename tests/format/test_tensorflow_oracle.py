"""TensorFlow is the oracle: what we write, TF reads byte for byte, and the reverse."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecordkit import RecordReader, RecordWriter, decode_example, encode_example
from tfrecordkit.format import decode_sequence_example, encode_sequence_example

pytestmark = pytest.mark.integration

RECORDS = [b"", b"x", bytes(range(256)) * 40, "ünïcode".encode(), b"\x00" * 7]
TF_OPTIONS = {None: None, "gzip": "GZIP", "zlib": "ZLIB"}


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_files_tf_writes_we_read(tf, tmp_path, compression):
    path = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(path, options=TF_OPTIONS[compression]) as writer:
        for record in RECORDS:
            writer.write(record)
    reader = RecordReader(path)
    assert reader.compression == compression
    assert list(reader) == RECORDS


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_files_we_write_tf_reads(tf, tmp_path, compression):
    path = str(tmp_path / "ours.tfrecord")
    with RecordWriter(path, compression) as writer:
        writer.write_all(RECORDS)
    dataset = tf.data.TFRecordDataset(path, compression_type=TF_OPTIONS[compression] or "")
    assert [t.numpy() for t in dataset] == RECORDS


def test_uncompressed_files_are_byte_identical_to_tf(tf, tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    with RecordWriter(ours) as writer:
        writer.write_all(RECORDS)
    with tf.io.TFRecordWriter(str(theirs)) as writer:
        for record in RECORDS:
            writer.write(record)
    assert ours.read_bytes() == theirs.read_bytes()


@settings(max_examples=40)
@given(st.lists(st.binary(max_size=200), max_size=8))
def test_byte_identical_for_any_records(tf, tmp_path_factory, records):
    folder = tmp_path_factory.mktemp("h")
    with RecordWriter(folder / "ours") as writer:
        writer.write_all(records)
    with tf.io.TFRecordWriter(str(folder / "theirs")) as writer:
        for record in records:
            writer.write(record)
    assert (folder / "ours").read_bytes() == (folder / "theirs").read_bytes()


def test_encode_example_equals_tf_train_example(tf):
    ours = encode_example({
        "image": b"\xff\xd8\xff", "label": 3, "scores": np.array([0.25, -1.5], np.float32),
        "text": "héllo", "extremes": [-(2**63), 2**63 - 1],
    })
    theirs = tf.train.Example(features=tf.train.Features(feature={
        "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"\xff\xd8\xff"])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[3])),
        "scores": tf.train.Feature(float_list=tf.train.FloatList(value=[0.25, -1.5])),
        "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=["héllo".encode()])),
        "extremes": tf.train.Feature(int64_list=tf.train.Int64List(value=[-(2**63), 2**63 - 1])),
    }))
    assert tf.train.Example.FromString(ours) == theirs
    parsed = tf.io.parse_single_example(ours, {
        "image": tf.io.FixedLenFeature([], tf.string),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "scores": tf.io.FixedLenFeature([2], tf.float32),
        "text": tf.io.FixedLenFeature([], tf.string),
        "extremes": tf.io.VarLenFeature(tf.int64),
    })
    assert parsed["label"].numpy() == 3
    assert parsed["scores"].numpy().tolist() == [0.25, -1.5]
    assert parsed["text"].numpy().decode() == "héllo"
    assert parsed["extremes"].values.numpy().tolist() == [-(2**63), 2**63 - 1]


@settings(max_examples=60)
@given(st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.one_of(
        st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), min_size=1, max_size=5),
        st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=5),
        st.lists(st.binary(max_size=10), min_size=1, max_size=3),
    ),
    max_size=5,
))
def test_tf_serialized_examples_decode_identically(tf, features):
    def to_tf(values):
        if isinstance(values[0], bytes):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
        if isinstance(values[0], int):
            return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))

    example = tf.train.Example(features=tf.train.Features(
        feature={k: to_tf(v) for k, v in features.items()}))
    decoded = decode_example(example.SerializeToString())
    for name, values in features.items():
        got = decoded[name]
        assert (got if isinstance(got, list) else got.tolist()) == values
    # And the reverse, semantically: our encoding parses to the same message.
    assert tf.train.Example.FromString(encode_example(features)) == example


def test_sequence_example_interop(tf):
    ours = encode_sequence_example(
        {"id": b"clip"}, {"tokens": [[1, 2], [3]], "frames": [np.array([0.5], np.float32)]}
    )
    context, lists = tf.io.parse_single_sequence_example(
        ours,
        context_features={"id": tf.io.FixedLenFeature([], tf.string)},
        sequence_features={"tokens": tf.io.RaggedFeature(tf.int64),
                           "frames": tf.io.FixedLenSequenceFeature([], tf.float32)},
    )
    assert context["id"].numpy() == b"clip"
    assert lists["tokens"].to_list() == [[1, 2], [3]]
    assert lists["frames"].numpy().tolist() == [0.5]
    theirs = tf.train.SequenceExample.FromString(ours).SerializeToString()
    assert decode_sequence_example(theirs)[0]["id"] == [b"clip"]
