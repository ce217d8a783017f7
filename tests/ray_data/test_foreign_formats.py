"""Ray Data reads the formats others write as the NumPy loader does: SequenceExample files
(feature lists as (steps, *step) per row), TFDS-prepared folders and gzip files."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tests.store.test_tfds_hostile import _folder
from tfrecordkit.format import encode_sequence_example

ray = pytest.importorskip("ray")

# One Ray cluster at a time: every test that starts one runs on the same xdist worker.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("ray")]


def _numpy_rows(path) -> dict[int, dict]:
    rows = {}
    for batch in tk.load_numpy_dataset(path, batch_size=64, sampling=tk.InOrder(),
                                       options=tk.DecodeOptions(padding="ragged")):
        for k, ident in enumerate(batch["__id"].tolist()):
            rows[ident] = {key: value[k] for key, value in batch.items()
                           if not key.startswith("__")}
    return rows


def _same_rows(path) -> None:
    from tfrecordkit.ray import read_dataset

    want = _numpy_rows(path)
    got = {row["__id"]: row for row in read_dataset(path).take_all()}
    assert got.keys() == want.keys()
    for ident, row in got.items():
        for key, value in want[ident].items():
            if isinstance(value, list | str | bytes):
                assert list(np.ravel(row[key])) == list(np.ravel(value)), key
            else:
                np.testing.assert_array_equal(np.asarray(row[key]), np.asarray(value),
                                              err_msg=key)


def test_sequence_examples(cluster, tmp_path):
    with tk.RecordWriter(tmp_path / "a.tfrecord.gz", "gzip") as writer:
        for i in range(12):
            writer.write(encode_sequence_example(
                {"id": [i], "name": [f"clip {i}".encode()]},
                {"frames": [[t, -t, i / 2] for t in range(i % 4)],
                 "token": [[10 * i + t] for t in range(i % 4)]}))
    _same_rows(str(tmp_path / "*.gz"))


def test_feature_lists_with_steps_of_any_length(cluster, tmp_path):
    """Rows hold each record's steps (an object array of the steps' arrays), which the
    grain source batches as every reader does."""
    from tfrecordkit.ray import read_dataset

    schema = tk.Schema({"id": tk.Scalar("int64"), "x": tk.FeatureList("int64", (None,)),
                        "w": tk.FeatureList("string", (None,))})
    rows = [{"id": i, "x": [list(range(t + i % 2)) for t in range(i % 3)],
             "w": [[b"a"] * t for t in range(i % 3)]} for i in range(9)]
    tk.write_dataset(rows, tmp_path / "ds", schema, progress=False)
    got = sorted(read_dataset(tmp_path / "ds").take_all(), key=lambda r: r["__id"])
    source = tk.load_grain_source(tmp_path / "ds")
    for row in got:
        want = rows[row["id"]]
        assert [list(step) for step in row["x"]] == want["x"]
        assert [list(step) for step in row["w"]] == want["w"]
    batch = source.collate([{k: v for k, v in r.items()} for r in got])
    mine = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=9, sampling=tk.InOrder())))
    for part in ("values", "lengths", "step_lengths"):
        np.testing.assert_array_equal(batch["x"][part], mine["x"][part])


def test_tfds_folders(cluster, tmp_path):
    _same_rows(_folder(tmp_path / "toy" / "1.0.0"))


def test_our_gzip_dataset_with_restart_points(cluster, tmp_path):
    schema = tk.Schema({"x": tk.Tensor((None,), "float32"), "t": tk.Text(),
                        "label": tk.ClassLabel(["a", "b"])})
    rows = [{"x": np.arange(i % 5, dtype=np.float32), "t": f"row {i} " * (i % 7),
             "label": i % 2} for i in range(3000)]
    tk.write_dataset(rows, tmp_path / "gz", schema, progress=False,
                     shards=tk.ShardOptions(num_shards=2, compression="gzip"))
    assert all(s.restarts for s in tk.load_manifest(tmp_path / "gz").split("train").shards)
    _same_rows(tmp_path / "gz")
