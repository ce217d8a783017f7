"""The format, dataset and loader round trips on fsspec's memory:// filesystem: the same bytes
and the same values as on a local disk."""

from __future__ import annotations

import json

import fsspec
import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import digits_folder
from tfrecordkit import (
    ClassLabel,
    DatasetError,
    RecordReader,
    RecordWriter,
    Scalar,
    Schema,
    ShardOptions,
    StorageError,
    Tensor,
    Text,
    write_dataset,
)
from tfrecordkit.cli import main
from tfrecordkit.format import Storage, build_index, load_index
from tfrecordkit.sources import ImageFolder

SCHEMA = Schema({"x": Scalar("float32"), "v": Tensor((None,), "int16"), "t": Text(),
                 "label": ClassLabel(["a", "b", "c", "d"])})


def rows(n: int = 600) -> list[dict]:
    return [{"x": i / 7, "v": np.arange(i % 5, dtype=np.int16), "t": f"row {i}",
             "label": i % 4} for i in range(n)]


def same(a, b) -> bool:
    """Equal values: arrays, lists of values, and dicts of them (padded values)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if (isinstance(a, np.ndarray) and a.dtype == object) or isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.array_equal(a, b))


def files_of(url: str) -> dict[str, bytes]:
    fs = fsspec.filesystem("memory")
    return {path.rsplit("/", 1)[-1]: fs.cat_file(path) for path in fs.ls(url, detail=False)}


def local_files(path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


def test_record_files_and_indexes_round_trip(memory_url, tmp_path):
    records = [bytes([i % 256]) * i for i in range(300)]
    for target in (f"{memory_url}/a.tfrecord", str(tmp_path / "a.tfrecord")):
        with RecordWriter(target) as writer:
            writer.write_all(records)
        assert build_index(target) == 300
    assert files_of(memory_url)["a.tfrecord"] == (tmp_path / "a.tfrecord").read_bytes()
    assert files_of(memory_url)["a.tfrecord.index"] == (tmp_path / "a.tfrecord.index").read_bytes()
    reader = RecordReader(f"{memory_url}/a.tfrecord")
    assert list(reader) == records
    assert reader.read(123) == records[123]
    assert np.array_equal(load_index(f"{memory_url}/a.tfrecord.index"),
                          load_index(tmp_path / "a.tfrecord.index"))
    gz = f"{memory_url}/b.tfrecord.gz"
    with RecordWriter(gz, "gzip") as writer:
        writer.write_all(records)
    assert list(tk.read_records(gz)) == records


@pytest.mark.parametrize("options", [
    {},  # shuffled, through the spill
    {"shards": tk.ShardOptions(layout="per_class", shard_size=3000)},
    {"shards": tk.ShardOptions(shuffle=False, shard_size=3000)},  # one pass
    {"split": {"train": 0.8, "val": 0.2}, "shards": tk.ShardOptions(compression="gzip")},
])
def test_datasets_are_byte_identical_to_local_ones(memory_url, tmp_path, options):
    url = f"{memory_url}/ds"
    remote = write_dataset(rows(), url, SCHEMA, **options)
    write_dataset(rows(), tmp_path / "ds", SCHEMA, **options)
    assert remote.path == url and remote.records == 600
    got, want = files_of(url), local_files(tmp_path / "ds")
    assert got.keys() == want.keys()
    for name in got:
        if name == "dataset.json":
            a, b = json.loads(got[name]), json.loads(want[name])
            assert a["splits"] == b["splits"] and a["schema"] == b["schema"]
        else:
            assert got[name] == want[name], name


@pytest.mark.parametrize(("shuffle", "compression"), [
    (tk.Shuffled(), None), (tk.Shuffled(exact=True), None), (tk.InOrder(), None),
    (tk.Shuffled(exact=True), "gzip"),  # read by inflating ranged reads from restart points
])
def test_loaders_read_the_same_values_as_locally(memory_url, tmp_path, monkeypatch, shuffle,
                                                 compression):
    from tfrecordkit.store import _fetch

    monkeypatch.setattr(_fetch, "_CACHE_BYTES", 5000)  # evictions happen within an epoch
    url = f"{memory_url}/ds"
    shards = ShardOptions(layout="per_class", shard_size=3000, compression=compression)
    write_dataset(rows(), url, SCHEMA, shards=shards)
    write_dataset(rows(), tmp_path / "ds", SCHEMA, shards=shards)
    kwargs = {"batch_size": 50, "seed": 3, "sampling": shuffle}
    for a, b in zip(tk.load_numpy_dataset(url, **kwargs),
                    tk.load_numpy_dataset(tmp_path / "ds", **kwargs), strict=True):
        assert a.keys() == b.keys()
        for key in a:
            assert same(a[key], b[key]), key
    pk = {"sampling": tk.PK(2, 3), "seed": 1}
    for a, b in zip(tk.load_numpy_dataset(url, **pk).batches(6),
                    tk.load_numpy_dataset(tmp_path / "ds", **pk).batches(6), strict=True):
        assert np.array_equal(a["label"], b["label"]) and np.array_equal(a["x"], b["x"])
    split, local = tk.open_split(url), tk.open_split(tmp_path / "ds")
    assert len(split) == 600 and split[7] == local[7]
    rng = np.random.default_rng(0)
    for _ in range(20):
        ids = rng.integers(0, 600, size=rng.integers(1, 80))
        assert split.get_many(ids) == local.get_many(ids)
    assert tk.load_manifest(url).num_records("train") == 600


def test_torch_workers_read_a_remote_dataset(memory_url):
    torch = pytest.importorskip("torch")
    url = f"{memory_url}/ds"
    write_dataset(rows(), url, SCHEMA)
    dataset = tk.load_torch_dataset(url, batch_size=40, sampling=tk.InOrder())
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2)
    seen = sorted(int(i) for batch in loader for i in batch["__id"])
    assert seen == list(range(600))


def test_image_folder_to_memory_and_back_pixel_exact(memory_url, tmp_path):
    pixels = digits_folder(tmp_path / "digits", limit_per_class=10)
    url = f"{memory_url}/digits"
    tk.convert(ImageFolder(tmp_path / "digits"), url, workers=1)
    got = {}
    for batch in tk.load_numpy_dataset(url, batch_size=10, sampling=tk.InOrder()):
        for image, label in zip(batch["image"], batch["label"], strict=True):
            got.setdefault(int(label), []).append(image[:, :, 0])
    want = {}
    for path, image in pixels.items():
        want.setdefault(int(path.split("/")[-2]), []).append(image)
    for label, images in want.items():
        assert sorted(map(bytes, got[label])) == sorted(map(bytes, images))


@pytest.mark.integration
def test_tf_data_reads_a_memory_dataset(memory_url):
    pytest.importorskip("tensorflow")
    url = f"{memory_url}/ds"
    write_dataset(rows(), url, SCHEMA, shards=ShardOptions(shard_size=3000))
    ds = tk.load_tf_dataset(url, batch_size=100, sampling=tk.InOrder())
    xs = sorted(float(x) for batch in ds for x in batch["x"].numpy())
    assert xs == sorted(float(np.float32(i / 7)) for i in range(600))


def test_cli_on_a_url(memory_url, capsys):
    url = f"{memory_url}/ds"
    write_dataset(rows(), url, SCHEMA, shards=ShardOptions(shard_size=3000))
    assert main(["stats", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["splits"]["train"]["records"] == 600
    assert main(["verify", url, "-q"]) == 0
    assert "OK" in capsys.readouterr().out
    assert main(["inspect", url, "--json", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 600
    assert main(["head", url, "-n", "2", "--json"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    # A corrupted shard is found on the URL too.
    fs = fsspec.filesystem("memory")
    shard = sorted(p for p in fs.ls(url, detail=False) if p.endswith(".tfrecord"))[0]
    data = bytearray(fs.cat_file(shard))
    data[40] ^= 0xFF
    fs.pipe_file(shard, bytes(data))
    assert main(["verify", url, "-q"]) == 1
    assert "crc" in capsys.readouterr().out


def test_overwrite_and_existing_datasets(memory_url):
    url = f"{memory_url}/ds"
    write_dataset(rows(100), url, SCHEMA)
    with pytest.raises(DatasetError, match="already holds a dataset"):
        write_dataset(rows(100), url, SCHEMA)
    write_dataset(rows(50), url, SCHEMA, overwrite=True, shards=ShardOptions(num_shards=3))
    names = files_of(url)
    assert sum(n.endswith(".tfrecord") for n in names) == 3
    assert tk.load_manifest(url).num_records("train") == 50


def test_bad_urls_are_one_clear_line(memory_url):
    with pytest.raises(DatasetError, match=r"no dataset\.json"):
        tk.load_manifest(f"{memory_url}/nothing")
    with pytest.raises(StorageError, match="nosuchscheme://x"):
        Storage.of("nosuchscheme://x")
    with pytest.raises(DatasetError, match="no TFRecord files match"):
        tk.load_numpy_dataset(f"{memory_url}/*.tfrecord", batch_size=1)
    with pytest.raises(StorageError, match="not found"):
        list(RecordReader(f"{memory_url}/missing.tfrecord"))


def test_a_truncated_foreign_file_on_a_url_is_one_clear_error(memory_url):
    """Files someone else wrote, read from a URL: a cut-short one fails naming the file."""
    records = [tk.encode_example({"n": i, "s": b"x" * (i % 50)}) for i in range(200)]
    whole = f"{memory_url}/data/part-0.tfrecord"
    with RecordWriter(whole) as writer:
        writer.write_all(records)
    fs = fsspec.filesystem("memory")
    data = fs.cat_file(whole)
    fs.pipe_file(f"{memory_url}/data/part-1.tfrecord", data[: len(data) - 30])
    assert sum(1 for _ in tk.read_records(whole)) == 200
    with pytest.raises(tk.CorruptRecordError, match=r"part-1\.tfrecord"):
        list(tk.read_records(f"{memory_url}/data/part-1.tfrecord"))
    with pytest.raises((tk.CorruptRecordError, DatasetError), match=r"part-1\.tfrecord"):
        for _ in tk.load_numpy_dataset(f"{memory_url}/data/*.tfrecord", batch_size=10):
            pass


def test_metric_batches_read_ahead_from_a_store_as_locally(memory_url, tmp_path):
    """P×K and triplet loaders request the next steps' records ahead from object stores;
    batches, states (across an epoch's end) and errors are the same as reading locally."""
    from tfrecordkit.readers import _metric

    url = f"{memory_url}/pc"
    shards = ShardOptions(layout="per_class", shard_size=3000)
    write_dataset(rows(), url, SCHEMA, shards=shards)
    write_dataset(rows(), tmp_path / "pc", SCHEMA, shards=shards)
    pk = {"sampling": tk.PK(2, 3), "seed": 4}
    remote = tk.load_numpy_dataset(url, **pk)
    ahead = remote.read_ahead()
    assert ahead is not None and ahead.depth == _metric.READ_AHEAD_STEPS
    ahead.close()
    local = tk.load_numpy_dataset(tmp_path / "pc", **pk)
    assert local.read_ahead() is None  # local files: read when needed
    calls = []
    fetch = remote.fetcher.fetch
    remote.fetcher.fetch = lambda positions: calls.append(len(positions)) or fetch(positions)
    for step, (a, b) in enumerate(zip(remote.batches(9), local.batches(9), strict=True)):
        assert same(a, b), step  # epochs are 2 steps
        assert remote.state_dict() == local.state_dict(), step
    assert calls == [6] * 9  # each step read once (ahead), none past the last
    state = tk.load_numpy_dataset(url, **pk)
    for _ in state.batches(3):
        pass
    resumed = tk.load_numpy_dataset(url, state=state.state_dict(), **pk).batches(4)
    again = list(tk.load_numpy_dataset(tmp_path / "pc", **pk).batches(7))[3:]
    for a, b in zip(resumed, again, strict=True):
        assert same(a, b)
    triplets = {"batch_size": 64, "seed": 2, "sampling": tk.Triplets()}
    remote_triplets = tk.load_numpy_dataset(url, **triplets)
    local_triplets = tk.load_numpy_dataset(tmp_path / "pc", **triplets)
    for a, b in zip(remote_triplets.batches(2 * len(remote_triplets)),  # two epochs
                    local_triplets.batches(2 * len(local_triplets)), strict=True):
        assert same(a, b)
    # Records damaged in the store (every record of one class's files): the step reading
    # one fails, naming the file; steps before it (read ahead with it) still come, unchanged.
    fs = fsspec.filesystem("memory")
    damaged = sorted(p for p in fs.ls(url, detail=False)
                     if p.endswith(".tfrecord") and "-c00003-" in p)
    assert damaged
    for path in damaged:
        data = bytearray(fs.cat_file(path))
        name = f"{url}/{path.rsplit('/', 1)[-1]}"
        for offset, _ in load_index(name + ".index", storage=Storage.of(name)).tolist():
            data[offset + 13] ^= 0xFF  # inside the record's payload
        fs.pipe_file(path, bytes(data))
    batches = tk.load_numpy_dataset(url, **pk).batches(40)
    good = iter(tk.load_numpy_dataset(tmp_path / "pc", **pk).batches(40))

    def read_on() -> None:
        for batch in batches:
            assert 3 not in batch["label"].tolist()
            assert same(batch, next(good))

    with pytest.raises(tk.CorruptRecordError, match=r"c00003-.*\.tfrecord"):
        read_on()
    batches.close()
