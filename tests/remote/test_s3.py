"""Datasets on a real S3-compatible server (moto's server mode on 127.0.0.1, started by the
tests): conversion, CLI, loaders and P×K read back pixel-exact, the requests they make, kill
safety during the upload, and one clear line for bad URLs and credentials."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import digits_folder, untagged
from tfrecordkit import DatasetError, StorageError
from tfrecordkit.cli import main
from tfrecordkit.format import Storage
from tfrecordkit.sources import ImageFolder
from tfrecordkit.store import verify_paths

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    root = tmp_path_factory.mktemp("digits")
    pixels = digits_folder(root / "digits", limit_per_class=40)
    return root / "digits", pixels


def by_label(batches) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {}
    for batch in batches:
        for image, label in zip(batch["image"], batch["label"], strict=True):
            out.setdefault(int(label), []).append(bytes(image))
    return {k: sorted(v) for k, v in out.items()}


def test_convert_into_s3_then_cli_and_loaders_pixel_exact(s3_server, s3_url, digits, tmp_path,
                                                         capsys):
    folder, pixels = digits
    result = tk.convert(ImageFolder(folder), s3_url,
                        shards=tk.ShardOptions(layout="per_class", shard_size=4096), workers=1)
    local = tk.convert(ImageFolder(folder), tmp_path / "ds",
                       shards=tk.ShardOptions(layout="per_class", shard_size=4096), workers=1)
    assert result.path == s3_url and result.records == 400
    assert result.manifest.splits == local.manifest.splits  # same shards, sizes, checksums

    assert main(["stats", s3_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["splits"]["train"]["records"] == 400
    assert main(["verify", s3_url, "-q"]) == 0
    assert capsys.readouterr().out.count("OK") == len(result.manifest.split("train").shards)
    assert main(["inspect", s3_url, "--json", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 400
    assert main(["head", s3_url, "-n", "3", "--json"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3

    remote = by_label(tk.load_numpy_dataset(s3_url, batch_size=20, sampling=tk.InOrder()))
    want: dict[int, list[bytes]] = {}
    for path, image in pixels.items():
        want.setdefault(int(path.split("/")[-2]), []).append(bytes(image[:, :, None]))
    assert remote == {k: sorted(v) for k, v in want.items()}

    pk = {"sampling": tk.PK(4, 5), "seed": 2}
    for a, b in zip(tk.load_numpy_dataset(s3_url, **pk).batches(5),
                    tk.load_numpy_dataset(tmp_path / "ds", **pk).batches(5), strict=True):
        assert np.array_equal(a["image"], b["image"]) and np.array_equal(a["label"], b["label"])


def test_torch_loader_reads_s3(s3_server, s3_url, digits):
    torch = pytest.importorskip("torch")
    folder, _ = digits
    tk.convert(ImageFolder(folder), s3_url, workers=1)
    s3_server.log.settle()
    s3_server.log.clear()
    dataset = tk.load_torch_dataset(s3_url, batch_size=40, sampling=tk.InOrder())
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2)
    assert sorted(int(i) for batch in loader for i in batch["__id"]) == list(range(400))
    # Each index file read once (when the dataset was made), not again by every worker;
    # counted over the whole run, as the server may log a request late.
    s3_server.log.settle()
    indexes = [g for g in s3_server.log.gets() if g.endswith(".index")]
    shards = tk.load_manifest(s3_url).split("train").shards
    assert len(indexes) == len(set(indexes)) == len(shards), indexes


def test_torch_workers_forked_after_a_batch_read_in_the_main_process(s3_server, s3_url,
                                                                     digits):
    """A batch looked at in the main process first (its in-order reading starts read-ahead
    threads there), then DataLoader workers: forked, they inherit the opened reader without
    its threads and still read every record (they hung on the parent's read-ahead)."""
    torch = pytest.importorskip("torch")
    folder, _ = digits
    tk.convert(ImageFolder(folder), s3_url, workers=1, shards=tk.ShardOptions(num_shards=4))
    dataset = tk.load_torch_dataset(s3_url, batch_size=40, sampling=tk.InOrder())
    first = next(iter(torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=0)))
    assert [int(i) for i in first["__id"]] == list(range(40))
    dataset.set_epoch(0)  # from the start again (the dataset otherwise resumes after it)
    # timeout: a hung worker fails the test instead of the run
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2, timeout=120)
    assert sorted(int(i) for batch in loader for i in batch["__id"]) == list(range(400))


