"""The Ray engine, run by the driver every engine shares (``engines._driver.drive``): items are
encoded in ``map_batches``, ordered by Ray's distributed sort on the seeded hash, and each shard
the driver plans (:func:`~tfrecordkit.store.plan_split`) is written whole by one task with
:func:`~tfrecordkit.store.write_shard` (retried if its worker dies); the driver writes
``dataset.json`` last. The shards are byte-identical to the local engine's; the driver holds
object references and the tally, never the records."""

from __future__ import annotations

import dataclasses
import json
import logging
import pickle
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from tfrecordkit.engines._driver import Plans, drive
from tfrecordkit.errors import SourceError
from tfrecordkit.format import Storage
from tfrecordkit.job import (
    ConversionJob,
    EncodeJob,
    SplitAssigner,
    encode_items,
)
from tfrecordkit.sources import Records, SourceItem
from tfrecordkit.store import (
    SKIPPED_LISTED,
    Manifest,
    ShardInfo,
    ShardOptions,
    ShardSpec,
    StreamCut,
    Tally,
    listed_files,
    prepare_output,
    remove_shards,
    shard_name,
    write_shard,
)

try:
    import pyarrow as pa
    import ray
    from ray.data.block import BlockAccessor
except ImportError as err:  # pragma: no cover - the extra is missing
    from tfrecordkit.errors import MissingDependencyError

    raise MissingDependencyError("ray", "ray", "the Ray engine") from err

__all__ = ["run_on_ray", "write_ray_dataset"]

logger = logging.getLogger(__name__)

_BATCH = 4096  # rows per encoding batch and per input block: Ray's per-block costs dominate
_SEQ = "__tfrecordkit_seq"  # the input position a Ray Dataset's rows are numbered with

#: Jobs of at most this many framed bytes and records are put in write order on the driver
#: (their sort keys fetched, ~60 bytes a row there) instead of by Ray's distributed sort; a
#: shard's task then reads every block holding one of its rows.
_DRIVER_ORDER_BYTES = 64 << 20
_DRIVER_ORDER_ROWS = 500_000

_DEFERRED = "*stratified*"  # a split the driver assigns (stratified, in input order)

ItemsOf = Callable[[dict[str, np.ndarray]], list[SourceItem]]


def _source_items(batch: dict[str, np.ndarray]) -> list[SourceItem]:
    """A batch of a source's items, as :func:`_source_blocks` stored them."""
    return [SourceItem(str(k), pickle.loads(item), None if s == "" else str(s))
            for k, item, s in zip(batch["key"], batch["item"], batch["given_split"], strict=True)]


@dataclasses.dataclass(frozen=True)
class _RowItems:
    """A batch of a Ray Dataset's rows as items: the schema's columns, keyed by ``key`` (a
    column) or by the row's position."""

    columns: tuple[str, ...]
    key: str | None

    def __call__(self, batch: dict[str, np.ndarray]) -> list[SourceItem]:
        keys = batch[self.key] if self.key is not None else batch[_SEQ]
        # Scalars as Python values (what the batch encoder takes whole; NumPy scalars would
        # send every record down the record-by-record path); arrays stay arrays.
        columns = {name: batch[name].tolist() if batch[name].ndim == 1
                   and batch[name].dtype.kind in "biufUS" else batch[name]
                   for name in self.columns}
        return [SourceItem(str(k), {name: columns[name][i] for name in self.columns})
                for i, k in enumerate(keys.tolist())]


