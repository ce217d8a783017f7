"""Export to the formats others read, each read back by its own library with every value equal:
WebDataset shards by ``webdataset``, Parquet by ``pyarrow`` and ``datasets.load_dataset``, a
saved dataset by ``datasets.load_from_disk``; image bytes unchanged, class names, boxes, text
and arrays kept; bad requests refused in one line; memory flat on a large export."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_image, photos
from tfrecordkit.errors import DatasetError, OptionError

CLASSES = ["cat", "dog", "owl"]
BOXES = ["red", "green"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Real JPEG and PNG bytes (one feature each), a class label, text, a fixed tensor, a
    variable one, boxes, a float scalar; two splits."""
    images = list(photos().values())
    rng = np.random.default_rng(3)
    rows = []
    for i in range(30):
        pixels = images[i % len(images)]
        rgb = pixels if pixels.ndim == 3 else np.stack([pixels] * 3, axis=-1)
        n = int(rng.integers(0, 3))
        rows.append({
            "image": encode_image(rgb, "JPEG"),
            "mask": encode_image(rgb[:8, :8, 0], "PNG"),
            "label": CLASSES[i % 3],
            "caption": f"photo {i} — ünïcode",
            "vec": rng.normal(size=3).astype(np.float32),
            "var": np.arange(i % 4, dtype=np.int64),
            "objects": {"boxes": _corners(rng, n),
                        "labels": rng.integers(0, 2, n)},
            "score": float(i) / 7,
        })
    schema = tk.Schema({"image": tk.Image("jpeg"), "mask": tk.Image("png"),
                        "label": tk.ClassLabel(CLASSES), "caption": tk.Text(),
                        "vec": tk.Tensor((3,), "float32"), "var": tk.Tensor((None,), "int64"),
                        "objects": tk.Boxes(BOXES), "score": tk.Scalar("float32")})
    path = tmp_path_factory.mktemp("export") / "ds"
    tk.write_dataset(rows, path, schema, split={"train": 0.8, "test": 0.2},
                     shards=tk.ShardOptions(num_shards=2), progress=False)
    return path


def _corners(rng, n: int) -> np.ndarray:
    """``n`` boxes as [xmin, ymin, xmax, ymax], each min below its max."""
    xs, ys = np.sort(rng.uniform(0, 1, (2, n, 2)), axis=2)
    return np.stack([xs[:, 0], ys[:, 0], xs[:, 1], ys[:, 1]], axis=1).astype(np.float32)


def _stored(path, split):
    """Each record of a split in stored order: the image bytes as stored, the other values
    decoded."""
    records = tk.open_split(path, split)
    schema = records.schema
    out = []
    for i in range(len(records)):
        keys = tk.decode_example(records[i])
        values = schema.decode(records[i], features=["label", "caption", "vec", "var",
                                                      "objects", "score"])
        out.append({"image": bytes(keys["image"][0]), "mask": bytes(keys["mask"][0]),
                    **values})
    return out


def _splits(path):
    manifest = tk.load_manifest(path)
    return {s: _stored(path, s) for s in manifest.splits}


