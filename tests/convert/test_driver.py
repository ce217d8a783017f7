"""The one conversion driver: an engine is its two steps (stage, write) and nothing else. The
smallest engine that can exist, written here against the protocol, gives the local engine's
bytes and manifest; the tally the drivers plan from counts the same record by record or by
group, and survives the spill summary's JSON."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecordkit import ClassLabel, Schema, ShardOptions, Text, convert
from tfrecordkit.engines._driver import Plans, drive
from tfrecordkit.format import Storage
from tfrecordkit.job import ConversionJob, encode_items
from tfrecordkit.sources import Records
from tfrecordkit.store import (
    ShardInfo,
    Tally,
    load_manifest,
    prepare_output,
    write_shard,
)


class InMemoryEngine:
    """Encodes in this process, holds every record in a list and sorts it: the two steps an
    engine owes the driver, and no planning or manifest of its own."""

    def __init__(self, job: ConversionJob) -> None:
        self.storage = Storage.of(job.out_dir)
        prepare_output(job.out_dir, self.storage, overwrite=job.overwrite)
        self.out = Path(job.out_dir)
        self.options = job.options
        self.rows: dict[str, list[tuple[int, int, bytes, int, bytes]]] = {}

    streams = False  # always planned: the driver cuts every split

    def stage(self, job: ConversionJob, report: Callable[..., Any]) -> Tally:
        tally = Tally()
        items = list(job.items())
        encoded = encode_items(job.encode_job(), items)
        for position, reason in encoded.failures:
            skipped = job.skipped(job.source.describe(items[position]), reason)
            tally.skip(skipped["input"], skipped["reason"])
        assign = job.split_assigner()
        data = bytes(encoded.frames.buffer)
        for j, position in enumerate(encoded.kept):
            label = encoded.labels[j]
            split = assign(items[position], label)
            offset, length = (int(encoded.frames.offsets[j]), int(encoded.frames.lengths[j]))
            h = encoded.hashes[j] if encoded.hashes is not None else position
            self.rows.setdefault(split, []).append(
                (h, position, data[offset : offset + length],
                 -1 if label is None else label, encoded.ids[j].tobytes()))
            tally.count(split, np.array([length]), np.array([-1 if label is None else label]))
        tally.observed.add(encoded.observed)
        for rows in self.rows.values():
            rows.sort(key=lambda row: row[:2])  # the seeded hash, ties in input order
        return tally

    def write(self, plans: Plans, report: Callable[..., Any]) -> dict[str, list[ShardInfo]]:
        written: dict[str, list[ShardInfo]] = {}
        staging = self.out / ".staging"
        staging.mkdir(exist_ok=True)
        for split, specs in plans.items():
            assert specs is not None
            rows = self.rows[split]
            written[split] = [
                write_shard(((frame, label, ids) for _, _, frame, label, ids
                             in rows[spec.start : spec.stop]), self.out, spec.name,
                            staging=staging, compression=self.options.compression,
                            index=self.options.index)
                for spec in specs]
        staging.rmdir()
        return written

    def __enter__(self) -> InMemoryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


SCHEMA = Schema({"text": Text(), "label": ClassLabel(["a", "b", "c"])})


def _records(n: int) -> list[dict[str, Any]]:
    return [{"text": f"record {i} " * (1 + i % 7), "label": i % 3} for i in range(n)]


def _job(out: Path, records: list[dict[str, Any]]) -> ConversionJob:
    return ConversionJob.build(
        Records(records, SCHEMA), out, schema=SCHEMA, split={"train": 0.8, "val": 0.2},
        shards=ShardOptions(num_shards=3, seed=5), on_error="skip", overwrite=False,
        label_feature=None, storage_options=None)


def _files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


def test_an_engine_of_two_steps_writes_what_the_local_engine_writes(tmp_path: Path) -> None:
    records = _records(200)
    records[17] = {"text": "no label here", "label": 7}  # out of range: skipped, listed
    local = convert(Records(records, SCHEMA), tmp_path / "local", schema=SCHEMA,
                    split={"train": 0.8, "val": 0.2},
                    shards=ShardOptions(num_shards=3, seed=5), on_error="skip")
    job = _job(tmp_path / "mine", records)
    manifest = drive(job, InMemoryEngine(job), lambda *a, **k: None)
    assert _files(tmp_path / "mine") == _files(tmp_path / "local")
    assert manifest.skipped_count == 1 and manifest.skipped == local.manifest.skipped
    assert load_manifest(tmp_path / "mine") == load_manifest(tmp_path / "local")


def test_an_engine_that_fails_while_writing_leaves_no_manifest(tmp_path: Path) -> None:
    job = _job(tmp_path / "ds", _records(50))

    class Failing(InMemoryEngine):
        def write(self, plans: Plans, report: Callable[..., Any]) -> dict[str, list[ShardInfo]]:
            super().write({k: v for k, v in plans.items() if k == "train"}, report)
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        drive(job, Failing(job), lambda *a, **k: None)
    assert not (tmp_path / "ds" / "dataset.json").exists()


def test_a_manifest_that_disagrees_with_the_tally_is_not_written(tmp_path: Path) -> None:
    """The driver checks the shards against what was staged: an engine that loses a record
    fails naming the split, and nothing is written."""
    job = _job(tmp_path / "ds", _records(50))

    class Losing(InMemoryEngine):
        def write(self, plans: Plans, report: Callable[..., Any]) -> dict[str, list[ShardInfo]]:
            self.rows["train"].pop()
            shortened = {k: [*v[:-1], type(v[-1])(v[-1].name, v[-1].start, v[-1].stop - 1)]
                         if k == "train" and v else v for k, v in plans.items()}
            return super().write(shortened, report)

    from tfrecordkit.errors import DatasetError

    with pytest.raises(DatasetError, match="split 'train': wrote"):
        drive(job, Losing(job), lambda *a, **k: None)
    assert not (tmp_path / "ds" / "dataset.json").exists()


_rows = st.lists(st.tuples(st.sampled_from(["train", "val", "test"]),
                           st.integers(-1, 5), st.integers(1, 10_000)), max_size=60)


@settings(deadline=None)
@given(rows=_rows, cut=st.integers(1, 7))
def test_a_tally_counts_the_same_by_record_or_by_group_and_through_json(
        rows: list[tuple[str, int, int]], cut: int) -> None:
    by_batch, by_group = Tally(), Tally()
    for start in range(0, len(rows), cut):  # batches of records, as the local engine counts
        batch = rows[start : start + cut]
        for split in {s for s, _, _ in batch}:
            mine = [(label, length) for s, label, length in batch if s == split]
            by_batch.count(split, np.array([n for _, n in mine], np.int64),
                           np.array([label for label, _ in mine], np.int64))
    groups: dict[tuple[str, int], list[int]] = {}
    for split, label, length in rows:  # (split, class) groups, as Ray's summaries count
        groups.setdefault((split, label), []).append(length)
    for (split, label), lengths in groups.items():
        by_group.add(split, label, len(lengths), sum(lengths))
    assert by_batch.totals == by_group.totals
    assert by_batch.expected == {s: sum(1 for r in rows if r[0] == s) for s in by_batch.totals}
    by_batch.skip("x.jpg", "truncated")
    by_batch.observed.add([("image", "jpeg", 3, "4x5")])
    again = Tally.from_json(by_batch.to_json())
    assert again.totals == by_batch.totals
    assert (again.skipped, again.skipped_count) == ([{"input": "x.jpg", "reason": "truncated"}],
                                                     1)
    assert again.observed.as_set() == by_batch.observed.as_set()