class _Encoder:
    """Encodes a batch of items in a Ray worker (never imports TensorFlow)."""

    def __init__(self, job: EncodeJob, assign: SplitAssigner, items_of: ItemsOf) -> None:
        self.job, self.assign, self.items_of = job, assign, items_of

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        items = self.items_of(batch)
        encoded = encode_items(self.job, items)
        n = len(items)
        ok = np.zeros(n, dtype=bool)
        ok[encoded.kept] = True
        reasons = [""] * n
        for position, reason in encoded.failures:
            reasons[position] = reason
        frames: list[bytes] = [b""] * n
        ids: list[bytes] = [b""] * n
        view = memoryview(encoded.frames.buffer)
        for position, offset, length, record_ids in zip(
                encoded.kept, encoded.frames.offsets.tolist(), encoded.frames.lengths.tolist(),
                _rows(encoded.ids), strict=True):
            frames[position] = bytes(view[offset : offset + length])
            ids[position] = record_ids
        present = np.zeros(n, dtype=bool)
        present[encoded.present] = True
        labels = np.full(n, -1, dtype=np.int64)
        hashes = np.zeros(n, dtype=np.uint64)
        for j, position in enumerate(encoded.kept):
            label = encoded.labels[j]
            labels[position] = -1 if label is None else label
            if encoded.hashes is not None:
                hashes[position] = encoded.hashes[j]
        seq = np.asarray(batch[_SEQ], dtype=np.int64)
        if encoded.hashes is None:
            hashes = seq.astype(np.uint64)  # no shuffle: input order
        return {
            "seq": seq, "key": np.array([item.key for item in items], dtype=str), "ok": ok,
            "reason": np.array(reasons, dtype=str),
            # Stratified splits depend on the items before: the driver assigns them in order.
            "split": np.array([_DEFERRED if self.assign.stratifies(item) and labels[i] >= 0
                               else self.assign(item) for i, item in enumerate(items)],
                              dtype=str),
            "label": labels, "h": hashes, "frame": np.array(frames, dtype=object),
            "ids": np.array(ids, dtype=object), "present": present,
            "length": np.array([len(f) for f in frames], dtype=np.int64),
            "observed": np.array([json.dumps(sorted(encoded.observed))] * n, dtype=str),
        }


Pieces = list[tuple[Any, "slice | np.ndarray"]]
"""A shard's rows: (block, its rows: a run or positions), one block after another."""


def _write_one(pieces: Pieces, order: np.ndarray | None, spec: Any, target: str,  # noqa: PLR0917
               storage: Storage, options: ShardOptions) -> ShardInfo:
    """One whole shard from rows of the encoded blocks (``pieces`` in turn, then put in write
    order by ``order`` when they are not in it), written under a temporary name and put in
    place (a rename, or an upload); a retried task writes the same bytes again."""
    frames: list[tuple[bytes, int, bytes]] = []
    for ref, rows in pieces:
        table = BlockAccessor.for_block(ray.get(ref)).to_arrow()
        part = (table.slice(rows.start, rows.stop - rows.start) if isinstance(rows, slice)
                else table.take(pa.array(rows)))
        frames.extend(zip(part.column("frame").to_pylist(), part.column("label").to_pylist(),
                          part.column("ids").to_pylist(), strict=True))
    if order is not None:
        frames = [frames[i] for i in order.tolist()]
    with tempfile.TemporaryDirectory(prefix="tfrecordkit-shard-") as tmp:
        staging, ready = Path(tmp) / "staging", Path(tmp) / "ready"
        staging.mkdir()
        ready.mkdir()
        info = write_shard(frames, ready, spec.name, staging=staging,
                           compression=options.compression, index=options.index)
        for sidecar in (info.index, info.restarts, info.digests):
            if sidecar:
                storage.put_file(ready / sidecar, storage.join(target, sidecar))
        storage.put_file(ready / spec.name, storage.join(target, spec.name))
    return dataclasses.replace(info, class_id=spec.class_id)


def _source_blocks(items: Iterator[SourceItem]) -> Any:
    """A source's items as a Ray Dataset, put in the object store a block at a time."""
    refs: list[Any] = []
    seq = 0
    while chunk := list(islice(items, _BATCH)):
        refs.append(ray.put(pa.table({
            _SEQ: np.arange(seq, seq + len(chunk), dtype=np.int64),
            "key": [item.key for item in chunk],
            "item": [pickle.dumps(item.item) for item in chunk],
            "given_split": [item.split or "" for item in chunk]})))
        seq += len(chunk)
    return ray.data.from_arrow_refs(refs) if refs else None


