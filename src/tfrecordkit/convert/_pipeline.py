"""The conversion: source items → (worker processes) load + encode → sharded writer → dataset.

Encoding runs in worker processes (default: one per core) with a bounded number of chunks in
flight, so memory does not grow with the dataset; results come back in input order, so the same
inputs and seed always give byte-identical shards.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import multiprocessing
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tfrecordkit.errors import SchemaError, SourceError
from tfrecordkit.format import Storage
from tfrecordkit.format._encode import EncodedFrames
from tfrecordkit.schema import ClassLabel, Image, Schema, image_header, sniff_bytes
from tfrecordkit.sources import Records, Source, SourceItem
from tfrecordkit.store import (
    DEFAULT_SHARD_SIZE,
    Manifest,
    ShardedWriter,
    ShardOptions,
    record_hash,
)

__all__ = ["ConversionResult", "SplitSpec", "convert", "write_dataset"]

logger = logging.getLogger(__name__)

SplitSpec = str | Mapping[str, float]
"""One split name for every record, or split ratios (``{"train": 0.9, "val": 0.1}``)."""

_CHUNK = 32
_IN_FLIGHT_PER_WORKER = 4


@dataclass(frozen=True)
class ConversionResult:
    """What a conversion produced, and how fast."""

    path: Path | str  # a local folder, or a URL
    manifest: Manifest
    seconds: float
    resumed: bool

    @property
    def records(self) -> int:
        return sum(s.records for s in self.manifest.splits.values())

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.manifest.splits.values())

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary (what ``convert --json`` prints)."""
        m = self.manifest
        return {
            "path": str(self.path),
            "records": self.records,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 3),
            "records_per_second": round(self.records / self.seconds, 1) if self.seconds else None,
            "resumed": self.resumed,
            "layout": m.layout,
            "compression": m.compression,
            "splits": {
                name: {"records": s.records, "bytes": s.bytes, "shards": len(s.shards),
                       "class_counts": s.class_counts}
                for name, s in m.splits.items()
            },
            "skipped_count": m.skipped_count,
            "skipped": list(m.skipped),
        }

    def summary(self) -> str:
        """Human-readable summary: records per split and class, shards, bytes, skipped inputs."""
        m = self.manifest
        seconds = max(self.seconds, 1e-9)
        lines = [
            f"wrote {self.records} records ({self.bytes / 1e6:.1f} MB) to {self.path} in "
            f"{self.seconds:.1f}s ({self.records / seconds:,.0f} rec/s, "
            f"{self.bytes / 1e6 / seconds:.1f} MB/s){' (resumed)' if self.resumed else ''}"
        ]
        names = m.class_names
        for name, split in m.splits.items():
            lines.append(f"  {name}: {split.records} records in {len(split.shards)} shard(s), "
                         f"{split.bytes / 1e6:.1f} MB")
            if split.class_counts and len(split.class_counts) <= 20:
                counts = ", ".join(f"{names[int(k)] if names else k}={v}"
                                   for k, v in split.class_counts.items())
                lines.append(f"    classes: {counts}")
            elif split.class_counts:
                lines.append(f"    {len(split.class_counts)} classes")
        if m.skipped_count:
            lines.append(f"  skipped {m.skipped_count} input(s):")
            lines.extend(f"    {s['input']}: {s['reason']}" for s in m.skipped[:10])
            if m.skipped_count > 10:
                lines.append(f"    ... and {m.skipped_count - 10} more (see dataset.json)")
        return "\n".join(lines)


# -- worker side ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Job:
    """What every worker needs, sent once per worker."""

    source: Source
    schema: Schema
    label_feature: str | None
    seed: int | None  # None: no write-time shuffle, so no order hash
    open_images: tuple[str, ...] = ()  # images whose schema leaves format or channels open


_worker_job: _Job | None = None


def _init_worker(job: _Job) -> None:
    global _worker_job  # noqa: PLW0603 -- one per worker process, set once
    _worker_job = job


