"""Stores for the remote-storage tests: fsspec's memory:// filesystem, and a real
S3-compatible server (moto's server mode) that the tests start on 127.0.0.1 and stop."""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Iterator

import pytest

pytest.importorskip("fsspec")


@pytest.fixture
def memory_url() -> Iterator[str]:
    """A fresh memory:// folder, removed afterwards."""
    import fsspec

    url = f"memory://t-{uuid.uuid4().hex[:10]}"
    yield url
    fs = fsspec.filesystem("memory")
    if fs.exists(url):
        fs.rm(url, recursive=True)


class RequestLog(logging.Handler):
    """The S3 server's request log: one ``(method, path, status)`` per request."""

    _LINE = re.compile(r'"(\w+) (\S+) HTTP/[\d.]+"\s+(\d+)')

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        found = self._LINE.search(re.sub(r"\x1b\[[0-9;]*m", "", record.getMessage()))
        if found:
            self.requests.append((found[1], found[2], int(found[3])))

    def clear(self) -> None:
        self.requests.clear()

    def settle(self, quiet: float = 0.3) -> None:
        """Wait until no request has been logged for ``quiet`` seconds: the server logs a
        request after answering it, so a client may go on before its line arrives."""
        import time

        seen = -1
        while seen != len(self.requests):
            seen = len(self.requests)
            time.sleep(quiet)

    def gets(self, prefix: str = "") -> list[str]:
        """Paths of GET requests for objects (not listings) under ``prefix``."""
        return [path for method, path, _ in self.requests
                if method == "GET" and "?" not in path and path.startswith(prefix)]


class S3Server:
    def __init__(self, endpoint: str, log: RequestLog) -> None:
        self.endpoint = endpoint
        self.log = log

    def env(self) -> dict[str, str]:
        """Environment for a subprocess that talks to this server."""
        return {**os.environ, **_S3_ENV, "AWS_ENDPOINT_URL": self.endpoint}

    def new_bucket(self) -> str:
        import s3fs

        name = f"b-{uuid.uuid4().hex[:12]}"
        s3fs.S3FileSystem().mkdir(name)
        return name


_S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1 (a free port), with AWS_* variables pointing at it."""
    pytest.importorskip("s3fs")
    server_module = pytest.importorskip("moto.server")
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = {k: os.environ.get(k) for k in [*_S3_ENV, "AWS_ENDPOINT_URL"]}
    os.environ.update({**_S3_ENV, "AWS_ENDPOINT_URL": endpoint})
    log = RequestLog()
    werkzeug = logging.getLogger("werkzeug")
    werkzeug.addHandler(log)
    werkzeug.setLevel(logging.INFO)
    werkzeug.propagate = False
    try:
        yield S3Server(endpoint, log)
    finally:
        werkzeug.removeHandler(log)
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        import fsspec

        fsspec.AbstractFileSystem.clear_instance_cache()


@pytest.fixture
def s3_url(s3_server: S3Server) -> str:
    """``s3://<a new bucket>/ds``."""
    return f"s3://{s3_server.new_bucket()}/ds"
