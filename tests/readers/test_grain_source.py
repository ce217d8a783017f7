"""load_grain_source through the real grain package: its protocol check, its samplers and
sharding, batching, checkpoint and restore, and values equal to our other readers'."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

grain = pytest.importorskip("grain")

import tfrecordkit as tk  # noqa: E402
from tests.datasets import LOADER_RECORDS as RECORDS  # noqa: E402
from tests.datasets import digits_folder  # noqa: E402
from tfrecordkit.convert import convert  # noqa: E402
from tfrecordkit.readers.grain_source import load_grain_source  # noqa: E402
from tfrecordkit.readers.numpy_data import load_numpy_dataset  # noqa: E402
from tfrecordkit.sources import ImageFolder  # noqa: E402

N = RECORDS



def test_satisfies_grains_protocol_and_repr_is_stable(dataset):
    from grain.sources import RandomAccessDataSource

    source = load_grain_source(dataset)
    assert isinstance(source, RandomAccessDataSource)
    assert len(source) == N
    assert repr(source) == repr(load_grain_source(dataset))
    assert repr(source) != repr(load_grain_source(dataset,
                                                  options=tk.DecodeOptions(features=["v"])))
    clone = pickle.loads(pickle.dumps(source))
    assert repr(clone) == repr(source) and clone[5]["v"] == source[5]["v"]


def test_map_dataset_shuffles_batches_and_keeps_dtypes(dataset):
    source = load_grain_source(dataset)
    # collate pads the variable-length "seq" as every reader does ({"values", "lengths"}).
    ds = grain.MapDataset.source(source).shuffle(seed=3).batch(8, drop_remainder=True,
                                                               batch_fn=source.collate)
    batches = list(ds)
    assert len(batches) == N // 8
    ids = np.concatenate([b["__id"] for b in batches])
    assert len(set(ids.tolist())) == len(ids)
    for b in batches:
        assert b["x"].dtype == np.float32 and b["v"].dtype == np.int64
        # write_dataset shuffles at write time: the record at position id holds some row v.
        assert np.allclose(b["x"], (b["v"] / 7).astype(np.float32))
        assert np.array_equal(b["label"], b["v"] % 3)
        assert b["seq"]["lengths"][:, 0].tolist() == (b["v"] % 4).tolist()
    values = np.concatenate([b["v"] for b in batches]).tolist()
    assert len(set(values)) == len(values) and set(values) <= set(range(N))


def test_dataloader_shards_and_restores_from_its_checkpoint(dataset):
    source = load_grain_source(dataset)

    def loader(shard):
        sampler = grain.samplers.IndexSampler(
            num_records=len(source), shard_options=grain.sharding.ShardOptions(
                shard_index=shard, shard_count=2, drop_remainder=True),
            shuffle=True, num_epochs=1, seed=11)
        return grain.DataLoader(data_source=source, sampler=sampler, worker_count=0)

    shards = [[int(r["__id"]) for r in loader(s)] for s in range(2)]
    assert not set(shards[0]) & set(shards[1])
    assert len(shards[0]) == len(shards[1]) == N // 2

    it = iter(loader(0))
    head = [int(next(it)["__id"]) for _ in range(10)]
    state = it.get_state()  # grain's checkpoint, which checks our repr
    again = iter(loader(0))
    again.set_state(state)
    assert head + [int(r["__id"]) for r in again] == shards[0]


def test_values_equal_the_numpy_loaders(tmp_path):
    digits_folder(tmp_path / "src", limit_per_class=6)
    convert(ImageFolder(tmp_path / "src"), tmp_path / "ds", workers=1, progress=False)
    source = load_grain_source(tmp_path / "ds", image_size=(16, 12))
    for batch in load_numpy_dataset(tmp_path / "ds", batch_size=12, image_size=(16, 12)):
        for k, i in enumerate(batch["__id"].tolist()):
            record = source[i]
            assert np.array_equal(record["image"], batch["image"][k])
            assert record["image"].shape == (16, 12, 1)
            assert record["label"] == batch["label"][k]


def test_records_parsed_but_not_decoded_without_decode(dataset):
    source = load_grain_source(dataset, options=tk.DecodeOptions(decode=False))
    from tfrecordkit import decode_example, open_split

    split = open_split(dataset)
    for key in (7, 3, 1):
        stored = decode_example(split[key])  # every stored key, as the file holds it
        row = source[key]
        assert row.keys() - {"__id"} == stored.keys()
        for name, value in stored.items():
            got = row[name]
            if isinstance(got, dict):  # variable length: padded values and their length
                got = got["values"][: int(got["lengths"][0])]
                got = list(got) if isinstance(value, list) else got
            if isinstance(value, list):  # bytes
                assert (got if isinstance(got, list) else [got]) == value
            else:
                assert np.array_equal(np.asarray(got).reshape(-1), value)
    batch = source.collate(source._getitems([3, 1, 2]))
    assert list(batch["__id"]) == [3, 1, 2]


@pytest.mark.parametrize("shuffle", [tk.Shuffled(), tk.Shuffled(exact=True)])
def test_grain_reads_the_numpy_loaders_shuffled_order(dataset, shuffle):
    source = load_grain_source(dataset)
    for epoch in (0, 1):
        keys = source.order(seed=5, epoch=epoch, sampling=shuffle)
        ds = grain.MapDataset.range(len(source)).map(lambda i, k=keys: source[int(k[i])])
        grain_batches = list(ds.batch(16, batch_fn=source.collate))
        loader = load_numpy_dataset(dataset, batch_size=16, sampling=shuffle,
                                    seed=5)
        loader.set_epoch(epoch)
        numpy_batches = list(loader)
        assert len(grain_batches) == len(numpy_batches)
        for a, b in zip(grain_batches, numpy_batches, strict=True):
            assert a["__id"].tolist() == b["__id"].tolist()
            assert a["v"].tolist() == b["v"].tolist()
            assert np.array_equal(a["seq"]["values"], b["seq"]["values"])


def test_one_compiled_parse_per_record_gives_the_batch_parse_rows(tmp_path):
    """Every key of a fixed shape: ``source[i]`` parses the record in one compiled call; its
    values and their types equal the batch parse's row (NumPy loader, decode=False), and an
    undescribed record is refused naming its file and offset."""
    from tfrecordkit.format import _columns

    schema = tk.Schema({
        "image": tk.Image("png", channels=1),
        "label": tk.ClassLabel(["a", "b", "c"]),
        "score": tk.Scalar("float32"),
        "name": tk.Text(),
        "grid": tk.Tensor((2, 3), "int64", encoding="list"),
        "raw": tk.Tensor((4,), "float32"),
    })
    rng = np.random.default_rng(3)
    rows = [{"image": rng.integers(0, 255, (5, 4, 1), dtype=np.uint8), "label": i % 3,
             "score": float(i) / 3, "name": f"n{i}", "grid": np.arange(6).reshape(2, 3) + i,
             "raw": rng.normal(size=4).astype(np.float32)} for i in range(9)]
    tk.write_dataset(rows, tmp_path / "ds", schema)
    options = tk.DecodeOptions(decode=False)
    source = load_grain_source(tmp_path / "ds", options=options)
    assert source.decoder._fixed_keys
    batch = next(iter(load_numpy_dataset(tmp_path / "ds", batch_size=9, sampling=tk.InOrder(),
                                         options=options)))
    calls = []
    parse_one = _columns._CODEC.parse_one if _columns._CODEC is not None else None
    for i in range(9):
        row = source[i]
        assert row.keys() == batch.keys() - {"__valid"}
        for key, value in row.items():
            want = batch[key][i]
            assert type(value) is type(want), (key, type(value), type(want))
            assert np.array_equal(np.asarray(value), np.asarray(want)), key
    if parse_one is not None:
        original = _columns._CODEC

        class Counting:
            def __getattr__(self, name):
                return getattr(original, name)

            def parse_one(self, *args):
                calls.append(1)
                return original.parse_one(*args)

        _columns._CODEC = Counting()
        try:
            source[4]
        finally:
            _columns._CODEC = original
        assert calls == [1]
    bad = tk.Schema({"image": tk.Image("png", channels=1), "label": tk.Scalar("float32")})
    wrong = load_grain_source(tmp_path / "ds", options=tk.DecodeOptions(
        decode=False), read=tk.ReadOptions(schema=bad))
    with pytest.raises(tk.SchemaError, match=r"record 2 \[train\] \(byte \d+ of .*tfrecord"):
        wrong[2]