# webdataset leaves its shards' file objects to the garbage collector: collected in the test.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_webdataset_shards_read_back_by_webdataset(dataset, tmp_path):
    webdataset = pytest.importorskip("webdataset")
    result = tk.export(dataset, tmp_path / "wds", to="webdataset", rows_per_file=10,
                       progress=False)
    for split, want in _splits(dataset).items():
        shards = sorted(str(f) for f in (tmp_path / "wds").glob(f"{split}-*.tar"))
        assert len(shards) == -(-len(want) // 10) and result.records[split] == len(want)
        samples = list(webdataset.WebDataset(shards, shardshuffle=False, empty_check=False))
        gc.collect()
        assert len(samples) == len(want)
        for sample, row in zip(samples, want, strict=True):
            assert sample["jpg"] == row["image"] and sample["mask.png"] == row["mask"]
            assert int(sample["cls"]) == row["label"]
            meta = json.loads(sample["json"])
            assert meta["label_name"] == CLASSES[row["label"]]
            assert meta["caption"] == row["caption"]
            assert np.array_equal(np.float32(meta["vec"]), row["vec"])
            assert meta["var"] == row["var"].tolist()
            assert np.array_equal(np.float32(meta["objects"]["boxes"]).reshape(-1, 4),
                                  row["objects"]["boxes"])
            assert meta["objects"]["label_names"] == [BOXES[k] for k in
                                                      row["objects"]["labels"]]
            assert np.float32(meta["score"]) == row["score"]


def _check_hf_rows(rows, want, features):
    assert features["label"].names == CLASSES
    assert features["objects"]["labels"].feature.names == BOXES
    assert len(rows) == len(want)
    for got, row in zip(rows, want, strict=True):
        assert got["image"]["bytes"] == row["image"] and got["mask"]["bytes"] == row["mask"]
        assert got["label"] == row["label"] and got["caption"] == row["caption"]
        assert np.array_equal(np.float32(got["vec"]), row["vec"])
        assert got["var"] == row["var"].tolist()
        assert np.array_equal(np.float32(got["objects"]["boxes"]).reshape(-1, 4),
                              row["objects"]["boxes"])
        assert got["objects"]["labels"] == row["objects"]["labels"].tolist()
        assert np.float32(got["score"]) == row["score"]


def test_parquet_reads_back_in_pyarrow_and_datasets(dataset, tmp_path):
    datasets = pytest.importorskip("datasets")
    pq = pytest.importorskip("pyarrow.parquet")
    tk.export(dataset, tmp_path / "pq", to="parquet", rows_per_file=16, progress=False)
    want = _splits(dataset)
    table = pq.read_table(sorted((tmp_path / "pq").glob("train-*.parquet")))
    assert table.num_rows == len(want["train"])
    assert table.column("image").to_pylist()[0]["bytes"] == want["train"][0]["image"]
    metadata = json.loads(table.schema.metadata[b"huggingface"])
    assert metadata["info"]["features"]["label"]["names"] == CLASSES
    loaded = datasets.load_dataset("parquet", data_dir=str(tmp_path / "pq"))
    assert set(loaded) == {"train", "test"}
    for split, rows in want.items():
        part = loaded[split].cast_column("image", datasets.Image(decode=False)).cast_column(
            "mask", datasets.Image(decode=False))
        assert isinstance(loaded[split].features["image"], datasets.Image)
        _check_hf_rows(list(part), rows, part.features)


def test_a_saved_hugging_face_dataset_reads_back(dataset, tmp_path):
    datasets = pytest.importorskip("datasets")
    tk.export(dataset, tmp_path / "hf", to="hf", progress=False)
    loaded = datasets.load_from_disk(str(tmp_path / "hf"))
    assert set(loaded) == {"train", "test"}
    for split, rows in _splits(dataset).items():
        part = loaded[split].cast_column("image", datasets.Image(decode=False)).cast_column(
            "mask", datasets.Image(decode=False))
        _check_hf_rows(list(part), rows, part.features)
    pixels = np.asarray(loaded["train"][0]["image"])  # decoded by datasets, as stored
    assert pixels.ndim == 3


def test_one_split_or_expression_and_bad_requests(dataset, tmp_path):
    result = tk.export(dataset, tmp_path / "one", to="webdataset", split="train[:5]+test",
                       progress=False)
    assert result.records == {"train[:5]+test": 5 + len(_stored(dataset, "test"))}
    with pytest.raises(OptionError, match="holds an earlier export"):
        tk.export(dataset, tmp_path / "one", to="webdataset", progress=False)
    tk.export(dataset, tmp_path / "one", to="webdataset", overwrite=True, progress=False)
    # Replaced: the expression's shards are gone, every split's are there.
    assert {p.name.rsplit("-", 1)[0] for p in (tmp_path / "one").iterdir()
            if not p.name.startswith(".")} == {"train", "test"}
    with pytest.raises(OptionError, match="export to= must be one of webdataset, parquet, hf"):
        tk.export(dataset, tmp_path / "x", to="tfds", progress=False)  # type: ignore[arg-type]
    with pytest.raises(DatasetError, match="no split 'val'"):
        tk.export(dataset, tmp_path / "y", to="parquet", split="val", progress=False)


@pytest.mark.integration  # the CLI in a subprocess
def test_the_cli_exports_and_prints_json(dataset, tmp_path):
    done = subprocess.run([sys.executable, "-m", "tfrecordkit", "export", str(dataset),
                           "--to", "webdataset", str(tmp_path / "w"), "--json", "-q"],
                          capture_output=True, text=True, check=True)
    report = json.loads(done.stdout)
    manifest = tk.load_manifest(dataset)
    assert report["records"] == {s: manifest.num_records(s) for s in manifest.splits}
    assert len(report["files"]) == 2


@pytest.mark.slow
def test_memory_stays_flat_on_a_large_export(tmp_path):
    """A 600 MB dataset exports to Parquet with the process growing by far less than the
    data (records stream through in chunks)."""
    pytest.importorskip("datasets")
    noise = encode_image(np.random.default_rng(0).integers(0, 255, (260, 260, 3),
                                                           dtype=np.uint8), "PNG")
    assert len(noise) > 200_000  # noise does not compress
    schema = tk.Schema({"blob": tk.Image("png"), "n": tk.Scalar("int64")})
    rows = ({"blob": noise, "n": i} for i in range(3000))  # 3000 x 200 KB = 600 MB
    tk.write_dataset(rows, tmp_path / "big", schema, progress=False)
    script = (
        "import resource, sys, tfrecordkit as tk\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "tk.export(sys.argv[1], sys.argv[2], to='parquet', rows_per_file=500, progress=False)\n"
        "print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "big"),
                           str(tmp_path / "pq")], capture_output=True, text=True, check=True)
    before, after = map(int, done.stdout.split())
    assert (after - before) * 1024 < 300 << 20, (before, after)  # KiB; < half the data


