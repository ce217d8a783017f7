"""Hugging Face datasets as a source, tested with the real ``datasets`` package: datasets built
locally (Dataset.from_dict, Parquet files on disk, IterableDataset, DatasetDict), converted by
both engines, every value read back equal to HF's, images' stored bytes equal HF's bytes."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_audio, encode_image, photos, tone
from tfrecordkit import SourceError

datasets = pytest.importorskip("datasets")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

N = 24


def _bmp(pixels: np.ndarray) -> bytes:
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.fromarray(pixels).save(buffer, "BMP")
    return buffer.getvalue()


def _features():
    hf = datasets
    return hf.Features({
        "id": hf.Value("int64"),
        "image": hf.Image(),
        "label": hf.ClassLabel(names=["cat", "dog", "bird"]),
        "score": hf.Value("float32"),
        "exact": hf.Value("float64"),
        "text": hf.Value("string"),
        "blob": hf.Value("binary"),
        "tokens": hf.List(hf.Value("int32")),
        "tags": hf.List(hf.ClassLabel(names=["x", "y"])),
        "words": hf.List(hf.Value("string")),
        "fixed": hf.List(hf.Value("float32"), length=3),
        "grid": hf.Array2D(shape=(2, 3), dtype="int16"),
        "meta": {"source": hf.Value("string"), "size": hf.Value("int64")},
        "boxes": hf.List({"x": hf.Value("float32"), "cls": hf.ClassLabel(names=["a", "b"])}),
        "flag": hf.Value("bool"),
    })


@pytest.fixture(scope="module")
def rows():
    pictures = list(photos().values())

    def image(i):
        pixels = pictures[i % len(pictures)][: 20 + i, : 30 + i]
        if i % 3 == 0:
            return encode_image(pixels, "JPEG")
        return encode_image(pixels, "PNG")

    return {
        "id": list(range(N)),
        "image": [{"bytes": image(i), "path": None} for i in range(N)],
        "label": [i % 3 for i in range(N)],
        "score": [i / 3 for i in range(N)],
        "exact": [i / 7 + 1e-12 for i in range(N)],
        "text": [f"row {i} é" for i in range(N)],
        "blob": [bytes([i, 0, 255]) for i in range(N)],
        "tokens": [list(range(i % 5)) for i in range(N)],
        "tags": [[j % 2 for j in range(i % 4)] for i in range(N)],
        "words": [[f"w{j}" for j in range(i % 3)] for i in range(N)],
        "fixed": [[i, i + 0.5, -i] for i in range(N)],
        "grid": [np.arange(6, dtype=np.int16).reshape(2, 3) * i for i in range(N)],
        "meta": [{"source": f"s{i}", "size": i * 100} for i in range(N)],
        "boxes": [[{"x": j / 2, "cls": j % 2} for j in range(i % 3)] for i in range(N)],
        "flag": [i % 2 == 0 for i in range(N)],
    }


@pytest.fixture(scope="module")
def dataset(rows):
    return datasets.Dataset.from_dict(rows, features=_features())


def _records(path) -> list[dict]:
    """Every record decoded, in stored order, and its stored image bytes."""
    split = tk.open_split(path)
    schema = split.schema
    out = []
    for record in split:
        values = schema.decode(record)
        values["image bytes"] = bytes(tk.format.decode_example(record)["image"][0])
        out.append(values)
    return out


def _check(records: list[dict], rows: dict) -> None:
    assert sorted(r["id"] for r in records) == list(range(N))
    for r in records:
        i = r["id"]
        assert r["image bytes"] == rows["image"][i]["bytes"]  # HF's bytes, kept
        assert r["label"] == rows["label"][i] and r["flag"] == rows["flag"][i]
        assert r["score"] == np.float32(rows["score"][i])
        assert r["exact"] == rows["exact"][i]  # float64, exactly
        assert r["text"] == rows["text"][i] and r["blob"] == rows["blob"][i]
        assert r["tokens"].tolist() == rows["tokens"][i]
        assert r["tags"].tolist() == rows["tags"][i]
        assert [w.decode() if isinstance(w, bytes) else w for w in r["words"]] == \
            rows["words"][i]
        np.testing.assert_array_equal(r["fixed"], np.float32(rows["fixed"][i]))
        np.testing.assert_array_equal(r["grid"], rows["grid"][i])
        assert r["grid"].dtype == np.int16
        assert r["meta/source"] == rows["meta"][i]["source"]
        assert r["meta/size"] == rows["meta"][i]["size"]
        boxes = rows["boxes"][i]
        np.testing.assert_array_equal(r["boxes/x"], np.float32([b["x"] for b in boxes]))
        assert r["boxes/cls"].tolist() == [b["cls"] for b in boxes]


def test_features_map_to_the_schema_and_values_round_trip(dataset, rows, tmp_path):
    source = tk.open_source(dataset)
    schema = source.schema()
    assert (schema["image"] == tk.Image() and schema["label"].names == ("cat", "dog", "bird")) \
        or list(schema["label"].names) == ["cat", "dog", "bird"]
    assert schema["exact"] == tk.Tensor((), "float64")
    assert schema["fixed"] == tk.Tensor((3,), "float32")
    assert schema["grid"] == tk.Tensor((2, 3), "int16")
    assert isinstance(schema["tokens"], tk.Sequence) and "meta/size" in schema
    result = tk.convert(source, tmp_path / "ds", shards=tk.ShardOptions(shuffle=False),
                        progress=False)
    assert result.manifest.label_feature == "label"
    records = _records(tmp_path / "ds")
    assert [r["id"] for r in records] == list(range(N))  # input order kept
    _check(records, rows)
    # Each record names its row, and every reader gives the same decoded pixels.
    loader = tk.load_numpy_dataset(tmp_path / "ds", batch_size=N, sampling=tk.InOrder(),
                                   options=tk.DecodeOptions(provenance=True,
                                                            padding="ragged"))
    batch = next(iter(loader))
    assert batch["__source"][5] == "[5]"
    from PIL import Image as PILImage

    for i in (0, 1, 7):
        expected = np.asarray(PILImage.open(io.BytesIO(rows["image"][i]["bytes"])))
        if expected.ndim == 2:  # grey beside colour in one batch: grey repeated
            expected = np.repeat(expected[:, :, None], 3, axis=2)
        if rows["image"][i]["bytes"][:2] != b"\xff\xd8":  # PNG: lossless, exact
            np.testing.assert_array_equal(batch["image"][i], expected)


def test_parquet_files_and_iterable_datasets_give_the_same_records(dataset, rows, tmp_path):
    tk.convert(tk.open_source(dataset), tmp_path / "memory",
               shards=tk.ShardOptions(shuffle=False), progress=False)
    dataset.to_parquet(str(tmp_path / "data.parquet"))
    on_disk = datasets.Dataset.from_parquet(str(tmp_path / "data.parquet"))
    assert on_disk.features == dataset.features
    tk.convert(tk.open_source(on_disk), tmp_path / "parquet",
               shards=tk.ShardOptions(shuffle=False), progress=False)
    streamed = dataset.to_iterable_dataset(num_shards=3)
    tk.convert(tk.open_source(streamed), tmp_path / "stream",
               shards=tk.ShardOptions(shuffle=False), progress=False)

    def shards(path):
        return [r for s in tk.load_manifest(path).split("train").shards
                for r in tk.read_records(path / s.file)]

    assert shards(tmp_path / "parquet") == shards(tmp_path / "memory")
    assert shards(tmp_path / "stream") == shards(tmp_path / "memory")
    _check(_records(tmp_path / "stream"), rows)


def test_a_dataset_dict_gives_its_splits(dataset, tmp_path):
    both = datasets.DatasetDict({"train": dataset, "test": dataset.select(range(5))})
    result = tk.convert(tk.open_source(both), tmp_path / "ds", progress=False)
    assert {k: v.records for k, v in result.manifest.splits.items()} == {"train": N,
                                                                          "test": 5}


def test_other_image_formats_are_stored_as_png_with_the_same_pixels(tmp_path):
    pixels = photos()["coffee"][:30, :40]
    ds = datasets.Dataset.from_dict({"image": [{"bytes": _bmp(pixels), "path": None}]},
                                    features=datasets.Features({"image": datasets.Image()}))
    tk.convert(tk.open_source(ds), tmp_path / "ds", progress=False)
    (record,) = tk.open_split(tmp_path / "ds")
    assert bytes(tk.format.decode_example(record)["image"][0])[:4] == b"\x89PNG"
    np.testing.assert_array_equal(tk.load_manifest(tmp_path / "ds").schema.decode(record)
                                  ["image"], pixels)


def test_audio_keeps_its_bytes(tmp_path):
    waves = [encode_audio(tone(0.05, 16000, 300 + 50 * i), 16000, "WAV") for i in range(3)]
    # Stored as Audio's Arrow struct, then typed (HF's Audio encoder needs torchcodec).
    ds = datasets.Dataset.from_dict(
        {"speech": [{"bytes": w, "path": None} for w in waves]},
        features=datasets.Features({"speech": {"bytes": datasets.Value("binary"),
                                               "path": datasets.Value("string")}}),
    ).cast_column("speech", datasets.Audio())  # decoding on: read as bytes all the same
    source = tk.open_source(ds)
    assert source.schema()["speech"] == tk.Audio(encoding="wav")
    tk.convert(source, tmp_path / "ds", shards=tk.ShardOptions(shuffle=False), progress=False)
    stored = [bytes(tk.format.decode_example(r)["speech"][0])
              for r in tk.open_split(tmp_path / "ds")]
    assert stored == waves


def test_features_without_a_counterpart_are_named(tmp_path):
    ds = datasets.Dataset.from_dict(
        {"when": [1, 2]}, features=datasets.Features({"when": datasets.Value("timestamp[s]")}))
    with pytest.raises(SourceError, match=r"'when'.*timestamp"):
        tk.open_source(ds).schema()
    ragged = datasets.Dataset.from_dict(
        {"m": [[[1], [2, 3]]]},
        features=datasets.Features({"m": datasets.List(datasets.List(datasets.Value("int32")))}))
    with pytest.raises(SourceError, match=r"'m'.*vary"):
        tk.open_source(ragged).schema()


@pytest.mark.xdist_group("ray")  # one Ray cluster at a time
@pytest.mark.integration
def test_the_ray_engine_writes_the_same_bytes(dataset, tmp_path):
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        source = tk.open_source(dataset)
        tk.convert(source, tmp_path / "local", progress=False)
        tk.convert(source, tmp_path / "ray", engine="ray", progress=False)
    finally:
        ray.shutdown()

    def files(path):
        return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if ".tfrecord" in p.name}

    assert files(tmp_path / "ray") == files(tmp_path / "local")


def test_dataset_dict_records_carry_split_and_row(tmp_path):
    data = datasets.Dataset.from_dict({"x": list(range(6))})
    both = datasets.DatasetDict({"train": data, "test": data.select(range(2))})
    tk.convert(tk.open_source(both), tmp_path / "ds", progress=False)
    sources = set()
    for split in ("train", "test"):
        loader = tk.load_numpy_dataset(tmp_path / "ds", split, batch_size=8, sampling=tk.InOrder(),
                                       options=tk.DecodeOptions(provenance=True))
        sources |= {s for b in loader for s in b["__source"]}
    assert sources == {f"train[{i}]" for i in range(6)} | {"test[0]", "test[1]"}


def test_a_flattened_name_beside_a_real_column_is_refused(tmp_path):
    features = datasets.Features({"a": {"b": datasets.Value("int64")},
                                  "a/b": datasets.Value("int64")})
    data = datasets.Dataset.from_dict({"a": [{"b": 1}], "a/b": [2]}, features=features)
    with pytest.raises(SourceError, match=r"'a/b'.*already"):
        tk.convert(tk.open_source(data), tmp_path / "ds", progress=False)
    assert not (tmp_path / "ds" / "dataset.json").exists()


def test_splits_with_other_columns_are_refused_naming_them(tmp_path):
    both = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"x": [1, 2]}),
        "test": datasets.Dataset.from_dict({"x": [3], "extra": [4]})})
    with pytest.raises(SourceError, match=r"'test'.*\['extra'\]"):
        tk.convert(tk.open_source(both), tmp_path / "ds", progress=False)
