"""tfrecordkit.ray.read_dataset on a real local Ray cluster: rows equal the source, exact counts
from the manifest, stable order, pixels equal the other readers', CRC errors named, and no
TensorFlow in the workers."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import digits_folder
from tfrecordkit.sources import ImageFolder

ray = pytest.importorskip("ray")
from tfrecordkit.ray import read_dataset  # noqa: E402

# One Ray cluster at a time: every test that starts one runs on the same xdist worker.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("ray")]

SCHEMA = tk.Schema({"x": tk.Scalar("float32"), "v": tk.Tensor((None,), "int16"),
                    "t": tk.Text(), "label": tk.ClassLabel(["a", "b", "c"])})


def rows(n: int = 3000) -> list[dict]:
    return [{"x": i / 3, "v": np.arange(i % 4, dtype=np.int16), "t": f"row {i}",
             "label": i % 3} for i in range(n)]


def test_rows_equal_the_source_and_counts_are_exact(cluster, tmp_path):
    tk.write_dataset(rows(), tmp_path / "ds", SCHEMA, shards=tk.ShardOptions(num_shards=3),
                     split={"train": 0.8, "val": 0.2})
    manifest = tk.load_manifest(tmp_path / "ds")
    seen = []
    for split in ("train", "val"):
        ds = read_dataset(tmp_path / "ds", split, override_num_blocks=5)
        assert ds.count() == manifest.num_records(split)
        got = ds.take_all()
        assert sorted(r["__id"] for r in got) == list(range(manifest.num_records(split)))
        seen += got
    by_text = {r["t"]: r for r in seen}
    assert len(by_text) == 3000
    for i, row in enumerate(rows()):
        got = by_text[row["t"]]
        assert got["x"] == np.float32(row["x"]) and got["label"] == row["label"]
        assert np.array_equal(got["v"], row["v"]), i


def test_a_split_expression_reads_its_parts(cluster, tmp_path):
    """``read_dataset`` takes a split expression as every reader does: its rows are the
    parts' records, ``__id`` numbering them in the expression's order."""
    tk.write_dataset(rows(300), tmp_path / "ds", SCHEMA, shards=tk.ShardOptions(num_shards=3),
                     split={"train": 0.8, "val": 0.2})
    expression = "val[-7:]+train[10%:12%]"
    records = tk.open_split(tmp_path / "ds", expression)
    want = [SCHEMA.decode(records[i])["t"] for i in range(len(records))]
    got = sorted(read_dataset(tmp_path / "ds", expression).take_all(), key=lambda r: r["__id"])
    assert [r["t"] for r in got] == want and len(want) == 7 + 5


def test_two_reads_give_the_same_order_and_match_open_split(cluster, tmp_path, monkeypatch):
    tk.write_dataset(rows(), tmp_path / "ds", SCHEMA, shards=tk.ShardOptions(num_shards=4))
    # Restored after the test: the cluster's context is shared by the package's tests.
    monkeypatch.setattr(cluster.execution_options, "preserve_order", True)
    first = [r["__id"] for r in read_dataset(tmp_path / "ds").iter_rows()]
    second = [r["__id"] for r in read_dataset(tmp_path / "ds").iter_rows()]
    assert first == second == list(range(3000))
    raw = read_dataset(tmp_path / "ds", options=tk.DecodeOptions(decode=False)).take(50)
    records = tk.open_split(tmp_path / "ds")
    for row, record in zip(raw, records.get_many(range(50)), strict=True):
        stored = tk.decode_example(record)  # parsed, not decoded: the stored keys
        assert row.keys() - {"__id"} == stored.keys()


def test_undecoded_rows_hold_each_records_stored_values(cluster, tmp_path, monkeypatch):
    """decode=False: each row's stored keys equal what the record holds, variable-length
    ones (a sequence, token ids) as the record's own values."""
    schema = tk.Schema({"seq": tk.Sequence(tk.Scalar("int64")), "words": tk.Sequence(
        tk.Scalar("string")), "label": tk.ClassLabel(["a", "b"])})
    tk.write_dataset([{"seq": list(range(i % 5)), "words": [b"w%d" % j for j in range(i % 3)],
                       "label": i % 2} for i in range(40)], tmp_path / "ds", schema,
                     shards=tk.ShardOptions(shuffle=False))
    monkeypatch.setattr(cluster.execution_options, "preserve_order", True)
    rows_ = read_dataset(tmp_path / "ds", options=tk.DecodeOptions(decode=False)).take_all()
    records = tk.open_split(tmp_path / "ds")
    assert len(rows_) == 40
    for row in rows_:
        stored = tk.decode_example(records[int(row["__id"])])
        assert list(np.asarray(row["seq"]).reshape(-1)) == list(stored["seq"])
        assert [bytes(w) for w in row["words"]] == list(stored["words"])
        assert int(row["label"]) == int(stored["label"][0])


