"""The engine-neutral write plan: shard names and bounds from a split's totals alone, equal to
what the local writer wrote; the manifest from shard stats, written only when they add up."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfrecordkit import ClassLabel, DatasetError, Scalar, Schema, ShardOptions, write_dataset
from tfrecordkit.store import (
    SplitTotals,
    StreamCut,
    finalize_manifest,
    load_manifest,
    plan_split,
)

SCHEMA = Schema({"n": Scalar("int64"), "label": ClassLabel(["a", "b", "c", "d"])})


@given(records=st.integers(1, 5000), avg=st.integers(10, 2000),
       shard_size=st.integers(1000, 100_000), min_shards=st.integers(1, 9))
def test_mixed_shards_are_contiguous_and_cover_the_split(records, avg, shard_size, min_shards):
    totals = SplitTotals(records, records * avg, {}, {})
    specs = plan_split("train", totals, ShardOptions(shard_size=shard_size,
                                                     min_shards=min_shards))
    assert specs[0].start == 0 and specs[-1].stop == records
    assert all(a.stop == b.start for a, b in itertools.pairwise(specs))
    assert len({s.name for s in specs}) == len(specs)
    assert all(s.stop > s.start for s in specs)


def _shards_one_by_one(lengths: list[int], limit: int) -> list[list[int]]:
    """The cut written out record by record: close a shard when the next record won't fit."""
    shards: list[list[int]] = []
    for length in lengths:
        if not shards or (shards[-1] and sum(shards[-1]) + length > limit):
            shards.append([])
        shards[-1].append(length)
    return shards


@given(lengths=st.lists(st.integers(1, 300), max_size=200), limit=st.integers(1, 1000),
       batches=st.lists(st.integers(1, 50), min_size=1))
def test_the_stream_cut_is_the_record_by_record_cut_however_records_are_batched(
        lengths, limit, batches):
    cut, shards, position = StreamCut(limit), [[]], 0
    sizes = itertools.cycle(batches)
    while position < len(lengths):
        batch = lengths[position : position + next(sizes)]
        for start, stop in cut.pieces(np.array(batch, dtype=np.int64)):
            if start == stop:
                shards.append([])
            shards[-1].extend(batch[start:stop])
        position += len(batch)
    assert [s for s in shards if s] == _shards_one_by_one(lengths, limit)
    assert all(s for s in shards[:-1])  # a shard is closed only once it holds a record


@pytest.mark.parametrize("options", [
    {"layout": "mixed", "shard_size": 700},
    {"layout": "per_class", "shard_size": 500},
    {"layout": "mixed", "num_shards": 3, "split": {"train": 0.7, "val": 0.3}},
])
def test_the_plan_names_and_counts_what_the_local_writer_wrote(tmp_path, options):
    rows = [{"n": i, "label": (i * 7) % 4} for i in range(400)]
    layout = ShardOptions(**{k: v for k, v in options.items() if k != "split"})
    ratios = options.get("split", "train")
    result = write_dataset(rows, tmp_path / "ds", SCHEMA, split=ratios, shards=layout)
    manifest = result.manifest
    for name, split in manifest.splits.items():
        class_records = {int(k): v for k, v in split.class_counts.items()}
        per_class_bytes = {int(c): sum(s.bytes for s in split.shards if s.class_id == int(c))
                           for c in split.class_counts}
        totals = SplitTotals(split.records, split.bytes, class_records, per_class_bytes)
        specs = plan_split(name, totals, layout)
        assert [s.name for s in specs] == [s.file for s in split.shards]
        assert [s.stop - s.start for s in specs] == [s.records for s in split.shards]


def test_finalize_writes_the_manifest_only_when_counts_add_up(tmp_path):
    write_dataset([{"n": i, "label": i % 4} for i in range(100)], tmp_path / "ds", SCHEMA,
                  shards=ShardOptions(num_shards=2))
    manifest = load_manifest(tmp_path / "ds")
    (tmp_path / "ds" / "dataset.json").unlink()
    shards = {"train": list(manifest.split("train").shards)}
    with pytest.raises(DatasetError, match="wrote 100 records, staged 101"):
        finalize_manifest(tmp_path / "ds", shards, schema=SCHEMA, options=ShardOptions(),
                          label_feature="label", expected={"train": 101})
    assert not (tmp_path / "ds" / "dataset.json").exists()
    again = finalize_manifest(tmp_path / "ds", shards, schema=SCHEMA, options=ShardOptions(),
                              label_feature="label", expected={"train": 100},
                              created_by=manifest.created_by)
    assert again.splits == manifest.splits
    assert load_manifest(tmp_path / "ds").splits == manifest.splits