def _number_block(block: Any, first: int, columns: list[str]) -> Any:
    table = BlockAccessor.for_block(block).to_arrow().select(columns)
    return table.append_column(_SEQ, pa.array(np.arange(first, first + table.num_rows)))


def _numbered(ds: Any, columns: list[str]) -> Any:
    """``ds``'s ``columns`` with each row's position in ``ds`` (the order Ray produced the
    rows in); a dataset already materialized is not run again."""
    number = ray.remote(_number_block)
    refs: list[Any] = []
    first = 0
    for bundle in ds.materialize().iter_internal_ref_bundles():
        for ref, meta in zip(bundle.block_refs, bundle.metadata, strict=True):
            refs.append(number.remote(ref, first, columns))
            first += meta.num_rows
    return ray.data.from_arrow_refs(refs) if refs else None


def _only_ok(table: Any) -> Any:
    """The rows that encoded, with what the sort and the shard writers need (Arrow, so the
    columns keep their types for the sort)."""
    return table.filter(table.column("ok")).select(
        ["split", "label", "h", "seq", "frame", "length", "ids"])


def _summarize(table: Any) -> Any:
    """A block's summary, a few rows: records and bytes per (split, class), its first
    failures (with how many failed), and the image formats it saw."""
    import pyarrow.compute as pc

    ok, present = table.column("ok"), table.column("present")
    good = table.filter(ok)
    bad = table.filter(pc.and_(pc.invert(ok), pc.invert(present)))
    totals = good.group_by(["split", "label"]).aggregate(
        [("length", "count"), ("length", "sum")])
    first_bad = bad.sort_by("seq").slice(0, SKIPPED_LISTED)
    seen = pc.unique(table.column("observed")).to_pylist()
    kinds = (["total"] * totals.num_rows + ["failed"] * first_bad.num_rows
             + ["observed"] * len(seen) + ["failures", "present"])
    empty_text = [""] * (first_bad.num_rows + len(seen) + 2)
    zeros = [0] * (first_bad.num_rows + len(seen) + 2)
    return pa.table({
        "kind": kinds,
        "split": [*totals.column("split").to_pylist(), *empty_text],
        "label": pa.array([*totals.column("label").to_pylist(), *zeros], pa.int64()),
        "records": pa.array([*totals.column("length_count").to_pylist(),
                             *[0] * first_bad.num_rows, *[0] * len(seen), bad.num_rows,
                             int(pc.sum(present).as_py() or 0)], pa.int64()),
        "bytes": pa.array([*totals.column("length_sum").to_pylist(), *zeros], pa.int64()),
        "seq": pa.array([*[0] * totals.num_rows, *first_bad.column("seq").to_pylist(),
                         *[0] * (len(seen) + 2)], pa.int64()),
        "key": [*[""] * totals.num_rows, *first_bad.column("key").to_pylist(),
                *[""] * (len(seen) + 2)],
        "reason": [*[""] * totals.num_rows, *first_bad.column("reason").to_pylist(),
                   *[""] * (len(seen) + 2)],
        "observed": [*[""] * (totals.num_rows + first_bad.num_rows), *seen, "", ""],
    })