def test_images_equal_the_numpy_loader_and_no_tensorflow_in_workers(cluster, tmp_path):
    digits_folder(tmp_path / "digits", limit_per_class=20)
    tk.convert(ImageFolder(tmp_path / "digits"), tmp_path / "ds", workers=1)
    expected = {}
    for batch in tk.load_numpy_dataset(tmp_path / "ds", batch_size=20, sampling=tk.InOrder()):
        for i, image in zip(batch["__id"], batch["image"], strict=True):
            expected[int(i)] = image
    ds = read_dataset(tmp_path / "ds", image_size=None)
    got = {r["__id"]: r["image"] for r in ds.take_all()}
    assert got.keys() == expected.keys()
    assert all(np.array_equal(got[i], expected[i]) for i in got)

    def modules(batch):
        return {"tf": np.array(["tensorflow" in sys.modules] * len(batch["__id"]))}

    flags = read_dataset(tmp_path / "ds").map_batches(modules).take_all()
    assert flags and not any(f["tf"] for f in flags)


def test_a_corrupt_record_fails_naming_the_file(cluster, tmp_path):
    tk.write_dataset(rows(300), tmp_path / "ds", SCHEMA, shards=tk.ShardOptions(num_shards=1))
    shard = next(p for p in (tmp_path / "ds").iterdir() if p.name.endswith(".tfrecord"))
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x55
    shard.write_bytes(bytes(data))
    with pytest.raises(Exception, match=r"train-00000-of-00001\.tfrecord.*crc"):
        read_dataset(tmp_path / "ds").take_all()


def test_new_feature_kinds_equal_the_numpy_loader(cluster, tmp_path):
    """Token ids from a stored vocabulary, and images stored without their dims (as adopted
    files hold them): read_dataset gives the NumPy loader's values."""
    from tests.datasets import encode_image, photos

    images = [p if p.ndim == 3 else np.repeat(p[:, :, None], 3, axis=2)
              for p in photos().values()]
    schema = tk.Schema({"image": tk.Image("png", dims=False),
                        "text": tk.Text(vocabulary=tk.Vocabulary()), "n": tk.Scalar("int64")})
    rows = [{"image": encode_image(images[i % len(images)][: 20 + i, : 30], "PNG"),
             "text": f"the {i % 3} cat sat {i}", "n": i} for i in range(24)]
    tk.write_dataset(rows, tmp_path / "ds", schema, shards=tk.ShardOptions(shuffle=False))
    want = {}
    for batch in tk.load_numpy_dataset(tmp_path / "ds", batch_size=8, sampling=tk.InOrder(),
                                       options=tk.DecodeOptions(padding="ragged")):
        for i, n in enumerate(batch["n"]):
            want[int(n)] = (batch["image"][i], batch["text"]["ids"][i])
    got = read_dataset(tmp_path / "ds", image_size=None).take_all()
    assert len(got) == 24
    for row in got:
        image, ids = want[int(row["n"])]
        assert np.array_equal(row["image"], image)
        assert np.array_equal(np.asarray(row["text"]["ids"]), ids)


def test_a_label_from_the_file_name_is_each_rows_files_class(cluster, tmp_path, monkeypatch):
    """Files whose records carry no label, adopted with class_pattern: every row (decoded or
    raw) gets its file's class, as the NumPy loader gives it."""
    from tests.datasets import class_of, unlabelled_files

    monkeypatch.setattr(cluster.execution_options, "preserve_order", True)  # rows compared by place

    unlabelled_files(tmp_path / "raw", parts_of=lambda k: 1 + k % 2, per_file=3)
    tk.adopt(tmp_path / "raw", class_pattern=r"class_(\d+)-")
    rows = read_dataset(tmp_path / "raw", override_num_blocks=4,
                        options=tk.DecodeOptions(features=["caption", "label"])).take_all()
    assert len(rows) == 27
    assert all(int(r["label"]) == class_of(r["caption"]) for r in rows)
    raw = read_dataset(tmp_path / "raw", options=tk.DecodeOptions(decode=False)).take_all()
    assert [int(r["label"]) for r in raw] == [int(r["label"]) for r in rows]