@dataclass
class _Encoded:
    """A chunk of items, encoded: the good ones framed back to back, the bad ones with why."""

    frames: EncodedFrames
    kept: list[int]  # positions (in the chunk) of the framed items, in order
    labels: list[int | None]
    hashes: list[int] | None
    failures: list[tuple[int, str]]  # (position, reason), in order
    observed: set[tuple[str, str, int]]  # (image, format, channels) of open images


def _encode_chunk(chunk: list[SourceItem]) -> _Encoded:
    """Load, encode and frame a chunk of items (in a worker)."""
    assert _worker_job is not None
    return _encode_items(_worker_job, chunk)


def _reason(err: Exception) -> str:
    if isinstance(err, SourceError):
        return err.reason
    if isinstance(err, SchemaError):
        return str(err)
    return f"{type(err).__name__}: {err}"


_ITEM_ERRORS = (SourceError, SchemaError, OSError, ValueError, KeyError, TypeError)


def _encode_items(job: _Job, chunk: list[SourceItem]) -> _Encoded:
    records: list[Mapping[str, Any]] = []
    kept: list[int] = []
    failures: list[tuple[int, str]] = []
    for position, item in enumerate(chunk):
        try:
            records.append(job.source.load(item.item))
            kept.append(position)
        except _ITEM_ERRORS as err:
            failures.append((position, _reason(err)))
    try:
        frames = job.schema.encode_frames(records)
    except _ITEM_ERRORS:
        # Some record is bad: find each one, and frame the rest.
        good: list[Mapping[str, Any]] = []
        good_positions: list[int] = []
        for position, record in zip(kept, records, strict=True):
            try:
                job.schema.encode(record)
            except _ITEM_ERRORS as err:
                failures.append((position, _reason(err)))
                continue
            good.append(record)
            good_positions.append(position)
        records, kept = good, good_positions
        failures.sort()
        frames = job.schema.encode_frames(records)
    labels: list[int | None] = [None] * len(records)
    if job.label_feature is not None:
        feature = job.schema[job.label_feature]
        assert isinstance(feature, ClassLabel)
        labels = [feature.index_of(job.label_feature, r[job.label_feature]) for r in records]
    hashes = (None if job.seed is None
              else [record_hash(chunk[p].key, job.seed) for p in kept])
    observed: set[tuple[str, str, int]] = set()
    if job.open_images:
        for record in records:
            observed.update(_observe_images(job.open_images, record))
    return _Encoded(frames, kept, labels, hashes, failures, observed)


def _open_images(schema: Schema) -> tuple[str, ...]:
    """Image features whose schema leaves the format or the channels open."""
    return tuple(name for name, f in schema.items()
                 if isinstance(f, Image) and (f.channels is None or f.encoding == "auto"))


def _observe_images(names: tuple[str, ...], record: Mapping[str, Any]
                    ) -> tuple[tuple[str, str, int], ...]:
    """(name, format, channels) of open images whose value came from a source (a dict)."""
    seen = []
    for name in names:
        value = record[name]
        if isinstance(value, Mapping):
            seen.append((name, sniff_bytes(value["bytes"][:16]), int(value["channels"])))
        elif isinstance(value, bytes) and (header := image_header(value)) is not None:
            seen.append((name, sniff_bytes(value[:16]), header[2]))
        elif isinstance(value, np.ndarray) and value.ndim in (2, 3):
            # Arrays are encoded as PNG when the encoding is left open.
            seen.append((name, "png", value.shape[2] if value.ndim == 3 else 1))
    return tuple(seen)



def _refine_schema(schema: Schema, observed: dict[str, set[tuple[str, int]]]) -> Schema:
    """Pin an image's encoding and channels when every record agreed on them."""
    features = dict(schema)
    for name, seen in observed.items():
        feature = features[name]
        assert isinstance(feature, Image)
        formats = {fmt for fmt, _ in seen}
        channels = {c for _, c in seen}
        if feature.channels is None and len(channels) > 1:
            # Mixed grayscale/colour: readers decode every image to the most channels seen,
            # which is lossless (grey is replicated, alpha added opaque); the bytes stay as
            # they came. Leaving it open would let batches zero-fill the missing channels.
            logger.info("%s: images have %s channels; readers will decode all of them to %d",
                        name, sorted(channels), max(channels))
        features[name] = Image(
            encoding=formats.pop() if feature.encoding == "auto" and len(formats) == 1
            else feature.encoding,
            channels=max(channels) if feature.channels is None and channels
            else feature.channels,
        )
    return Schema(features)


