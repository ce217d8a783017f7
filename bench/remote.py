"""Reading a dataset from an S3-compatible server: tfrecordkit vs simply downloading the same
objects with s3fs, in one run, against moto's server on 127.0.0.1 (started here).

Cases:
- sequential read of every record (CRCs checked) with ``read_records`` and the NumPy loader
  (``decode=False``), against ``s3fs.cat_file`` of each shard (the floor: bytes only);
- P×K batches (per-class layout): requests per batch, from the server's log;
- P×K batches behind a proxy that answers every request 20 ms late (as real object stores
  answer), with the next steps' records requested ahead (the default) and without (one
  step's requests at a time, as before);
- the same reads from a local copy, for comparison.

Run: python bench/remote.py [--records 40000] [--runs 3] [--latency-ms 20]
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from _results import add_json_option, scalar_medians, write_results

import tfrecordkit as tk


class _Log:
    """The server's request lines (from its stderr, read on a thread)."""

    def __init__(self, server: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._follow, args=(server,), daemon=True)
        self._thread.start()

    def _follow(self, server: subprocess.Popen[str]) -> None:
        assert server.stderr is not None
        for line in server.stderr:
            self.lines.append(re.sub(r"\x1b\[[0-9;]*m", "", line))

    def object_gets(self) -> int:
        time.sleep(0.5)  # let the last lines arrive
        found = [re.search(r'"GET (\S+) HTTP', line) for line in self.lines]
        return sum(1 for m in found if m and "?" not in m[1])