@dataclasses.dataclass
class _Summary:
    """What the driver needs of the encoded rows, merged block by block as they stream by
    (its size grows with splits x classes and the failures listed, not with the rows)."""

    tally: Tally = dataclasses.field(default_factory=Tally)
    failed: list[tuple[int, str, str]] = dataclasses.field(default_factory=list)
    failures: int = 0
    present: int = 0  # inputs an append found in the dataset already

    def add(self, table: Any) -> None:
        for row in table.to_pylist():
            if row["kind"] == "total":
                self.tally.add(row["split"], row["label"], row["records"], row["bytes"])
            elif row["kind"] == "failed":
                self.failed.append((row["seq"], row["key"], row["reason"]))
            elif row["kind"] == "failures":
                self.failures += row["records"]
            elif row["kind"] == "present":
                self.present += row["records"]
            else:
                self.tally.observed.add(json.loads(row["observed"]))
        self.failed = sorted(self.failed)[:SKIPPED_LISTED]

    def named(self, job: ConversionJob, describe: Callable[[str], str]) -> Tally:
        """The tally, its first failures named as the job names inputs (in input order)."""
        self.tally.skipped = [job.skipped(describe(key), reason)
                              for _, key, reason in self.failed]
        self.tally.skipped_count = self.failures
        return self.tally


def _split_and_length(block: Any) -> tuple[np.ndarray, np.ndarray]:
    table = BlockAccessor.for_block(block).to_arrow()
    return (table.column("split").to_numpy(zero_copy_only=False).astype(str),
            table.column("length").to_numpy())


def _order_keys(block: Any) -> dict[str, np.ndarray]:
    """A block's sort keys and lengths (what the driver orders rows by)."""
    table = BlockAccessor.for_block(block).to_arrow()
    return {"split": table.column("split").to_numpy(zero_copy_only=False).astype(str),
            **{name: table.column(name).to_numpy()
               for name in ("label", "h", "seq", "length")}}


class _SortedBlocks:
    """Rows in write order as Ray's distributed sort left them: blocks one after another."""

    def __init__(self, blocks: list[tuple[Any, int]]) -> None:
        self.blocks = blocks  # (block, rows)

    def columns(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The rows' splits and lengths in write order, a block at a time (8 fetched ahead)."""
        fetch = ray.remote(_split_and_length)
        ahead = deque(fetch.remote(ref) for ref, _ in self.blocks[:8])
        following = len(ahead)
        while ahead:
            columns = ray.get(ahead.popleft())
            if following < len(self.blocks):
                ahead.append(fetch.remote(self.blocks[following][0]))
                following += 1
            yield columns

    def pieces(self, begin: int, end: int) -> tuple[Pieces, np.ndarray | None]:
        """Rows ``begin .. end - 1`` in write order, as runs of the sorted blocks."""
        out: Pieces = []
        first = 0
        for ref, rows in self.blocks:
            lo, hi = max(begin, first), min(end, first + rows)
            if lo < hi:
                out.append((ref, slice(lo - first, hi - first)))
            first += rows
        return out, None


class _DriverOrder:
    """Rows in write order as the driver sorted their keys (see ``_DRIVER_ORDER_BYTES``): for
    jobs small enough that a shard's task can read every block it needs, which is cheaper
    than the fixed cost of Ray's distributed sort."""

    def __init__(self, refs: list[Any], per_class: bool) -> None:
        self.refs = refs
        parts = ray.get([ray.remote(_order_keys).remote(ref) for ref in refs])
        keys = {name: np.concatenate([p[name] for p in parts]) if parts else np.zeros(0)
                for name in ("split", "label", "h", "seq", "length")}
        block = np.repeat(np.arange(len(refs)), [len(p["seq"]) for p in parts])
        row = np.concatenate([np.arange(len(p["seq"])) for p in parts]) if parts else block
        # The sort Ray would make: (split, [class,] h, input position), every key ascending.
        columns = (keys["seq"], keys["h"], *([keys["label"]] if per_class else []),
                   keys["split"])
        order = np.lexsort(columns)
        self.block, self.row = block[order], row[order]
        self.split, self.length = keys["split"][order], keys["length"][order]

    def columns(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        yield self.split, self.length

    def pieces(self, begin: int, end: int) -> tuple[Pieces, np.ndarray | None]:
        """Rows ``begin .. end - 1``, block by block, and the order that puts them in write
        order."""
        blocks, rows = self.block[begin:end], self.row[begin:end]
        by_block = np.argsort(blocks, kind="stable")
        present, starts = np.unique(blocks[by_block], return_index=True)
        stops = [*starts[1:].tolist(), len(by_block)]
        pieces: Pieces = [(self.refs[int(b)], rows[by_block[a:z]])
                          for b, a, z in zip(present.tolist(), starts.tolist(), stops,
                                             strict=True)]
        return pieces, np.argsort(by_block)


def _streamed_specs(columns: Iterator[tuple[np.ndarray, np.ndarray]], options: ShardOptions,
                    part: str = "") -> dict[str, list[ShardSpec]]:
    """Each split's shards, cut by size over the rows in write order (``columns``: their
    splits and lengths, a run at a time) as the local engine's one pass cuts them."""
    cuts: dict[str, tuple[StreamCut, list[int]]] = {}  # split -> (cut, shard ends)
    counts: dict[str, int] = {}
    for splits, lengths in columns:
        bounds = np.flatnonzero(splits[1:] != splits[:-1]) + 1
        for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), len(splits)], strict=True):
            if lo == hi:
                continue
            name = str(splits[lo])
            cut, ends = cuts.setdefault(name, (StreamCut(options.shard_size), []))
            base = counts.get(name, 0)
            for start, stop in cut.pieces(lengths[lo:hi]):
                if start == stop:
                    ends.append(base + start)
            counts[name] = base + hi - lo
    specs: dict[str, list[ShardSpec]] = {}
    for name, (_, ends) in cuts.items():
        stops = [*ends, counts[name]]
        starts = [0, *ends]
        specs[name] = [ShardSpec(shard_name(name, i, len(stops), options.compression,
                                            part=part), a, b)
                       for i, (a, b) in enumerate(zip(starts, stops, strict=True))]
    return specs