def test_provenance_travels_with_each_record(tmp_path):
    """A converted folder's records carry their input path (``__source``): exported beside
    their values, in WebDataset's JSON and as a column."""
    pytest.importorskip("datasets")
    from tests.datasets import digits_folder

    digits_folder(tmp_path / "src", limit_per_class=2)
    tk.convert(tmp_path / "src", tmp_path / "ds", progress=False)
    records = tk.open_split(tmp_path / "ds")
    sources = [tk.decode_example(records[i])["__source"][0].decode()
               for i in range(len(records))]
    tk.export(tmp_path / "ds", tmp_path / "pq", to="parquet", progress=False)
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(sorted((tmp_path / "pq").glob("train-*.parquet")))
    assert table.column("__source").to_pylist() == sources
    tk.export(tmp_path / "ds", tmp_path / "w", to="webdataset", progress=False)
    import tarfile

    with tarfile.open(next((tmp_path / "w").glob("train-*.tar"))) as archive:
        metas = [json.loads(archive.extractfile(m).read()) for m in archive.getmembers()
                 if m.name.endswith(".json")]
    assert [m["__source"] for m in metas] == sources


@pytest.mark.integration  # the adopted files are written by TensorFlow
def test_a_label_taken_from_each_files_class_is_exported(tmp_path):
    """Files adopted with a class pattern hold no label: the export gives each record its
    file's class (as every reader does), in Parquet and WebDataset alike."""
    pytest.importorskip("datasets")
    from tests.datasets import unlabelled_files

    written = unlabelled_files(tmp_path / "files")
    tk.adopt(tmp_path / "files", class_pattern=r"class_(\d+)-")
    tk.export(tmp_path / "files", tmp_path / "pq", to="parquet", progress=False)
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(sorted((tmp_path / "pq").glob("train-*.parquet")))
    labels = tk.load_manifest(tmp_path / "files").class_names
    got = {c: labels[k] for c, k in zip(table.column("caption").to_pylist(),
                                        table.column("label").to_pylist(), strict=True)}
    assert got == {c: str(k) for c, (k, _) in written.items()}
    tk.export(tmp_path / "files", tmp_path / "w", to="webdataset", progress=False)
    import tarfile

    with tarfile.open(next((tmp_path / "w").glob("train-*.tar"))) as archive:
        metas = [json.loads(archive.extractfile(m).read()) for m in archive.getmembers()
                 if m.name.endswith(".json")]
    assert {m["caption"]: m["label_name"] for m in metas} == {c: str(k) for c, (k, _) in
                                                              written.items()}