def _proxy(port: int, upstream: int, delay: float) -> None:
    """Serve on ``port``: every request forwarded to ``upstream`` after ``delay`` seconds
    (one connection to it per proxy thread), as a store far away answers."""
    local = threading.local()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def forward(self) -> None:
            time.sleep(delay)
            size = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(size) if size else None
            if getattr(local, "conn", None) is None:
                local.conn = http.client.HTTPConnection("127.0.0.1", upstream)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
            try:
                local.conn.request(self.command, self.path, body=body, headers=headers)
                reply = local.conn.getresponse()
            except (ConnectionError, http.client.HTTPException):
                local.conn = http.client.HTTPConnection("127.0.0.1", upstream)
                local.conn.request(self.command, self.path, body=body, headers=headers)
                reply = local.conn.getresponse()
            data = reply.read()
            self.send_response(reply.status)
            for key, value in reply.getheaders():
                if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(key, value)
            length = reply.getheader("Content-Length") if self.command == "HEAD" else None
            self.send_header("Content-Length", length or str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = forward  # noqa: N815 - http.server names

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _pk_rate(url: object, p: int, k: int, steps: int, storage_options: dict | None = None
             ) -> float:
    """P×K batches per second after the first (opening excluded), no decode."""
    loader = tk.load_numpy_dataset(url, sampling=tk.PK(p, k),
                                   options=tk.DecodeOptions(decode=False),
                                   read=tk.ReadOptions(storage_options=storage_options))
    batches = loader.batches(steps + 1)
    next(batches)
    start = time.perf_counter()
    for _ in range(steps):
        next(batches)
    return steps / (time.perf_counter() - start)


def _median(function, runs: int, setup=None) -> float:
    """Median seconds of ``function()`` (``function(setup())`` when given: the setup untimed)."""
    times = []
    for _ in range(runs):
        given = setup() if setup is not None else None
        start = time.perf_counter()
        function() if setup is None else function(given)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=40_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--proxy", nargs=3, type=float, help=argparse.SUPPRESS)
    add_json_option(parser)
    args = parser.parse_args()
    if args.proxy:  # the latency proxy's own process: port, upstream port, delay
        _proxy(int(args.proxy[0]), int(args.proxy[1]), args.proxy[2])
        return
    # The server runs in its own process, as a real store would (in this process it would
    # compete with the reader for the GIL); its request log comes back on its stderr.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                               "-p", str(port)], stderr=subprocess.PIPE, text=True)
    log = _Log(server)
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")
    import s3fs

    fs = s3fs.S3FileSystem()
    fs.mkdir("bench")
    n = args.records
    rng = np.random.default_rng(0)
    schema = tk.Schema({"x": tk.Tensor((256,), "float32"),
                        "label": tk.ClassLabel([str(i) for i in range(50)])})
    rows = [{"x": rng.random(256, dtype=np.float32), "label": i % 50} for i in range(n)]
    url = "s3://bench/ds"
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "ds"
        tk.write_dataset(rows, url, schema, shards=tk.ShardOptions(num_shards=8))
        tk.write_dataset(rows, local, schema, shards=tk.ShardOptions(num_shards=8))
        manifest = tk.load_manifest(url)
        names = [s.file for s in manifest.split("train").shards]
        total = manifest.split("train").bytes
        remote_files = [f"{url}/{name}" for name in names]
        local_files = [str(local / name) for name in names]

        def download() -> None:
            for file in remote_files:
                fs.cat_file(file)

        def loader(path: object) -> None:
            for _ in tk.load_numpy_dataset(path, batch_size=256, sampling=tk.InOrder(),
                                           options=tk.DecodeOptions(decode=False)):
                pass

        def opened(path: object):
            return lambda: tk.load_numpy_dataset(path, batch_size=256, sampling=tk.InOrder(),
                                                 options=tk.DecodeOptions(decode=False))

        def epoch(loader: object) -> None:
            for _ in loader:
                pass

        cases = {
            "s3fs download (bytes only)": download,
            "read_records, s3": lambda: sum(1 for _ in tk.read_records(remote_files)),
            "NumPy loader, s3 (no decode)": lambda: loader(url),
            "  the same, opened untimed": (epoch, opened(url)),
            "read_records, local": lambda: sum(1 for _ in tk.read_records(local_files)),
            "NumPy loader, local (no decode)": lambda: loader(local),
        }
        results = {name: _median(fn[0], args.runs, fn[1]) if isinstance(fn, tuple) else
                   _median(fn, args.runs) for name, fn in cases.items()}
        base = results["s3fs download (bytes only)"]
        print(f"{n:,} records, {total / 1e6:.0f} MB in {len(names)} shards; medians of "
              f"{args.runs} runs, moto S3 on 127.0.0.1, {os.cpu_count()} cores\n")
        print(f"{'case':<34}{'seconds':>9}{'MB/s':>9}{'rec/s':>12}{'vs download':>13}")
        for name, seconds in results.items():
            print(f"{name:<34}{seconds:>9.2f}{total / seconds / 1e6:>9.0f}"
                  f"{n / seconds:>12,.0f}{base / seconds:>12.2f}x")
        log.lines.clear()
        sum(1 for _ in tk.read_records(remote_files))
        print(f"\nsequential read: {log.object_gets()} object GETs for {n:,} records "
              f"in {len(names)} shards")
        log.lines.clear()
        loader(url)
        print(f"NumPy loader (no shuffle): {log.object_gets()} object GETs")

        pk_url = "s3://bench/pc"
        tk.write_dataset(rows, pk_url, schema, shards=tk.ShardOptions(layout="per_class"))
        p, k, steps = 8, 4, 20
        batches = tk.load_numpy_dataset(pk_url, sampling=tk.PK(p, k),
                                        options=tk.DecodeOptions(decode=False)).batches(steps + 1)
        next(batches)
        log.lines.clear()
        start = time.perf_counter()
        for _ in range(steps):
            next(batches)
        remote_pk = time.perf_counter() - start
        gets = log.object_gets()
        tk.write_dataset(rows, local / "pc", schema, shards=tk.ShardOptions(layout="per_class"))
        local_batches = tk.load_numpy_dataset(
            local / "pc", sampling=tk.PK(p, k),
            options=tk.DecodeOptions(decode=False)).batches(steps + 1)
        next(local_batches)
        start = time.perf_counter()
        for _ in range(steps):
            next(local_batches)
        local_pk = time.perf_counter() - start
        print(f"P×K ({p}×{k}, per-class shards): {gets / steps:.1f} object GETs per batch "
              f"(P = {p}); {steps / remote_pk:.0f} batches/s from s3, "
              f"{steps / local_pk:.0f} locally")

        # Behind a proxy answering every request late, as a store far away does; the same
        # proxy with no delay is the ceiling here (client, proxy and server share 2 cores).
        proxies = {}
        for delay in (args.latency_ms, 0.0):
            proxy_port = _free_port()
            proxies[delay] = (proxy_port, subprocess.Popen(
                [sys.executable, __file__, "--proxy", str(proxy_port), str(port),
                 str(delay / 1000)]))
        time.sleep(1.0)
        import tfrecordkit.readers._metric as metric
        import tfrecordkit.store._fetch as fetch

        depth, steps, kept = metric.READ_AHEAD_STEPS, 150, fetch._CACHE_BYTES
        small = total // 5  # the dataset 5x what a loader keeps: most reads go to the store
        cases = {  # name: (proxy delay, steps requested ahead, bytes kept)
            "one step at a time": (args.latency_ms, 0, small),
            f"{depth} steps requested ahead": (args.latency_ms, depth, small),
            "ceiling: no delay, one at a time": (0.0, 0, small),
            f"ceiling: no delay, {depth} ahead": (0.0, depth, small),
            "dataset kept whole, one at a time": (args.latency_ms, 0, kept),
            f"dataset kept whole, {depth} ahead": (args.latency_ms, depth, kept),
        }
        rates: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):  # alternating
            for name, (delay, ahead, cache) in cases.items():
                metric.READ_AHEAD_STEPS, fetch._CACHE_BYTES = ahead, cache
                far = {"endpoint_url": f"http://127.0.0.1:{proxies[delay][0]}"}
                rates[name].append(_pk_rate(pk_url, p, k, steps, far))
        metric.READ_AHEAD_STEPS, fetch._CACHE_BYTES = depth, kept
        for _, proxy in proxies.values():
            proxy.terminate()
            proxy.wait()
        medians = {name: statistics.median(values) for name, values in rates.items()}
        print(f"\nP×K ({p}×{k}), {steps} steps, through a proxy adding {args.latency_ms:.0f} ms "
              f"to every request; a loader keeps {small >> 20} MiB of the {total >> 20} MiB "
              f"read (the last two: {kept >> 20} MiB); medians of {args.runs} alternating "
              "runs:")
        for name, values in rates.items():
            print(f"  {name:<36}{medians[name]:>8.1f} batches/s  "
                  f"(runs: {', '.join(f'{v:.1f}' for v in values)})")
        names = list(medians)
        print(f"  ratio, ahead / one at a time: {medians[names[1]] / medians[names[0]]:.2f}x; "
              f"ahead / the no-delay ceiling: {medians[names[1]] / medians[names[3]]:.2f}x; "
              f"kept whole: {medians[names[5]] / medians[names[4]]:.2f}x")
        if args.json:
            pk_medians, pk_spread = scalar_medians(rates)
            write_results(
                args.json, "remote", records=n, runs=args.runs, latency_ms=args.latency_ms,
                medians={"seconds": results, "pk batches/s": pk_medians},
                spread={"pk batches/s": pk_spread}, all_runs={"pk batches/s": rates},
                ratios={"pk ahead / one at a time": medians[names[1]] / medians[names[0]],
                        "pk ahead / no-delay ceiling": medians[names[1]] / medians[names[3]]})
    server.terminate()
    server.wait()


if __name__ == "__main__":
    main()
