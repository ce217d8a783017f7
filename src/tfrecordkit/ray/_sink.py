"""``write_dataset``: the rows of any Ray Dataset as a tfrecordkit dataset, written by the Ray
engine (the same plan, shards and manifest as :func:`tfrecordkit.write_dataset` would give)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from tfrecordkit.convert import ConversionResult, run_conversion
from tfrecordkit.job import ConversionJob, SplitSpec
from tfrecordkit.schema import Schema
from tfrecordkit.sources import Records
from tfrecordkit.store import ShardOptions

if TYPE_CHECKING:
    import ray.data

__all__ = ["write_dataset"]


def write_dataset(
    ds: ray.data.Dataset,
    out_dir: str | os.PathLike[str],
    schema: Schema,
    *,
    key: str | None = None,
    split: SplitSpec = "train",
    shards: ShardOptions | None = None,
    on_error: Literal["raise", "skip"] = "raise",
    overwrite: bool = False,
    label_feature: str | None = None,
    progress: bool | Callable[[int, int], None] = False,
    storage_options: dict[str, Any] | None = None,
    stratify: bool = False,
) -> ConversionResult:
    """Write the rows of a Ray Dataset (one column per feature of ``schema``) as a dataset.

    Shards are written by Ray tasks (one per shard, retried if a worker dies) and
    ``dataset.json`` last, so a failed job leaves no manifest. ``split``, ``shards``,
    ``on_error``, ``overwrite``, ``label_feature``, ``progress``, ``storage_options`` and
    ``stratify`` are :func:`tfrecordkit.convert`'s.

    Args:
        ds: the rows; columns not in ``schema`` are ignored.
        out_dir: the dataset directory: a local path (shared by every node) or a URL.
        schema: the features.
        key: a column whose value identifies each row (e.g. a path); the write-time shuffle
            and the split assignment hash it. Default: the row's position in ``ds``, which is
            reproducible only when Ray keeps the order
            (``DataContext.execution_options.preserve_order``).

    Raises:
        ValueError: ``ds`` lacks a feature's column (or ``key``).
        SourceError: a row doesn't fit the schema (with ``on_error="raise"``); names the row.
    """
    from tfrecordkit.engines.ray_data import write_ray_dataset

    job = ConversionJob.build(
        Records([], schema, "Ray Dataset"), out_dir, schema=schema, split=split, shards=shards,
        on_error=on_error,
        overwrite=overwrite, label_feature=label_feature, storage_options=storage_options,
        stratify=stratify)
    return run_conversion(
        job, lambda report: (write_ray_dataset(ds, job, key=key, report=report), False),
        progress=progress)
