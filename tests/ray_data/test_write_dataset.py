"""tfrecordkit.ray.write_dataset on a real local Ray cluster: a Ray Dataset's rows give the same
shards and manifest as the local writer given the same rows; read back, they equal the source;
bad rows and missing columns are named; a failing job leaves no dataset.json."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit import ShardOptions, SourceError

ray = pytest.importorskip("ray")
from tfrecordkit.ray import read_dataset, write_dataset  # noqa: E402

# One Ray cluster at a time: every test that starts one runs on the same xdist worker.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("ray")]

SCHEMA = tk.Schema({"x": tk.Scalar("float32"), "v": tk.Tensor((None,), "int16"),
                    "t": tk.Text(), "label": tk.ClassLabel(["a", "b", "c"])})


def rows(n: int = 2000) -> list[dict]:
    return [{"x": i / 3, "v": np.arange(i % 4, dtype=np.int16), "t": f"row {i}",
             "label": ["a", "b", "c"][i % 3], "path": f"in/{i:05d}"} for i in range(n)]


@pytest.fixture
def ordered(cluster):
    """Ray keeps the rows' order (so positions identify rows); restored afterwards."""
    saved = cluster.execution_options.preserve_order
    cluster.execution_options.preserve_order = True
    yield
    cluster.execution_options.preserve_order = saved


def files(path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if ".tfrecord" in p.name}


def local_rows(n: int = 2000) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "path"} for r in rows(n)]


@pytest.mark.parametrize("options", [
    {"shards": ShardOptions(shard_size=5000)},
    {"shards": ShardOptions(layout="per_class", shard_size=5000),
     "split": {"train": 0.8, "val": 0.2}},
    {"shards": ShardOptions(shuffle=False, num_shards=3)},
])
def test_the_same_rows_give_the_same_bytes_as_the_local_writer(ordered, tmp_path, options):
    ds = ray.data.from_items(rows(), override_num_blocks=7)
    on_ray = write_dataset(ds, tmp_path / "ray", SCHEMA, **options)
    local = tk.write_dataset(local_rows(), tmp_path / "local", SCHEMA, **options)
    assert files(tmp_path / "ray") == files(tmp_path / "local")
    assert len(files(tmp_path / "local")) >= 6
    a, b = local.manifest, on_ray.manifest
    assert (a.splits, a.schema, a.layout, a.skipped_count) == (
        b.splits, b.schema, b.layout, b.skipped_count)


def test_a_key_column_makes_the_shards_independent_of_row_order(cluster, tmp_path):
    """Keyed rows shuffle by key: the rows in another order (and blocking) give the same bytes."""
    forward = ray.data.from_items(rows(), override_num_blocks=4)
    backward = ray.data.from_items(rows()[::-1], override_num_blocks=9)
    write_dataset(forward, tmp_path / "a", SCHEMA, key="path", shards=ShardOptions(num_shards=3))
    write_dataset(backward, tmp_path / "b", SCHEMA, key="path", shards=ShardOptions(num_shards=3))
    assert files(tmp_path / "a") == files(tmp_path / "b")
    back = read_dataset(tmp_path / "a").take_all()
    assert sorted(r["t"] for r in back) == sorted(r["t"] for r in rows())
    source = {r["t"]: r for r in rows()}
    for row in back[:200]:
        want = source[row["t"]]
        assert row["x"] == np.float32(want["x"]) and np.array_equal(row["v"], want["v"])
        assert row["label"] == "abc".index(want["label"])


def test_bad_rows_are_named_and_skipped_or_fatal(ordered, tmp_path):
    data = rows(300)
    data[41]["x"] = "forty-one"
    with pytest.raises(SourceError, match="row 41"):
        write_dataset(ray.data.from_items(data), tmp_path / "ds", SCHEMA)
    assert not (tmp_path / "ds" / "dataset.json").exists()
    done = write_dataset(ray.data.from_items(data), tmp_path / "ds", SCHEMA, key="path",
                         on_error="skip")
    assert done.manifest.skipped_count == 1 and done.records == 299
    assert done.manifest.skipped[0]["input"] == "row path=in/00041"


def test_a_missing_column_is_named(cluster, tmp_path):
    ds = ray.data.from_items([{"x": 1.0, "t": "a", "label": 0}])
    with pytest.raises(ValueError, match=r"no column\(s\) \['v'\]"):
        write_dataset(ds, tmp_path / "ds", SCHEMA)
    assert not (tmp_path / "ds" / "dataset.json").exists()