# -- main side -----------------------------------------------------------------------------------


def _chunks(items: Iterator[SourceItem], size: int) -> Iterator[list[SourceItem]]:
    while chunk := list(islice(items, size)):
        yield chunk


@contextlib.contextmanager
def _main_not_rerun(method: str) -> Iterator[None]:
    """Start spawned workers without re-running the user's script in each of them.

    A spawned child imports the parent's main script (as ``__mp_main__``) unless the script
    has no ``__file__``; a script without an ``if __name__ == "__main__":`` guard would then
    start conversions in every worker, forever. The workers need nothing from that script
    (jobs hold tfrecordkit sources), so while they start the main module is shown to them as
    an interactive one, which multiprocessing does not re-import.
    """
    main = sys.modules.get("__main__")
    if method == "fork" or main is None or not hasattr(main, "__file__"):
        yield
        return
    saved_file, saved_spec = main.__file__, getattr(main, "__spec__", None)
    del main.__file__
    main.__spec__ = None
    try:
        yield
    finally:
        main.__file__, main.__spec__ = saved_file, saved_spec


_SMALL_JOB = 500  # items
_BATCH = 256  # items encoded at once in this process


def _parallel_chunks(job: _Job, workers: int
                     ) -> Iterator[tuple[list[SourceItem], _Encoded]]:
    """Encode every item in chunks, in input order, with at most a few chunks in flight.

    Jobs of fewer than 500 items run in this process: starting workers (a second or more
    when they import heavy modules) costs more than it saves.
    """
    items: Iterator[SourceItem] = job.source.items()
    head = list(islice(items, _SMALL_JOB)) if workers > 1 else []
    items = chain(head, items)
    if workers <= 1 or len(head) < _SMALL_JOB:
        for chunk in _chunks(items, _BATCH):
            yield chunk, _encode_items(job, chunk)
        return
    # fork starts fast and shares the source; with TensorFlow loaded, fork is unsafe.
    method = "spawn" if "tensorflow" in sys.modules or sys.platform != "linux" else "fork"
    context = multiprocessing.get_context(method)
    with _main_not_rerun(method), context.Pool(workers, _init_worker, (job,)) as pool:
        pending: deque[tuple[list[SourceItem], Any]] = deque()
        for chunk in _chunks(items, _CHUNK):
            pending.append((chunk, pool.apply_async(_encode_chunk, (chunk,))))
            if len(pending) >= workers * _IN_FLIGHT_PER_WORKER:
                done_chunk, result = pending.popleft()
                yield done_chunk, result.get()
        while pending:
            done_chunk, result = pending.popleft()
            yield done_chunk, result.get()


