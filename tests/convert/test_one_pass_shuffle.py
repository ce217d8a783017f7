"""The write-time shuffle of sources read in any order: the source is read in the shuffled
order and each record written once, straight into its shard (no spill), with bounded memory."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import digits_folder
from tfrecordkit.job._order import shuffled_items
from tfrecordkit.sources import SourceItem
from tfrecordkit.store import ShardedWriter, record_hash


def _listing(n, counter=None):
    def listing():
        if counter is not None:
            counter.append(1)
        for i in range(n):
            yield SourceItem(f"class_{i % 7}/file_{i:05d}.jpg", i)
    return listing


@pytest.mark.parametrize("window", [1, 5, 64, 10_000])
def test_items_come_in_order_hash_order_in_windows_of_any_size(window):
    passes: list[int] = []
    got = [item.key for item in shuffled_items(_listing(300, passes), seed=3, window=window)]
    keys = [item.key for item in _listing(300)()]
    assert sorted(got) == sorted(keys) and len(got) == 300
    assert got == sorted(keys, key=lambda k: record_hash(k, 3))
    # Held items stay within the window: one listing more per window of items.
    assert len(passes) == (1 if window >= 300 else 1 + -(-300 // window))


def test_the_seed_changes_the_order():
    a = [i.key for i in shuffled_items(_listing(100), seed=0)]
    b = [i.key for i in shuffled_items(_listing(100), seed=1)]
    assert a != b and sorted(a) == sorted(b)


def test_a_folder_converts_in_one_pass_shuffled(tmp_path, monkeypatch):
    digits_folder(tmp_path / "digits", limit_per_class=12)

    def no_spill(*args, **kwargs):
        raise AssertionError("a record went to the spill")

    monkeypatch.setattr(ShardedWriter, "_bucket", no_spill)
    result = tk.convert(tk.ImageFolder(tmp_path / "digits"), tmp_path / "ds", workers=1,
                        shards=tk.ShardOptions(shard_size=2000, seed=7))
    manifest = result.manifest
    assert manifest.created_by["shuffle"] is True and manifest.created_by["seed"] == 7
    assert len(manifest.split("train").shards) > 3
    loader = tk.load_numpy_dataset(tmp_path / "ds", batch_size=1000, sampling=tk.InOrder(),
                                   options=tk.DecodeOptions(decode=False, provenance=True))
    stored = next(iter(loader))["__source"].tolist()
    keys = [s.decode() for s in stored]
    assert len(keys) == 120
    assert keys == sorted(keys, key=lambda k: record_hash(k, 7))
    labels = [int(k.split("/")[0]) for k in keys[:30]]
    assert len(set(labels)) > 5  # classes interleaved, not in folder order


def test_workers_and_reruns_write_the_same_bytes(tmp_path):
    digits_folder(tmp_path / "digits", limit_per_class=60)
    outs = []
    for name, workers in (("a", 1), ("b", 2), ("c", 2)):
        tk.convert(tk.ImageFolder(tmp_path / "digits"), tmp_path / name, workers=workers,
                   shards=tk.ShardOptions(shard_size=8000))
        outs.append({p.name: p.read_bytes() for p in sorted((tmp_path / name).iterdir())
                     if ".tfrecord" in p.name})
    assert outs[0] == outs[1] == outs[2] and len(outs[0]) > 4


def test_fixed_shard_counts_and_per_class_keep_the_spill(tmp_path, monkeypatch):
    """Evenly sized or per-class shards need the totals first: those still spill (past the
    memory budget; here from the first record)."""
    monkeypatch.setenv("TFRECORDKIT_SHUFFLE_MEMORY", "0")
    digits_folder(tmp_path / "digits", limit_per_class=5)
    source = tk.ImageFolder(tmp_path / "digits")
    spilled: list[int] = []
    bucket = ShardedWriter._bucket

    def counted(self, *args, **kwargs):
        spilled.append(1)
        return bucket(self, *args, **kwargs)

    monkeypatch.setattr(ShardedWriter, "_bucket", counted)
    for options in (tk.ShardOptions(num_shards=3), tk.ShardOptions(layout="per_class"),
                    tk.ShardOptions(min_shards=2)):
        spilled.clear()
        result = tk.convert(source, tmp_path / "out", workers=1, shards=options,
                            overwrite=True)
        assert result.records == 50
        assert spilled, f"{options} wrote no record to the spill"
    arrays = tk.NumpyArrays({"x": np.arange(40, dtype=np.int64)})
    result = tk.convert(arrays, tmp_path / "arrays", shards=tk.ShardOptions(shard_size=200))
    back = np.concatenate([b["x"] for b in tk.load_numpy_dataset(tmp_path / "arrays", batch_size=64,
                                                                 sampling=tk.InOrder())])
    assert sorted(back.tolist()) == list(range(40))
    assert back.tolist() == sorted(range(40), key=lambda i: record_hash(str(i), 0))
    assert len(result.manifest.split("train").shards) > 1


@pytest.mark.parametrize("change", ["rename", "add", "remove"])
def test_a_folder_that_changes_between_listings_is_refused_before_a_record_is_doubled(
        tmp_path, change):
    """A real folder, listed once per window: a file renamed (it would be written twice, or
    lost), added or removed between two listings stops the conversion with a named error."""
    from tfrecordkit.sources import ImageFolder

    digits_folder(tmp_path / "src", limit_per_class=4)
    source = ImageFolder(tmp_path / "src")
    calls = []

    def listing():
        calls.append(1)
        if len(calls) == 2:  # between the first listing and the first pass
            victim = sorted((tmp_path / "src" / "3").iterdir())[0]
            if change == "rename":
                victim.rename(victim.with_name("zz_" + victim.name))
            elif change == "add":
                victim.with_name("zz_copy.png").write_bytes(victim.read_bytes())
            else:
                victim.unlink()
        return source.items()

    items = shuffled_items(listing, seed=0, window=7)
    # Refused before the first pass yields a record.
    with pytest.raises(tk.SourceError, match="inputs changed during the conversion"):
        next(items)


def test_a_steady_folder_converts_in_windows(tmp_path, monkeypatch):
    from tfrecordkit.job import _order

    digits_folder(tmp_path / "src", limit_per_class=5)
    monkeypatch.setattr(_order, "WINDOW", 8)
    listings = []
    source = tk.open_source(tmp_path / "src")
    items = source.items
    monkeypatch.setattr(source, "items", lambda: listings.append(1) or items())
    result = tk.convert(source, tmp_path / "ds", workers=1)
    assert result.records == 50 and len(listings) >= 1 + 50 // 8  # listed once per window
    names = {s.decode() for b in tk.load_numpy_dataset(
        tmp_path / "ds", batch_size=50, options=tk.DecodeOptions(provenance=True,
                                                                  decode=False))
             for s in b["__source"]}
    assert len(names) == 50
