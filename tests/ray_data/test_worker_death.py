"""Ray workers SIGKILLed in the middle of writing shards: Ray runs the tasks again, the dataset
is complete and byte-identical to the local engine's, and no record is duplicated. Its own
module: the cluster's workers load a test filesystem at start-up."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import tfrecordkit as tk
from tests.ray_data import _dying_fs

ray = pytest.importorskip("ray")

# One Ray cluster at a time: every test that starts one runs on the same xdist worker.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("ray")]

SCHEMA = tk.Schema({"x": tk.Scalar("float32"), "v": tk.Tensor((None,), "int16"),
                    "t": tk.Text(), "label": tk.ClassLabel(["a", "b", "c"])})
REPO = Path(__file__).resolve().parents[2]


def rows(n: int = 3000) -> list[dict]:
    return [{"x": i / 3, "v": np.arange(i % 5, dtype=np.int16), "t": f"row {i}",
             "label": i % 3} for i in range(n)]


@pytest.fixture(scope="module")
def _dying_cluster(tmp_path_factory):
    """One cluster for the module (a start costs ~10 s): its workers load the dying filesystem."""
    if ray.is_initialized():
        ray.shutdown()
    markers = tmp_path_factory.mktemp("deaths")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={
        "env_vars": {_dying_fs.MARKERS: str(markers),
                     "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
        "worker_process_setup_hook": "tests.ray_data._dying_fs.register"})
    ray.data.DataContext.get_current().enable_progress_bars = False
    _dying_fs.register()
    yield markers
    ray.shutdown()


@pytest.fixture
def dying_cluster(_dying_cluster):
    """The module's cluster, with no deaths recorded: each test's victims die once again."""
    for marker in _dying_cluster.iterdir():
        marker.unlink()
    return _dying_cluster


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["mixed", "per_class"])
def test_killed_shard_writers_are_retried_without_duplicates(dying_cluster, tmp_path, layout):
    out = tmp_path / "ray"
    out.mkdir()
    shards = (tk.ShardOptions(layout=layout, num_shards=6) if layout == "mixed"
              else tk.ShardOptions(layout=layout, shard_size=3000))
    done = tk.write_dataset(rows(), f"dying://{out}", SCHEMA, engine="ray", shards=shards)
    deaths = sorted(p.name for p in dying_cluster.iterdir())
    assert len(deaths) >= 2, "the test filesystem killed no worker"
    local = tk.write_dataset(rows(), tmp_path / "local", SCHEMA, shards=shards)
    shards = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if ".tfrecord" in p.name}
    assert shards == {p.name: p.read_bytes() for p in sorted((tmp_path / "local").iterdir())
                      if ".tfrecord" in p.name}
    assert set(deaths) <= set(shards)
    assert done.manifest.splits == local.manifest.splits
    seen = [str(t) for batch in tk.load_numpy_dataset(out, batch_size=500, sampling=tk.InOrder())
            for t in batch["t"]]
    assert len(seen) == 3000 and len(set(seen)) == 3000  # complete, nothing twice