def _stratify_columns(block: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A block's rows to assign: input positions, keys and labels of the deferred ones, and
    the block's first and last input positions."""
    table = BlockAccessor.for_block(block).to_arrow()
    seq = table.column("seq").to_numpy()
    deferred = (table.column("split").to_numpy(zero_copy_only=False).astype(str) == _DEFERRED)
    span = np.array([seq.min(), seq.max()] if len(seq) else [0, -1], dtype=np.int64)
    rows = np.flatnonzero(deferred)
    rows = rows[np.argsort(seq[rows], kind="stable")]  # input order
    return (span, rows, table.column("key").to_numpy(zero_copy_only=False)[rows].astype(str),
            table.column("label").to_numpy()[rows])


def _first_seq(block: Any) -> int:
    seq = BlockAccessor.for_block(block).to_arrow().column("seq").to_numpy()
    return int(seq.min()) if len(seq) else -1


def _set_splits(block: Any, rows: np.ndarray, splits: np.ndarray) -> Any:
    table = BlockAccessor.for_block(block).to_arrow()
    column = table.column("split").to_numpy(zero_copy_only=False).astype(object)
    column[rows] = splits
    return table.set_column(table.schema.get_field_index("split"), "split",
                            pa.array(column.astype(str)))


def _assign_stratified(encoded: Any, job: ConversionJob) -> Any:
    """``encoded`` with the deferred (stratified) splits assigned in input order, as the
    local engine assigns them; the driver holds one block's keys at a time."""
    blocks = [ref for bundle in encoded.iter_internal_ref_bundles()
              for ref in bundle.block_refs]
    columns, set_splits = ray.remote(_stratify_columns), ray.remote(_set_splits)
    # Blocks hold contiguous runs of input positions (one input block each): take them in
    # the order of their first position.
    heads = ray.get([ray.remote(_first_seq).remote(ref) for ref in blocks])
    order = np.argsort(heads, kind="stable")
    parts = {int(i): columns.remote(blocks[i]) for i in order[:8]}
    assign = job.split_assigner()
    out: list[Any] = [None] * len(blocks)
    last = -1
    for position, index in enumerate(order.tolist()):
        span, rows, keys, labels = ray.get(parts.pop(index))
        if position + 8 < len(order):
            ahead = int(order[position + 8])
            parts[ahead] = columns.remote(blocks[ahead])
        if span[1] >= span[0]:
            if span[0] <= last:
                raise RuntimeError("Ray interleaved the input blocks; stratified splits need "
                                   "them in order")
            last = int(span[1])
        splits = np.array([assign(SourceItem(str(k), None), int(label))
                           for k, label in zip(keys, labels, strict=True)], dtype=str)
        out[index] = (blocks[index] if not len(rows)
                      else set_splits.remote(blocks[index], rows, splits))
    return ray.data.from_arrow_refs(out)


class _Stages:
    """Logs (at debug level) how long each stage of a Ray conversion took."""

    def __init__(self) -> None:
        self.last = time.perf_counter()

    def __call__(self, stage: str) -> None:
        now = time.perf_counter()
        logger.debug("ray engine: %s took %.2f s", stage, now - self.last)
        self.last = now


class _RayEngine:
    """Encodes in Ray tasks (``map_batches``), orders the rows with Ray's distributed sort on
    the seeded hash, and writes each planned shard whole in a task of its own (retried if its
    worker dies); the driver holds object references and the tally, never the records."""

    def __init__(self, job: ConversionJob, encoded: Any, storage: Storage,
                 describe: Callable[[str], str]) -> None:
        self.encoded, self.storage, self.describe = encoded, storage, describe
        self.out_dir, self.options = job.out_dir, job.options
        self.part = job.append.tag if job.append is not None else ""
        self.streams = job.options.streams(job.presorted)
        self.rows: _SortedBlocks | _DriverOrder | None = None  # staged, in write order
        self.clock = _Stages()

    def stage(self, job: ConversionJob, report: Callable[..., None]) -> Tally:
        clock = self.clock
        encoded = self.encoded.materialize()
        clock("encode")
        if job.stratify and not isinstance(job.split, str):
            encoded = _assign_stratified(encoded, job)
            clock("stratified splits")
        summary = _Summary()
        for part in encoded.map_batches(_summarize, batch_format="pyarrow",
                                        batch_size=None).iter_batches(batch_format="pyarrow",
                                                                      batch_size=None):
            summary.add(part)
        if summary.present:
            report(0, 0, present=summary.present)
        clock("totals, failures and image formats")
        tally = summary.named(job, self.describe)
        good = encoded.map_batches(_only_ok, batch_format="pyarrow")
        per_class = job.options.layout == "per_class"
        staged = tally.totals.values()
        if (sum(t.bytes for t in staged) <= _DRIVER_ORDER_BYTES
                and sum(t.records for t in staged) <= _DRIVER_ORDER_ROWS):
            refs = [ref for bundle in good.materialize().iter_internal_ref_bundles()
                    for ref in bundle.block_refs]
            self.rows = _DriverOrder(refs, per_class)
            clock("order on the driver")
        else:
            keys = ["split", "label", "h", "seq"] if per_class else ["split", "h", "seq"]
            ordered = good.sort(keys).materialize()
            self.rows = _SortedBlocks([
                (ref, meta.num_rows) for bundle in ordered.iter_internal_ref_bundles()
                for ref, meta in zip(bundle.block_refs, bundle.metadata, strict=True)])
            clock("sort")
        return tally

    def write(self, plans: Plans, report: Callable[..., None]) -> dict[str, list[ShardInfo]]:
        # A task whose worker dies is run again (max_retries); it rewrites the same bytes.
        write = ray.remote(_write_one).options(max_retries=3, retry_exceptions=False)
        rows = self.rows
        assert rows is not None, "stage() first"
        streamed = (_streamed_specs(rows.columns(), self.options, self.part)
                    if any(specs is None for specs in plans.values()) else {})
        pending: dict[Any, str] = {}
        offset = 0
        for name, planned in plans.items():  # in the sort's split order
            specs = streamed[name] if planned is None else planned
            for spec in specs:
                pieces, order = rows.pieces(offset + spec.start, offset + spec.stop)
                pending[write.remote(pieces, order, spec, self.out_dir, self.storage,
                                     self.options)] = name
            offset += max((spec.stop for spec in specs), default=0)
        done: dict[Any, ShardInfo] = {}
        waiting = list(pending)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            for ref in ready:
                done[ref] = ray.get(ref)
                report(done[ref].records, done[ref].bytes)
        self.clock("write shards")
        written: dict[str, list[ShardInfo]] = {}
        for ref, name in pending.items():  # in plan order
            written.setdefault(name, []).append(done[ref])
        return written

    def __enter__(self) -> _RayEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        """Nothing to drop: shards a failed run left are removed by the next (``_prepare``)."""


def _encoded(inputs: Any, job: ConversionJob, items_of: ItemsOf) -> Any:
    encoder = _Encoder(job.encode_job(), job.split_assigner(), items_of)
    # Tasks, not an actor pool: they start in Ray's warm workers (actors each start afresh).
    return inputs.map_batches(_encode_batch, fn_kwargs={"encoder": encoder},
                              batch_size=_BATCH, batch_format="numpy")


def _encode_batch(batch: dict[str, np.ndarray], encoder: _Encoder) -> dict[str, Any]:
    return encoder(batch)


def _prepare(job: ConversionJob, storage: Storage) -> None:
    """The output ready: a new dataset's folder checked, or an append's dataset left as it is;
    then what a killed run left removed (never a file the dataset lists; in a bucket, nothing
    when appending)."""
    if job.append is None:
        prepare_output(job.out_dir, storage, overwrite=job.overwrite)
        remove_shards(job.out_dir, storage)
    elif storage.local:  # under the append's lock; in a bucket, another's may be under way
        remove_shards(job.out_dir, storage, keep=listed_files(job.append.base), sidecars=False)


def _rows(ids: np.ndarray) -> list[bytes]:
    """Each record's RECORD_IDS as 24 bytes."""
    data = ids.tobytes()
    size = ids.dtype.itemsize
    return [data[i : i + size] for i in range(0, len(data), size)]


def run_on_ray(job: ConversionJob, *, report: Callable[..., None]) -> Manifest:
    """Run ``job`` on the connected Ray cluster (``ray.init`` first, or a local one is
    started); returns the manifest, written last. ``report(records, bytes)`` sees each shard."""
    storage = Storage.of(job.out_dir, job.storage_options)
    _prepare(job, storage)
    inputs = _source_blocks(job.items())
    if inputs is None:
        raise SourceError(job.source.description, "no inputs")
    engine = _RayEngine(job, _encoded(inputs, job, _source_items), storage,
                        lambda key: job.source.describe(SourceItem(key, None)))
    return drive(job, engine, report)


def write_ray_dataset(ds: Any, job: ConversionJob, *, key: str | None,
                      report: Callable[..., None]) -> Manifest:
    """Write the rows of the Ray Dataset ``ds`` (``job.source`` is unused but describes it)."""
    columns = tuple(job.schema)
    have = set(ds.columns() or ())
    missing = [c for c in (*columns, *([key] if key else [])) if c not in have]
    if missing:
        raise ValueError(f"the Ray Dataset has no column(s) {missing}; it has {sorted(have)}")
    storage = Storage.of(job.out_dir, job.storage_options)
    _prepare(job, storage)
    numbered = _numbered(ds, list(dict.fromkeys((*columns, *([key] if key else [])))))
    if numbered is None:
        raise SourceError(job.source.description, "no rows")
    job = dataclasses.replace(job, source=Records([], job.schema, job.source.description))
    engine = _RayEngine(job, _encoded(numbered, job, _RowItems(columns, key)), storage,
                        lambda k: f"row {k}" if key is None else f"row {key}={k}")
    return drive(job, engine, report)
