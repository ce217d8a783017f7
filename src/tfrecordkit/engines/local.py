"""The local engine: encoding in worker processes (or threads) on this machine, a bounded number
of chunks in flight, results in input order, staged in a :class:`~tfrecordkit.store.ShardedWriter`
(held in memory, spilled, or streamed into shards), run by the driver every engine shares
(:func:`~tfrecordkit.engines._driver.drive`: plan, write, manifest last)."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import sys
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import chain, islice
from types import TracebackType
from typing import Any

from tfrecordkit.engines._driver import Plans, drive
from tfrecordkit.job import (
    ConversionJob,
    EncodedChunk,
    EncodeJob,
    encode_items,
)
from tfrecordkit.sources import SourceItem, SourceTraits
from tfrecordkit.store import Manifest, ShardedWriter, ShardInfo, Tally

__all__ = ["run_local"]

logger = logging.getLogger(__name__)

_CHUNK = 32  # items per worker task
_IN_FLIGHT_PER_WORKER = 4


_worker_job: EncodeJob | None = None


def _init_worker(job: EncodeJob) -> None:
    global _worker_job  # noqa: PLW0603 -- one per worker process, set once
    _worker_job = job


def _encode_chunk(chunk: list[SourceItem]) -> EncodedChunk:
    """Load, encode and frame a chunk of items (in a worker)."""
    assert _worker_job is not None
    return encode_items(_worker_job, chunk)


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


def _parallel_chunks(job: EncodeJob, workers: int, items: Iterator[SourceItem]
                     ) -> Iterator[tuple[list[SourceItem], EncodedChunk]]:
    """Encode every one of ``items`` in chunks, in their order, with at most a few chunks in flight.

    Sources whose loading releases the GIL (``threaded``: file reads, libjpeg-turbo) encode
    on threads of this process: nothing is pickled or piped. Others use worker processes,
    except jobs of fewer than 500 items, which run in this process: starting workers (a
    second or more when they import heavy modules) costs more than it saves.
    """
    if workers > 1 and SourceTraits.of(job.source).threaded:
        with ThreadPoolExecutor(workers, thread_name_prefix="tfrecordkit-encode") as threads:
            yield from _in_order(
                ((chunk, threads.submit(encode_items, job, chunk))
                 for chunk in _chunks(items, _BATCH)), workers, Future.result)
        return
    head = list(islice(items, _SMALL_JOB)) if workers > 1 else []
    items = chain(head, items)
    if workers <= 1 or len(head) < _SMALL_JOB:
        for chunk in _chunks(items, _BATCH):
            yield chunk, encode_items(job, chunk)
        return
    # fork starts fast and shares the source; with TensorFlow loaded, fork is unsafe.
    method = "spawn" if "tensorflow" in sys.modules or sys.platform != "linux" else "fork"
    context = multiprocessing.get_context(method)
    with _main_not_rerun(method), context.Pool(workers, _init_worker, (job,)) as pool:
        yield from _in_order(((chunk, pool.apply_async(_encode_chunk, (chunk,)))
                              for chunk in _chunks(items, _CHUNK)), workers,
                             lambda result: result.get())


def _in_order(submitted: Iterator[tuple[list[SourceItem], Any]], workers: int,
              result: Callable[[Any], EncodedChunk]
              ) -> Iterator[tuple[list[SourceItem], EncodedChunk]]:
    """The results of chunks submitted to a pool, in order, a few per worker in flight."""
    pending: deque[tuple[list[SourceItem], Any]] = deque()
    for submission in submitted:
        pending.append(submission)
        if len(pending) >= workers * _IN_FLIGHT_PER_WORKER:
            done_chunk, handle = pending.popleft()
            yield done_chunk, result(handle)
    while pending:
        done_chunk, handle = pending.popleft()
        yield done_chunk, result(handle)


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

    def add(self, encoded: EncodedChunk, splits: list[str]) -> None:
        self._submit(self.writer.add_frames, encoded.frames, splits=splits,
                     labels=encoded.labels, hashes=encoded.hashes, ids=encoded.ids)

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


class _LocalEngine:
    """Encodes in worker processes (or threads) of this machine and stages the records in a
    :class:`~tfrecordkit.store.ShardedWriter` (in memory up to a budget, else a spill on
    disk, or straight into shards cut by size), which writes the planned shards."""

    def __init__(self, job: ConversionJob, *, workers: int, plan_id: str) -> None:
        self.workers = workers
        self.writer = ShardedWriter(
            job.out_dir, job.schema, job.options, label_feature=job.label_feature,
            overwrite=job.overwrite, plan_id=plan_id, created_by=job.created_by,
            storage_options=job.storage_options, presorted=job.presorted,
            append_to=job.append.base if job.append else None,
            part=job.append.tag if job.append else "", lock_held=job.append is not None)
        self.storage = self.writer.storage

    @property
    def streams(self) -> bool:
        return self.writer.streaming

    @property
    def resumed(self) -> bool:
        return self.writer.resumed

    def stage(self, job: ConversionJob, report: Callable[..., None]) -> Tally:
        writer = self.writer
        if writer.resumed:  # the spill's tally (and its records) as the killed run left them
            logger.info("%s: resuming from a completed spill", job.out_dir)
            return writer.tally
        assign_split = job.split_assigner()
        source = job.source
        # Staging (grouping, spill writes) runs on a thread while the next chunk encodes.
        with _Staging(writer) as staging:
            for chunk, encoded in _parallel_chunks(job.encode_job(), self.workers, job.items()):
                for position, reason in encoded.failures:
                    skipped = job.skipped(source.describe(chunk[position]), reason)
                    staging.skip(skipped["input"], skipped["reason"])
                kept = [chunk[p] for p in encoded.kept]
                splits = [assign_split(item, label)
                          for item, label in zip(kept, encoded.labels, strict=True)]
                staging.add(encoded, splits)
                writer.tally.observed.add(encoded.observed)
                report(len(kept), len(encoded.frames.buffer))
                if encoded.present:
                    report(0, 0, present=len(encoded.present))
        return writer.tally

    def write(self, plans: Plans, report: Callable[..., None]) -> dict[str, list[ShardInfo]]:
        return self.writer.write_shards(plans)

    def __enter__(self) -> _LocalEngine:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if exc_type is None:
            self.writer.close()
        else:  # what was staged dropped, the lock let go
            self.writer.__exit__(exc_type, exc, traceback)


def run_local(job: ConversionJob, *, workers: int, plan_id: str,
              report: Callable[..., None]) -> tuple[Manifest, bool]:
    """Run ``job`` with ``workers`` encoding processes (0 or 1: in this process); returns the
    manifest (written last) and whether a completed spill was resumed. ``plan_id`` identifies
    the work for resuming ("" never resumes); ``report(records, bytes)`` sees progress
    (``report(0, 0, present=n)``: inputs an append found in the dataset already)."""
    engine = _LocalEngine(job, workers=workers, plan_id=plan_id)
    return drive(job, engine, report), engine.resumed
