"""A Ray cluster of two nodes started with ``ray start`` on 127.0.0.1 reads a dataset through
``tfrecordkit.ray.read_dataset``. Its own module: ``ray stop`` at the end would kill any
in-process cluster this test process were still a driver of."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

import tfrecordkit as tk

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.integration

SCHEMA = tk.Schema({"x": tk.Scalar("float32"), "t": tk.Text()})


def rows(n: int = 3000) -> list[dict]:
    return [{"x": i / 3, "t": f"row {i}"} for i in range(n)]


CLUSTER_SCRIPT = """
import ray, tfrecordkit as tk
from tfrecordkit.ray import read_dataset
ray.init(address="{address}", log_to_driver=False)
nodes = [n for n in ray.nodes() if n["Alive"]]
ds = read_dataset("{path}", override_num_blocks=6)
ids = sorted(r["__id"] for r in ds.take_all())
print(len(nodes), ds.count(), ids == list(range(3000)))
"""


@pytest.mark.slow
def test_a_two_node_cluster_started_with_ray_start(tmp_path):
    """A head started by `ray start --head` on 127.0.0.1 and a second node joined to it."""
    if ray.is_initialized():
        ray.shutdown()
    tk.write_dataset(rows(), tmp_path / "ds", SCHEMA, shards=tk.ShardOptions(num_shards=6))
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    port = "6391"
    # Token auth would need the token copied to the joining node; loopback-only here.
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    temp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # Ray's sockets need a short path
    start = [ray_bin, "start", "--num-cpus=1", "--disable-usage-stats"]
    try:
        subprocess.run([*start, "--head", "--include-dashboard=false",
                        "--node-ip-address=127.0.0.1", f"--port={port}", f"--temp-dir={temp}"],
                       env=env, check=True, capture_output=True, timeout=180)
        subprocess.run([*start, f"--address=127.0.0.1:{port}", "--node-ip-address=127.0.0.1"],
                       env=env, check=True, capture_output=True, timeout=180)
        script = textwrap.dedent(CLUSTER_SCRIPT).format(address=f"127.0.0.1:{port}",
                                                        path=tmp_path / "ds")
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=300, check=True)
        assert out.stdout.split()[-3:] == ["2", "3000", "True"], out.stdout + out.stderr
    finally:
        subprocess.run([ray_bin, "stop", "--force"], env=env, capture_output=True,
                       timeout=120, check=False)
        shutil.rmtree(temp, ignore_errors=True)