def test_sequential_reads_make_no_request_per_record(s3_server, s3_url):
    schema = tk.Schema({"x": tk.Tensor((64,), "float32"), "n": tk.Scalar("int64")})
    rows = ({"x": np.full(64, i, np.float32), "n": i} for i in range(20000))
    tk.write_dataset(rows, s3_url, schema, shards=tk.ShardOptions(num_shards=4))  # ~5.5 MB
    shards = [f"{s3_url}/{s.file}" for s in tk.load_manifest(s3_url).split("train").shards]
    s3_server.log.settle()
    s3_server.log.clear()
    count = sum(1 for _ in tk.read_records(shards))
    s3_server.log.settle()
    gets = s3_server.log.gets()
    assert count == 20000
    assert len(gets) <= 2 * len(shards), gets  # a few block reads per shard at most
    # The loader in order: each block once, the next one (the next shard's) requested on a
    # thread while this one is parsed; the same values as the records read in order. Opening
    # it peeks at the first shard's first record (the plan's check), once. Counted together
    # with the reading: the server logs a request after answering it, so on a loaded machine
    # the peek's line may come after settle() and cannot be told apart by time.
    s3_server.log.clear()
    loader = tk.load_numpy_dataset(s3_url, batch_size=500, sampling=tk.InOrder())
    values = [int(n) for batch in loader for n in batch["n"]]
    s3_server.log.settle()
    data = [g for g in s3_server.log.gets() if g.endswith(".tfrecord")]
    assert sorted(values) == list(range(20000))
    peeked = "/" + shards[0].removeprefix("s3://")
    assert Counter(data) == Counter(["/" + s.removeprefix("s3://") for s in shards]
                                    + [peeked]), data


def test_pk_batches_make_at_most_one_request_per_class(s3_server, s3_url, digits):
    folder, _ = digits
    tk.convert(ImageFolder(folder), s3_url, shards=tk.ShardOptions(layout="per_class"), workers=1)
    # opening reads the manifest and the indexes
    batches = tk.load_numpy_dataset(s3_url, sampling=tk.PK(4, 6), seed=5).batches(8)
    s3_server.log.settle()
    s3_server.log.clear()
    assert len(list(batches)) == 8  # steps ahead are requested while one is built
    s3_server.log.settle()
    data_gets = [g for g in s3_server.log.gets() if ".tfrecord" in g and ".index" not in g]
    assert 0 < len(data_gets) <= 4 * 8, data_gets  # P requests per batch at most


KILL_ROWS = 8000  # 8 MB in 12 shards: an upload long enough to be killed in
KILL_SCRIPT = f"""
import sys
import numpy as np
from tfrecordkit import Scalar, Schema, ShardOptions, Tensor, write_dataset
schema = Schema({{"x": Tensor((256,), "float32"), "n": Scalar("int64")}})
rows = ({{"x": np.full(256, i, np.float32), "n": i}} for i in range({KILL_ROWS}))
write_dataset(rows, sys.argv[1], schema, shards=ShardOptions(num_shards=12), overwrite=True)
print("done")
"""


@pytest.mark.slow
def test_sigkill_during_the_upload_leaves_no_manifest_and_a_rerun_completes(s3_server, s3_url,
                                                                           tmp_path):
    env = {**s3_server.env(), "PYTHONPATH": os.pathsep.join(sys.path),
           "TFRECORDKIT_STAGING": str(tmp_path / "staging")}
    storage = Storage.of(s3_url)
    manifest = storage.join(s3_url, "dataset.json")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", KILL_SCRIPT, s3_url], env=env, check=True,
                   capture_output=True, timeout=300)
    duration = time.perf_counter() - started
    rng = random.Random(7)
    killed_early = 0
    for attempt in range(4):
        proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, s3_url], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if attempt == 0:  # surely mid-run, whatever the load: once the old manifest is gone
            while storage.exists(manifest) and proc.poll() is None:
                time.sleep(0.01)
            time.sleep(0.3)
        else:
            time.sleep(rng.uniform(0.3, duration))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        if storage.exists(manifest):
            # Complete: every shard it lists is there, whole.
            assert sum(1 for _ in tk.open_split(s3_url)) == KILL_ROWS
        else:
            killed_early += 1
        subprocess.run([sys.executable, "-c", KILL_SCRIPT, s3_url], env=env, check=True,
                       capture_output=True, timeout=300)
        got = sorted(int(n) for b in tk.load_numpy_dataset(s3_url, batch_size=1000)
                     for n in b["n"])
        assert got == list(range(KILL_ROWS))
    assert killed_early >= 1