class _Staging:
    """Hands batches to the writer on one background thread, in order, at most two behind;
    the first error it meets is raised in the caller."""

    def __init__(self, writer: ShardedWriter) -> None:
        self.writer = writer
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="tfrecordkit-staging")
        self.pending: deque[Future[None]] = deque()

    def _submit(self, function: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        self.pending.append(self.pool.submit(function, *args, **kwargs))
        while len(self.pending) > 2 or (self.pending and self.pending[0].done()):
            self.pending.popleft().result()

    def add(self, frames: EncodedFrames, splits: list[str], labels: list[int | None],
            hashes: list[int] | None, keys: list[str]) -> None:
        self._submit(self.writer.add_frames, frames, splits=splits, labels=labels,
                     hashes=hashes, keys=keys)

    def skip(self, input_name: str, reason: str) -> None:
        self._submit(self.writer.skip, input_name, reason)

    def __enter__(self) -> _Staging:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            if exc_type is None:
                while self.pending:
                    self.pending.popleft().result()
        finally:
            for future in self.pending:
                future.cancel()
            self.pool.shutdown(wait=True)


class _SplitAssigner:
    def __init__(self, split: SplitSpec, seed: int) -> None:
        self.seed = seed
        self.bounds: list[tuple[float, str]] = []
        self.single: str | None = None
        if isinstance(split, str):
            self.single = split
            return
        total = sum(split.values())
        if not split or total <= 0 or any(v < 0 for v in split.values()):
            raise ValueError(f"split ratios must be non-negative and sum above 0; got {split}")
        acc = 0.0
        for name, ratio in split.items():
            acc += ratio / total
            self.bounds.append((acc, name))

    def __call__(self, item: SourceItem) -> str:
        if item.split is not None:
            return item.split
        if self.single is not None:
            return self.single
        u = record_hash(item.key, self.seed, "split") / 2**64
        return next((name for bound, name in self.bounds if u < bound), self.bounds[-1][1])


def _plan_id(source: Source, schema: Schema, options: ShardOptions, split: SplitSpec,
             label_feature: str | None) -> str:
    plan = {
        "source": source.description, "schema": schema.to_json(), "options": repr(options),
        "split": split if isinstance(split, str) else dict(split), "label": label_feature,
    }
    return hashlib.sha256(json.dumps(plan, sort_keys=True, default=str).encode()).hexdigest()


def convert(
    source: Source,
    out_dir: str | os.PathLike[str],
    *,
    schema: Schema | None = None,
    split: SplitSpec = "train",
    layout: Literal["mixed", "per_class"] = "mixed",
    shard_size: int = DEFAULT_SHARD_SIZE,
    num_shards: int | None = None,
    min_shards: int = 1,
    compression: str | None = None,
    seed: int = 0,
    shuffle: bool = True,
    workers: int | None = None,
    on_error: Literal["raise", "skip"] = "raise",
    overwrite: bool = False,
    label_feature: str | None = None,
    progress: bool | Callable[[int, int], None] = False,
    storage_options: dict[str, Any] | None = None,
    engine: Literal["local", "ray"] = "local",
) -> ConversionResult:
    """Convert ``source`` into a dataset directory of TFRecord shards plus ``dataset.json``.

    Args:
        source: where records come from (see :mod:`tfrecordkit.sources`).
        out_dir: the dataset directory: a local path, or a URL (``s3://bucket/ds``,
            ``gs://...``; shards are staged locally and uploaded, ``dataset.json`` last).
        schema: the features (default: the source's own schema).
        split: a split name, or ratios such as ``{"train": 0.9, "val": 0.1}`` (seeded, by key).
        layout: ``"mixed"`` shards, or ``"per_class"`` (each class in its own shards).
        shard_size: target bytes per shard; ``num_shards`` fixes the count instead.
        min_shards: at least this many shards per split (mixed layout).
        compression: None, ``"gzip"`` or ``"zlib"``.
        seed: seeds the write-time shuffle and the split assignment.
        shuffle: shuffle records at write time; else keep input order.
        workers: encoding processes (default: all cores; 0 or 1 encodes in this process).
        on_error: ``"raise"`` on the first bad input, or ``"skip"`` it (listed in the manifest).
        overwrite: replace an existing dataset in ``out_dir``.
        label_feature: the class-label feature (default: the schema's first ClassLabel).
        progress: show a progress bar on stderr, or a ``callback(records, bytes)``.
        storage_options: options for the URL's filesystem (fsspec), e.g. credentials or
            ``{"client_kwargs": {"endpoint_url": ...}}``.
        engine: ``"local"`` (processes on this machine) or ``"ray"`` (the connected Ray
            cluster, extra ``ray``): the same shards with the write-time shuffle.

    Raises:
        SourceError: an input is unreadable (with ``on_error="raise"``); names the input.
        DatasetError: ``out_dir`` holds a dataset and ``overwrite`` is False.
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip'; got {on_error!r}")
    schema = schema or source.schema()
    if label_feature is None and (found := schema.class_label()) is not None:
        label_feature = found[0]
    options = ShardOptions(shard_size=shard_size, num_shards=num_shards, min_shards=min_shards,
                           compression=compression, layout=layout, seed=seed, shuffle=shuffle)
    assign_split = _SplitAssigner(split, seed)
    if workers is None:
        workers = 1 if source.in_process else (os.cpu_count() or 1)
    from tfrecordkit import __version__

    started = time.perf_counter()
    if engine == "ray":
        from tfrecordkit.ray._engine import convert_on_ray

        manifest = convert_on_ray(
            source, out_dir, schema=schema, split=split, options=options,
            label_feature=label_feature, on_error=on_error, overwrite=overwrite,
            created_by={"tool": "tfrecordkit", "version": __version__,
                        "source": source.description,
                        "split": split if isinstance(split, str) else dict(split)},
            storage_options=storage_options)
        where_ray: Path | str = Path(out_dir) if Storage.of(out_dir).local else os.fspath(
            out_dir)
        return ConversionResult(where_ray, manifest, time.perf_counter() - started, False)
    if engine != "local":
        raise ValueError(f"engine must be 'local' or 'ray'; got {engine!r}")
    writer = ShardedWriter(
        out_dir, schema, options, label_feature=label_feature, overwrite=overwrite,
        # An empty plan id never resumes: used when the source's data can't be identified.
        plan_id=_plan_id(source, schema, options, split, label_feature)
        if getattr(source, "resumable", True) else "",
        created_by={"tool": "tfrecordkit", "version": __version__, "source": source.description,
                    "split": split if isinstance(split, str) else dict(split)},
        storage_options=storage_options,
    )
    report = _progress_reporter(progress)
    with writer:
        if writer.resumed:
            logger.info("%s: resuming from a completed spill", out_dir)
        else:
            observed: dict[str, set[tuple[str, int]]] = {}
            job = _Job(source, schema, label_feature, seed if shuffle else None,
                       _open_images(schema))
            # Staging (grouping, spill writes) runs on a thread while the next chunk encodes.
            with _Staging(writer) as staging:
                for chunk, encoded in _parallel_chunks(job, workers):
                    for position, reason in encoded.failures:
                        item = chunk[position]
                        if on_error == "raise":
                            raise SourceError(source.describe(item), reason)
                        logger.info("skipping %s: %s", source.describe(item), reason)
                        staging.skip(source.describe(item), reason)
                    kept = [chunk[p] for p in encoded.kept]
                    staging.add(encoded.frames, [assign_split(i) for i in kept],
                                encoded.labels, encoded.hashes, [i.key for i in kept])
                    for name, fmt, channels in encoded.observed:
                        observed.setdefault(name, set()).add((fmt, channels))
                    report(len(kept), len(encoded.frames.buffer))
            writer.schema = _refine_schema(schema, observed)
        manifest = writer.finish()
        report(0, 0, done=True)
    if manifest.skipped_count:
        logger.warning("skipped %d input(s); they are listed in %s/dataset.json",
                       manifest.skipped_count, out_dir)
    where: Path | str = Path(out_dir) if writer.storage.local else os.fspath(out_dir)
    return ConversionResult(where, manifest, time.perf_counter() - started, writer.resumed)


def _progress_reporter(progress: bool | Callable[[int, int], None]) -> Callable[..., None]:
    if callable(progress):
        user = progress
        return lambda records, nbytes, done=False: None if done else user(records, nbytes)
    if not progress:
        return lambda records, nbytes, done=False: None
    from tqdm import tqdm

    bar = tqdm(desc="converting", unit="rec", unit_scale=True, file=sys.stderr, mininterval=0.5)
    state = {"bytes": 0, "last": 0.0}
    start = time.perf_counter()

    def report(records: int, nbytes: int, done: bool = False) -> None:
        if done:
            bar.close()
            return
        state["bytes"] += nbytes
        bar.update(records)
        now = time.perf_counter()
        if now - state["last"] > 0.5:
            state["last"] = now
            bar.set_postfix_str(f"{state['bytes'] / 1e6 / max(now - start, 1e-9):.1f} MB/s",
                                refresh=False)

    return report


def write_dataset(
    records: Iterable[Mapping[str, Any]] | Mapping[str, Iterable[Mapping[str, Any]]],
    out_dir: str | os.PathLike[str],
    schema: Schema,
    **options: Any,
) -> ConversionResult:
    """Write records (``{feature: value}`` dicts) as a dataset; see :func:`convert` for options.

    ``records`` may also map split names to iterables of records (explicit splits).
    """
    return convert(Records(records, schema), out_dir, schema=schema, **options)
