"""Conversion on Ray Data: the same write plan as the local engine (order by seeded hash,
shards cut from the split totals by :func:`~tfrecordkit.store.plan_split`, each written whole
by :func:`~tfrecordkit.store.write_shard`, ``dataset.json`` last by
:func:`~tfrecordkit.store.finalize_manifest`), so the shards are byte-identical."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import pickle
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tfrecordkit.errors import DatasetError, SourceError
from tfrecordkit.format import Storage
from tfrecordkit.format._index import INDEX_SUFFIX
from tfrecordkit.schema import Schema
from tfrecordkit.sources import Source, SourceItem
from tfrecordkit.store import (
    MANIFEST_NAME,
    Manifest,
    ShardInfo,
    ShardOptions,
    SplitTotals,
    finalize_manifest,
    plan_split,
    write_shard,
)
from tfrecordkit.store._naming import SHARD_PATTERN

try:
    import ray
except ImportError as err:  # pragma: no cover - the extra is missing
    from tfrecordkit.errors import MissingDependencyError

    raise MissingDependencyError("ray", "ray", "the Ray engine") from err

__all__ = ["convert_on_ray"]

logger = logging.getLogger(__name__)

_BATCH = 4096  # rows per encoding batch and per input block: Ray's per-block costs dominate


class _Encoder:
    """Loads and encodes a batch of source items in a Ray worker (never imports TF)."""

    def __init__(self, job: Any, split: Any) -> None:
        self.job, self.assign = job, split

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        from tfrecordkit.convert._pipeline import _encode_items

        items = [SourceItem(str(k), pickle.loads(item), None if s == "" else str(s))
                 for k, item, s in zip(batch["key"], batch["item"], batch["given_split"],
                                       strict=True)]
        encoded = _encode_items(self.job, items)
        n = len(items)
        ok = np.zeros(n, dtype=bool)
        ok[encoded.kept] = True
        reasons = [""] * n
        for position, reason in encoded.failures:
            reasons[position] = reason
        frames: list[bytes] = [b""] * n
        view = memoryview(encoded.frames.buffer)
        for position, offset, length in zip(encoded.kept, encoded.frames.offsets.tolist(),
                                             encoded.frames.lengths.tolist(), strict=True):
            frames[position] = bytes(view[offset : offset + length])
        labels = np.full(n, -1, dtype=np.int64)
        hashes = np.zeros(n, dtype=np.uint64)
        for j, position in enumerate(encoded.kept):
            label = encoded.labels[j]
            labels[position] = -1 if label is None else label
            if encoded.hashes is not None:
                hashes[position] = encoded.hashes[j]
        seq = batch["seq"].astype(np.int64)
        if encoded.hashes is None:
            hashes = seq.astype(np.uint64)  # no shuffle: input order
        return {
            "seq": seq, "key": np.array([str(k) for k in batch["key"]], dtype=str), "ok": ok,
            "reason": np.array(reasons, dtype=str),
            "split": np.array([self.assign(item) for item in items], dtype=str),
            "label": labels, "h": hashes, "frame": np.array(frames, dtype=object),
            "length": np.array([len(f) for f in frames], dtype=np.int64),
            "observed": np.array([json.dumps(sorted(encoded.observed))] * n, dtype=str),
        }


def _write_one(slices: list[tuple[Any, int, int]], spec: Any, target: str, storage: Storage,
               options: ShardOptions) -> ShardInfo:
    """One whole shard from rows of sorted blocks, written under a temporary name and put in
    place (a rename, or an upload); a retried task writes the same bytes again."""
    import pyarrow as pa

    frames: list[tuple[bytes, int]] = []
    for ref, lo, hi in slices:
        table = ray.get(ref)
        if not isinstance(table, pa.Table):
            table = pa.Table.from_pandas(table)
        part = table.slice(lo, hi - lo)
        frames.extend(zip(part.column("frame").to_pylist(), part.column("label").to_pylist(),
                          strict=True))
    with tempfile.TemporaryDirectory(prefix="tfrecordkit-shard-") as tmp:
        staging, ready = Path(tmp) / "staging", Path(tmp) / "ready"
        staging.mkdir()
        ready.mkdir()
        info = write_shard(frames, ready, spec.name, staging=staging,
                           compression=options.compression, index=options.index)
        if info.index:
            storage.put_file(ready / info.index, storage.join(target, info.index))
        storage.put_file(ready / spec.name, storage.join(target, spec.name))
    return dataclasses.replace(info, class_id=spec.class_id)


def _prepare_output(target: str, storage: Storage, overwrite: bool) -> None:
    manifest = storage.join(target, MANIFEST_NAME)
    if not storage.local:
        storage.check_writable_root(target)
    else:
        os.makedirs(target, exist_ok=True)
    if storage.exists(manifest):
        if not overwrite:
            raise DatasetError(f"{target} already holds a dataset; pass overwrite=True "
                               "(--overwrite) to replace it")
        storage.remove(manifest)  # first: no reader sees it pointing at missing shards
    for name in storage.listdir(target):
        if SHARD_PATTERN.match(name.removesuffix(INDEX_SUFFIX)):
            storage.remove(storage.join(target, name))


def convert_on_ray(source: Source, out_dir: str | os.PathLike[str], *, schema: Schema,
                   split: Any, options: ShardOptions, label_feature: str | None,
                   on_error: str, overwrite: bool, created_by: dict[str, Any],
                   storage_options: dict[str, Any] | None = None) -> Manifest:
    """Run a conversion on the connected Ray cluster (``ray.init`` first, or a local one is
    started). Returns the manifest, written last."""
    from tfrecordkit.convert._pipeline import _Job, _open_images, _refine_schema, _SplitAssigner

    target = os.fspath(out_dir)
    storage = Storage.of(target, storage_options)
    _prepare_output(target, storage, overwrite)
    items = [{"seq": i, "key": item.key, "item": pickle.dumps(item.item),
              "given_split": item.split or ""}
             for i, item in enumerate(source.items())]
    if not items:
        raise SourceError(source.description, "no inputs")
    job = _Job(source, schema, label_feature, options.seed if options.shuffle else None,
               _open_images(schema))
    blocks_in = max(2, len(items) // _BATCH + 1)
    encoded = ray.data.from_items(items, override_num_blocks=blocks_in).map_batches(
        _Encoder, fn_constructor_args=(job, _SplitAssigner(split, options.seed)),
        batch_size=_BATCH, batch_format="numpy", concurrency=(1, max(1, _cpus())),
    ).materialize()
    meta = encoded.select_columns(["seq", "key", "ok", "reason", "split", "label", "length",
                                   "observed"]).to_pandas().sort_values("seq")
    skipped: list[dict[str, str]] = []
    observed: dict[str, set[tuple[str, int]]] = {}
    for row in meta[~meta["ok"]].itertuples():
        where = source.describe(SourceItem(row.key, None))
        if on_error == "raise":
            raise SourceError(where, row.reason)
        skipped.append({"input": where, "reason": row.reason})
    for text in set(meta["observed"]):
        for name, fmt, channels in json.loads(text):
            observed.setdefault(name, set()).add((fmt, channels))
    good = meta[meta["ok"]]
    keys = ["split", "label", "h", "seq"] if options.layout == "per_class" else [
        "split", "h", "seq"]
    ordered = encoded.map_batches(_only_ok, batch_format="pyarrow").sort(keys).materialize()
    blocks = [(ref, block.num_rows) for bundle in ordered.iter_internal_ref_bundles()
              for ref, block in zip(bundle.block_refs, bundle.metadata, strict=True)]
    starts = np.cumsum([0] + [rows for _, rows in blocks])

    def slices(begin: int, end: int) -> list[tuple[Any, int, int]]:
        out = []
        for (ref, _rows), first, last in zip(blocks, starts[:-1], starts[1:], strict=True):
            lo, hi = max(begin, int(first)), min(end, int(last))
            if lo < hi:
                out.append((ref, lo - int(first), hi - int(first)))
        return out

    write = ray.remote(_write_one).options(max_retries=3, retry_exceptions=False)
    pending: dict[str, list[Any]] = {}
    offset = 0
    for name in sorted(set(good["split"])):
        rows = good[good["split"] == name]
        labelled = rows[rows["label"] >= 0]
        totals = SplitTotals(
            len(rows), int(rows["length"].sum()),
            {int(k): int(v) for k, v in labelled.groupby("label").size().items()},
            {int(k): int(v) for k, v in labelled.groupby("label")["length"].sum().items()})
        for spec in plan_split(name, totals, options):
            pending.setdefault(name, []).append(write.remote(
                slices(offset + spec.start, offset + spec.stop), spec, target, storage,
                options))
        offset += len(rows)
    written: dict[str, Sequence[ShardInfo]] = {k: ray.get(v) for k, v in pending.items()}
    return finalize_manifest(
        target, written, schema=_refine_schema(schema, observed), options=options,
        label_feature=label_feature, skipped=skipped[:1000], skipped_count=len(skipped),
        created_by=created_by,
        expected={k: int((good["split"] == k).sum()) for k in written}, storage=storage)


def _only_ok(table: Any) -> Any:
    """The rows that encoded (Arrow, so the columns keep their types for the sort)."""
    return table.filter(table.column("ok"))


def _cpus() -> int:
    return int(ray.cluster_resources().get("CPU", 1))  # type: ignore[no-untyped-call]
