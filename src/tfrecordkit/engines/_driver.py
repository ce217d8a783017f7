"""The one conversion driver every engine runs under. An engine does the two steps that depend on
where records wait: it **stages** a job (encodes every input, holds the records that encoded
where it can put them in write order, and tallies them) and **writes** the shards it is given.
The rest is the driver's, the same for every engine: the write plan from the tally
(:func:`~tfrecordkit.store.plan_split`), the schema the images turned out to describe, and
``dataset.json`` last (:func:`~tfrecordkit.store.finalize_manifest`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Protocol

from tfrecordkit.format import Storage
from tfrecordkit.job import ConversionJob
from tfrecordkit.store import Manifest, ShardInfo, ShardSpec, Tally, finalize_manifest, plan_split

__all__ = ["Engine", "Plans", "drive"]

#: Each split's planned shards, or ``None`` where the engine cuts them by size in write order
#: (no write-time shuffle left to do: :meth:`ShardOptions.streams`), as ``StreamCut`` does.
Plans = Mapping[str, Sequence[ShardSpec] | None]


class Engine(Protocol):
    """What the driver needs of an engine (used as a context manager: leaving it with an
    error drops what was staged and writes no manifest)."""

    storage: Storage  # where the dataset goes

    @property
    def streams(self) -> bool:
        """Whether shards are cut by size as records come, with no plan (see :data:`Plans`)."""
        ...

    def stage(self, job: ConversionJob, report: Callable[..., None]) -> Tally:
        """Encode every input of ``job``, hold the records that encoded in write order (or
        where the engine can order them), and tally them."""
        ...

    def write(self, plans: Plans, report: Callable[..., None]) -> dict[str, list[ShardInfo]]:
        """Write each split's shards as ``plans`` lays them out; their stats, split by split
        in plan order."""
        ...

    def __enter__(self) -> Engine: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None: ...


def drive(job: ConversionJob, engine: Engine, report: Callable[..., None]) -> Manifest:
    """Run ``job`` on ``engine``: stage, plan, write, then the manifest, written last (none
    if any step fails). ``report(records, bytes)`` sees the engine's progress."""
    with engine:
        tally = engine.stage(job, report)
        part = job.append.tag if job.append is not None else ""
        plans = {split: None if engine.streams else plan_split(split, totals, job.options, part)
                 for split, totals in sorted(tally.totals.items())}
        shards = engine.write(plans, report)
        try:
            return _finalize(job, engine, tally, shards)
        except BaseException:
            if job.append is not None:  # its shards carry its own tag: no one else's go
                _remove_written(job.out_dir, engine.storage, shards)
            raise


def _finalize(job: ConversionJob, engine: Engine, tally: Tally,
              shards: Mapping[str, Sequence[ShardInfo]]) -> Manifest:
    return finalize_manifest(
        job.out_dir, shards, schema=job.described(tally.observed), options=job.options,
        label_feature=job.label_feature, skipped=tally.skipped,
        skipped_count=tally.skipped_count, created_by=job.created_by,
        expected=tally.expected, storage=engine.storage,
        base=job.append.base if job.append is not None else None,
        base_version=job.append.version if job.append is not None else None,
        part=job.append.part if job.append is not None else 0)


def _remove_written(directory: str, storage: Storage,
                    shards: Mapping[str, Sequence[ShardInfo]]) -> None:
    """Remove the shards (and their sidecars) this job wrote, which no manifest lists."""
    for written in shards.values():
        for shard in written:
            for name in (shard.file, shard.index, shard.restarts, shard.digests):
                if name:
                    storage.remove(storage.join(directory, name))
