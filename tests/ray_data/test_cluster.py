"""A two-node Ray cluster started with the commands docs/ray.md gives, exactly as written
there (placeholders filled: 127.0.0.1, free ports, a fresh token), reads a dataset through
``tfrecordkit.ray.read_dataset`` and converts records to the same bytes as the local engine.
Each node runs in the foreground (``--block``) in its own process group, so the test stops
its own nodes and nothing else (no ``ray stop``)."""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import tfrecordkit as tk

ray = pytest.importorskip("ray")

# One Ray cluster at a time: every test that starts one runs on the same xdist worker.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("ray")]

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = tk.Schema({"x": tk.Scalar("float32"), "t": tk.Text()})


def rows(n: int = 3000) -> list[dict]:
    return [{"x": i / 3, "t": f"row {i}"} for i in range(n)]


CLUSTER_SCRIPT = """
import ray, tfrecordkit as tk
from tfrecordkit.ray import read_dataset
import time
ray.init(address="{address}", log_to_driver=False)
deadline = time.monotonic() + 180  # the second node joins while this driver starts
while len(nodes := [n for n in ray.nodes() if n["Alive"]]) < 2 and time.monotonic() < deadline:
    time.sleep(0.5)
ds = read_dataset("{path}", override_num_blocks=6)
ids = sorted(r["__id"] for r in ds.take_all())
schema = tk.Schema({{"x": tk.Scalar("float32"), "t": tk.Text()}})
rows = [{{"x": i / 3, "t": f"row {{i}}"}} for i in range(3000)]
tk.write_dataset(rows, "{out}", schema, engine="ray")
print(len(nodes), ds.count(), ids == list(range(3000)))
"""


def documented_commands() -> tuple[dict[str, str], list[str]]:
    """The environment and the ``ray start`` lines of docs/ray.md's cluster recipe."""
    text = (ROOT / "docs" / "ray.md").read_text()
    block = text.split("<!-- cluster:start -->")[1].split("<!-- cluster:end -->")[0]
    env: dict[str, str] = {}
    starts = []
    for raw in block.splitlines():
        line = raw.split(" #")[0].strip()
        if line.startswith("export "):
            for pair in shlex.split(line)[1:]:
                key, _, value = pair.partition("=")
                env[key] = value
        elif line.startswith("ray start"):
            starts.append(line)
    return env, starts


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _fill(text: str, values: dict[str, str]) -> str:
    return re.sub(r"<([a-z-]+)>", lambda m: values[m.group(1)], text)


def _wait_for_head(port: int, process: subprocess.Popen[bytes]) -> None:
    """Until the head node takes connections on its port (a socket, not a Ray driver per
    try: each would cost seconds of CPU)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the head node exited ({process.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"the head node took no connection on port {port}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a node started in its own process group, and everything it started."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def test_the_recipe_is_the_one_the_docs_give():
    env, starts = documented_commands()
    assert env == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "<token>"}
    assert len(starts) == 2 and "--head" in starts[0] and "--address=" in starts[1]
    assert all(line.endswith("--block") for line in starts)


@pytest.mark.slow
def test_a_two_node_cluster_started_as_documented(tmp_path):
    if ray.is_initialized():
        ray.shutdown()
    tk.write_dataset(rows(), tmp_path / "ds", SCHEMA, shards=tk.ShardOptions(num_shards=6))
    documented_env, starts = documented_commands()
    temp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # Ray's sockets need a short path
    values = {"token": secrets.token_hex(32), "head-ip": "127.0.0.1", "node-ip": "127.0.0.1",
              "port": str(_free_port()), "cpus": "1", "temp-dir": temp}
    env = {**os.environ, **{k: _fill(v, values) for k, v in documented_env.items()}}
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    nodes: list[subprocess.Popen[bytes]] = []
    address = f"127.0.0.1:{values['port']}"
    try:
        for count, line in enumerate(starts, start=1):
            argv = shlex.split(_fill(line, values))
            nodes.append(subprocess.Popen([ray_bin, *argv[1:]], env=env,
                                          start_new_session=True,
                                          stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
            if count == 1:  # the second node joins the head; the driver waits for it
                _wait_for_head(int(values["port"]), nodes[0])
        script = textwrap.dedent(CLUSTER_SCRIPT).format(address=address, path=tmp_path / "ds",
                                                        out=tmp_path / "on_ray")
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=600, check=True)
        assert out.stdout.split()[-3:] == ["2", "3000", "True"], out.stdout + out.stderr
        # The same records through the local engine: the same bytes.
        tk.write_dataset(rows(), tmp_path / "local", SCHEMA)
        shards = sorted(p.name for p in (tmp_path / "local").iterdir()
                        if ".tfrecord" in p.name)
        assert shards and shards == sorted(p.name for p in (tmp_path / "on_ray").iterdir()
                                           if ".tfrecord" in p.name)
        for name in shards:
            assert ((tmp_path / "on_ray" / name).read_bytes()
                    == (tmp_path / "local" / name).read_bytes())
        # A process without the token is refused by the cluster.
        stranger = {k: v for k, v in env.items() if k != "RAY_AUTH_TOKEN"}
        refused = subprocess.run(
            [sys.executable, "-c", f"import ray; ray.init(address={address!r})"],
            env={**stranger, "RAY_AUTH_TOKEN": secrets.token_hex(32)},
            capture_output=True, text=True, timeout=120, check=False)
        assert refused.returncode != 0
    finally:
        for node in reversed(nodes):
            _stop(node)
        shutil.rmtree(temp, ignore_errors=True)