def test_bad_buckets_urls_and_credentials_are_one_line(s3_server, tmp_path):
    with pytest.raises(StorageError, match=r"bucket 'no-such-bucket-here' does not exist"):
        tk.load_manifest("s3://no-such-bucket-here/ds")
    with pytest.raises((StorageError, DatasetError)) as err:
        tk.write_dataset([{"n": 1}], "s3://no-such-bucket-here/ds",
                         tk.Schema({"n": tk.Scalar("int64")}))
    assert "no-such-bucket-here" in str(err.value) and "\n" not in str(err.value)
    # No credentials at all (and no instance metadata): a clear line from the CLI.
    env = {k: v for k, v in s3_server.env().items() if not k.startswith("AWS_ACCESS")
           and not k.startswith("AWS_SECRET")}
    env.update(AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
               AWS_CONFIG_FILE=str(tmp_path / "none"), PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-m", "tfrecordkit", "stats", "s3://some-bucket/ds"],
                         env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 1
    lines = [line for line in out.stderr.splitlines() if line.startswith("tfrecordkit")]
    assert len(lines) == 1 and "credentials" in lines[0], out.stderr


def test_a_missing_bucket_is_said_to_be_missing(s3_url):
    bucket = s3_url.split("/")[2]
    missing = s3_url.replace(bucket, bucket + "-absent")
    with pytest.raises(StorageError, match=r"bucket .*-absent.* does not exist"):
        tk.load_manifest(missing)
    with pytest.raises(StorageError, match="does not exist"):
        tk.load_numpy_dataset(missing, batch_size=4)
    # A bucket that exists but holds no dataset: no manifest, said as before.
    with pytest.raises(DatasetError, match=r"no dataset\.json"):
        tk.load_manifest(s3_url)


def test_s3_clients_keep_enough_connections_for_reads_ahead(s3_server, s3_url):
    """botocore keeps 10 connections; loaders read ahead with more requests in flight."""
    storage = Storage.of(s3_url)
    assert storage.options["config_kwargs"]["max_pool_connections"] == 64
    assert storage.fs.config_kwargs["max_pool_connections"] == 64
    given = Storage.of(s3_url, {"config_kwargs": {"max_pool_connections": 5,
                                                  "connect_timeout": 3}})
    assert given.fs.config_kwargs == {"max_pool_connections": 5, "connect_timeout": 3}


def test_an_append_to_s3_writes_what_a_local_append_writes(s3_server, s3_url, digits, tmp_path):
    folder, _ = digits
    old = tmp_path / "old"
    for path in folder.rglob("*.png"):
        if int(path.stem) % 2:
            (old / path.parent.name).mkdir(parents=True, exist_ok=True)
            (old / path.parent.name / path.name).write_bytes(path.read_bytes())
    options = {"split": {"train": 0.8, "val": 0.2}, "workers": 1,
               "shards": tk.ShardOptions(compression="gzip", shard_size=8192)}
    first = tk.convert(old, s3_url, **options)
    tk.convert(old, tmp_path / "local", **options)
    # Compressed shards read from the store to their ends (a range past the end refused).
    assert sum(len(b["label"]) for b in tk.load_numpy_dataset(
        s3_url, batch_size=50, split="val")) == first.manifest.num_records("val")
    remote = tk.append(s3_url, folder, workers=1)
    local = tk.append(tmp_path / "local", folder, workers=1)
    # The same shards, but for the writer id in an appended shard's name (one an attempt).
    assert untagged(remote.manifest.splits) == untagged(local.manifest.splits)
    assert remote.added == local.added
    storage = Storage.of(s3_url)
    pairs = [(r, lo) for name in local.manifest.splits for r, lo in zip(
        remote.manifest.splits[name].shards, local.manifest.splits[name].shards, strict=True)
             if "-a0001x" in lo.file]
    assert pairs and all(lo.restarts and lo.index and lo.digests for _, lo in pairs)
    for mine, theirs in pairs:
        assert storage.read_bytes(storage.join(s3_url, mine.file)) == (
            tmp_path / "local" / theirs.file).read_bytes()
    assert verify_paths([s3_url]).ok
    assert remote.records == 400 and sum(len(b["label"]) for b in tk.load_numpy_dataset(
        s3_url, batch_size=50, split="train")) == remote.manifest.num_records("train")


def test_two_appends_from_two_machines_lose_nothing(s3_server, s3_url, tmp_path, monkeypatch):
    """Two staging folders (two machines: no lock between them) racing on one bucket: the
    manifest's conditional PUT refuses the append whose base was replaced, which removes only
    its own shards; every record of the other is there."""
    from tests.convert.test_concurrent_append import check_outcome
    from tests.racing import Appender, image_folder
    from tfrecordkit.job import AppendTarget

    keys = {"base": image_folder(tmp_path / "base", "base", 20, seed=0),
            "a": image_folder(tmp_path / "a", "a", 40, seed=1),
            "b": image_folder(tmp_path / "b", "b", 40, seed=2)}
    tk.convert(tmp_path / "base", s3_url, split={"train": 0.8, "val": 0.2}, workers=1)
    other = Appender({**s3_server.env(), "TFRECORDKIT_STAGING": str(tmp_path / "machine-a")})
    load = AppendTarget.load.__func__
    a_result: dict[str, object] = {}

    def paused(cls, *args, **kwargs):  # "b" has read the manifest; "a" appends meanwhile
        target = load(cls, *args, **kwargs)
        other.start(s3_url, tmp_path / "a", 0.0)
        a_result.update(other.result())
        return target

    monkeypatch.setattr(AppendTarget, "load", classmethod(paused))
    monkeypatch.setenv("TFRECORDKIT_STAGING", str(tmp_path / "machine-b"))
    try:
        with pytest.raises(DatasetError, match="another writer replaced it") as err:
            tk.append(s3_url, tmp_path / "b", workers=1)
        monkeypatch.undo()
        check_outcome(s3_url, keys, {"a": a_result, "b": {"refused": str(err.value)}})
        storage = Storage.of(s3_url)
        listed = {s.file for split in tk.load_manifest(s3_url).splits.values()
                  for s in split.shards}
        assert {n for n in storage.listdir(s3_url) if n.endswith(".tfrecord")} == listed

        # Racing at many offsets from two processes: both land, or one is refused.
        second = Appender({**s3_server.env(), "TFRECORDKIT_STAGING": str(tmp_path / "m-b")})
        for i, delay in enumerate([0.0, 0.1, 0.3, 0.6]):
            url = f"{s3_url}-{i}"
            tk.convert(tmp_path / "base", url, split={"train": 0.8, "val": 0.2}, workers=1)
            other.start(url, tmp_path / "a", 0.0)
            second.start(url, tmp_path / "b", delay)
            check_outcome(url, keys, {"a": other.result(), "b": second.result()})
        second.close()
    finally:
        other.close()


def test_an_s3_dataset_exports_to_a_local_folder_with_its_storage_options(s3_server, s3_url,
                                                                          digits, tmp_path):
    """``storage_options`` (``--storage-option``) reach the reading side: the records come
    from the bucket, and a wrong endpoint given there is the store's error, not ignored."""
    folder, _ = digits
    tk.convert(folder, s3_url, workers=1)
    result = tk.export(s3_url, tmp_path / "wds", to="webdataset", progress=False,
                       storage_options={"client_kwargs": {"endpoint_url": s3_server.endpoint}})
    assert result.records == {"train": tk.load_manifest(s3_url).num_records("train")}
    assert main(["export", s3_url, "--to", "parquet", str(tmp_path / "pq"), "-q",
                 "--storage-option", f"client_kwargs.endpoint_url={s3_server.endpoint}"]) == 0
    with pytest.raises(StorageError):
        tk.export(s3_url, tmp_path / "bad", to="webdataset", progress=False,
                  storage_options={"client_kwargs": {"endpoint_url": "http://127.0.0.1:9"},
                                   "config_kwargs": {"retries": {"max_attempts": 1},
                                                     "connect_timeout": 1}})
    assert not (tmp_path / "bad").exists()
