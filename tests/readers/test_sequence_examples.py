"""SequenceExample files (video, audio and time-series pipelines write them) read by every
reader, without a schema: context keys as Example keys, each feature list as a
``(steps, *step shape)`` value per record, batched as ``{"values", "lengths"}`` (ragged on
request). TensorFlow's ``tf.io.parse_single_sequence_example`` is the oracle."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")

N = 9


def _record(i: int) -> bytes:
    ex = tf.train.SequenceExample()
    ex.context.feature["id"].int64_list.value.append(i)
    ex.context.feature["name"].bytes_list.value.append(f"clip {i}".encode())
    ex.context.feature["rate"].float_list.value.append(i / 4)
    for t in range(i % 4):  # 0..3 steps; a record with none has no feature lists at all
        ex.feature_lists.feature_list["frames"].feature.add().float_list.value.extend(
            [t + i / 10, -t, 0.5])
        ex.feature_lists.feature_list["token"].feature.add().int64_list.value.append(
            100 * i + t)
        ex.feature_lists.feature_list["word"].feature.add().bytes_list.value.append(
            f"w{i}.{t}".encode())
    return ex.SerializeToString()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("seq")
    for part, ids in enumerate((range(N // 2), range(N // 2, N))):
        with tf.io.TFRecordWriter(str(root / f"part-{part}.tfrecord")) as writer:
            for i in ids:
                writer.write(_record(i))
    return str(root / "*.tfrecord")


def _oracle(i: int) -> dict:
    context, lists = tf.io.parse_single_sequence_example(
        _record(i),
        context_features={"id": tf.io.FixedLenFeature([], tf.int64),
                          "name": tf.io.FixedLenFeature([], tf.string),
                          "rate": tf.io.FixedLenFeature([], tf.float32)},
        sequence_features={
            "frames": tf.io.FixedLenSequenceFeature([3], tf.float32, allow_missing=True),
            "token": tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True),
            "word": tf.io.FixedLenSequenceFeature([], tf.string, allow_missing=True)})
    return {k: v.numpy() for k, v in {**context, **lists}.items()}


def _rows(batch: dict, n: int) -> list[dict]:
    """A padded batch back to one value per record (cut to each record's steps)."""
    rows = []
    for k in range(n):
        row = {}
        for key, value in batch.items():
            if key.startswith("__"):
                continue
            if isinstance(value, dict):
                values = np.asarray(value["values"])[k]
                row[key] = values[: int(np.asarray(value["lengths"])[k][0])]
            else:
                row[key] = np.asarray(value)[k]
        rows.append(row)
    return rows


def _check(row: dict, want: dict) -> None:
    assert set(row) == set(want)
    for key, value in want.items():
        got = row[key]
        if isinstance(value, bytes):
            assert (got.encode() if isinstance(got, str) else bytes(got)) == value, key
        elif value.dtype == object:
            assert [g.encode() if isinstance(g, str) else g for g in np.ravel(got)] == \
                list(np.ravel(value)), key
        else:
            assert np.asarray(got).dtype == value.dtype, key
            np.testing.assert_array_equal(got, value, err_msg=key)


def test_every_reader_equals_parse_sequence_example(files):
    from tfrecordkit.readers.torch_data import load_torch_dataset

    numpy_rows = [r for b in tk.load_numpy_dataset(files, batch_size=4, sampling=tk.InOrder())
                  for r in _rows(b, len(b["__id"]))]
    tf_rows = [r for b in tk.load_tf_dataset(files, batch_size=4, sampling=tk.InOrder())
               for r in _rows({k: ({kk: vv.numpy() for kk, vv in v.items()}
                                   if isinstance(v, dict) else v.numpy())
                               for k, v in b.items()}, int(b["id"].shape[0]))]
    torch_rows = [r for b in load_torch_dataset(files, batch_size=4, sampling=tk.InOrder())
                  for r in _rows({k: ({kk: np.asarray(vv) for kk, vv in v.items()}
                                      if isinstance(v, dict) else np.asarray(v))
                                  for k, v in b.items()}, len(b["__id"]))]
    assert len(numpy_rows) == len(tf_rows) == len(torch_rows) == N
    for rows in (numpy_rows, tf_rows, torch_rows):
        for row in rows:
            _check(row, _oracle(int(row["id"])))
    grain = tk.load_grain_source(files)
    for k in range(N):
        row = grain[k]
        _check({key: (v["values"][: int(v["lengths"][0])] if isinstance(v, dict) else v)
                for key, v in row.items() if not key.startswith("__")},
               _oracle(int(row["id"])))


def test_ragged_and_single_examples_alike(files):
    options = tk.DecodeOptions(padding="ragged")
    batch = next(iter(tk.load_numpy_dataset(files, batch_size=N, sampling=tk.InOrder(),
                                            options=options)))
    tf_batch = next(iter(tk.load_tf_dataset(files, batch_size=N, sampling=tk.InOrder(),
                                            options=options)))
    for k in range(N):
        want = _oracle(int(batch["id"][k]))
        np.testing.assert_array_equal(batch["frames"][k], want["frames"])
        np.testing.assert_array_equal(tf_batch["frames"][k].numpy(), want["frames"])
    singles = list(tk.load_tf_dataset(files, sampling=tk.InOrder()).as_numpy_iterator())
    for row in singles:
        want = _oracle(int(row["id"]))
        frames = row["frames"]
        np.testing.assert_array_equal(frames["values"][: int(frames["lengths"][0])],
                                      want["frames"])


def test_undecoded_batches_hold_the_same_lists(files):
    """decode=False gives the stored keys parsed: for these records (no media) the same
    values as decoding, in NumPy and tf.data alike."""
    decoded = next(iter(tk.load_numpy_dataset(files, batch_size=N, sampling=tk.InOrder())))
    raw = next(iter(tk.load_numpy_dataset(files, batch_size=N, sampling=tk.InOrder(),
                                          options=tk.DecodeOptions(decode=False))))
    tf_raw = next(iter(tk.load_tf_dataset(files, batch_size=N, sampling=tk.InOrder(),
                                          options=tk.DecodeOptions(decode=False))))
    for key in ("frames", "token"):
        np.testing.assert_array_equal(raw[key]["values"], decoded[key]["values"])
        np.testing.assert_array_equal(raw[key]["lengths"], decoded[key]["lengths"])
        np.testing.assert_array_equal(tf_raw[key]["values"].numpy(), decoded[key]["values"])
    np.testing.assert_array_equal(raw["id"], decoded["id"])
