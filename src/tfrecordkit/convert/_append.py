"""``append``: new records into new shards of an existing dataset, the manifest replaced last;
every input's split and class id as a conversion of everything at once would give them."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, Literal

from tfrecordkit.convert._pipeline import ConversionResult, run_conversion
from tfrecordkit.convert._source_choice import open_source
from tfrecordkit.errors import DatasetError, OptionError
from tfrecordkit.format import Storage
from tfrecordkit.job import AppendTarget, ConversionJob, grown_schema, open_images
from tfrecordkit.sources import Source, SplitSources
from tfrecordkit.store import MANIFEST_NAME, Manifest, load_manifest, output_lock

__all__ = ["append"]

logger = logging.getLogger(__name__)


def append(
    dataset: str | os.PathLike[str],
    source: Source | str | os.PathLike[str] | Mapping[str, Any],
    *,
    split: str | None = None,
    new_split: bool = False,
    dedupe: bool = True,
    workers: int | None = None,
    engine: Literal["local", "ray"] = "local",
    on_error: Literal["raise", "skip"] = "raise",
    progress: bool | Callable[[int, int], None] = False,
    storage_options: dict[str, Any] | None = None,
) -> ConversionResult:
    """Add ``source``'s records to the dataset in ``dataset``, as new shards.

    Each new record goes to the split the dataset's rule gives its key (its path under the
    folder, a table's key), so converting everything at once and converting, then appending,
    put every record in the same split. Classes are matched by name: a known class keeps its
    id, a new one gets the next id (added to the schema's names). An input whose key and
    content the dataset holds already is left out (counted in the result); one whose key it
    holds with other content is an error naming both (or skipped, with ``on_error="skip"``).
    The dataset's shards are never rewritten; ``dataset.json`` is replaced last, atomically:
    an append that fails or is killed leaves the dataset as it was, and running it again
    finishes it.

    Args:
        dataset: the dataset directory (a path or a URL) to add to.
        source: where the new records come from, as for :func:`~tfrecordkit.convert`.
        split: put every new record in this split, one the dataset has, instead of following
            the dataset's split rule.
        new_split: let ``split`` name a split the dataset does not have yet (it is created).
        dedupe: leave out inputs the dataset holds already (the default); False appends to a
            dataset whose shards keep no record digests (written by an older release, or
            adopted), where they cannot be recognised.
        workers, engine, on_error, progress, storage_options: as for
            :func:`~tfrecordkit.convert`.

    Raises:
        DatasetError: no dataset there, another conversion is writing it (or replaced its
            manifest while this append ran), its split rule is unknown (adopted data: give
            ``split``), or its shards keep no digests (and ``dedupe``).
        OptionError: ``split`` is not one of the dataset's splits (without ``new_split``).
        SchemaError: the source's features differ from the dataset's (naming the feature).
    """
    if isinstance(source, str | os.PathLike | Mapping):
        source = open_source(source)
    elif not isinstance(source, Source):
        raise OptionError(f"source must be a path or a source (tk.open_source(path), "
                          f"tk.sources...); got {type(source).__name__}")
    if split is not None and not isinstance(split, str):
        raise OptionError(f"split must be a split name; got {split!r} (the dataset's own "
                          "ratios apply when it is left out)")
    if not isinstance(new_split, bool) or not isinstance(dedupe, bool):
        raise OptionError(f"new_split and dedupe are True or False; got {new_split!r}, "
                          f"{dedupe!r}")
    where = os.fspath(dataset)
    storage = Storage.of(where, storage_options)
    if not storage.exists(storage.join(where, MANIFEST_NAME)):
        load_manifest(where, storage=storage)  # no dataset there: its one-line error
    lock = output_lock(where, storage)
    lock.acquire()  # before the manifest is read: an append reads what it will replace
    try:
        return _append(where, storage, source, split=split, new_split=new_split,
                       dedupe=dedupe, workers=workers, engine=engine, on_error=on_error,
                       progress=progress, storage_options=storage_options)
    finally:
        lock.release()


def _append(where: str, storage: Storage, source: Source, *, split: str | None,
            new_split: bool, dedupe: bool, workers: int | None, engine: str, on_error: str,
            progress: bool | Callable[[int, int], None],
            storage_options: dict[str, Any] | None) -> ConversionResult:
    """:func:`append`'s work, under the dataset's lock."""
    version = storage.version(storage.join(where, MANIFEST_NAME))
    base = load_manifest(where, storage=storage)
    if split is not None and split not in base.splits and not new_split:
        raise OptionError(f"{where}: has no split {split!r} (it has {sorted(base.splits)}); "
                          "give new_split=True (--new-split) to create it")
    target = AppendTarget.load(base, where, storage, version)
    if target.known.unknown and dedupe:
        raise DatasetError(f"{where}: {len(target.known.unknown)} shard(s) keep no record "
                           f"digests (written by an older release, or adopted), e.g. "
                           f"{target.known.unknown[0]}: inputs already in them cannot be left "
                           "out; give dedupe=False (--no-dedupe) to append anyway")
    job = _job(target, source, where, split=split, new_split=new_split, on_error=on_error,
               storage_options=storage_options)
    if workers is None:
        workers = 1 if source.in_process else (os.cpu_count() or 1)
    counted = [0]

    def counting(run: Callable[[Callable[..., None]], tuple[Manifest, bool]]
                 ) -> Callable[[Callable[..., None]], tuple[Manifest, bool]]:
        """``run`` with its reports of inputs already in the dataset counted."""
        def wrapped(report: Callable[..., None]) -> tuple[Manifest, bool]:
            def seen(records: int, nbytes: int, done: bool = False, present: int = 0) -> None:
                counted[0] += present
                report(records, nbytes, done=done, present=present)
            return run(seen)
        return wrapped

    if engine == "ray":
        from tfrecordkit.engines.ray_data import run_on_ray

        result = run_conversion(job, counting(lambda report: (run_on_ray(job, report=report),
                                                               False)), progress=progress)
    elif engine == "local":
        from tfrecordkit.engines.local import run_local

        result = run_conversion(job, counting(lambda report: run_local(
            job, workers=workers, report=report, plan_id="")), progress=progress)
    else:
        raise OptionError(f"engine must be 'local' or 'ray'; got {engine!r}")
    before = sum(s.records for s in base.splits.values())
    return dataclasses.replace(result, added=result.records - before, present=counted[0],
                               part=target.part)


def _job(target: AppendTarget, source: Source, where: str, *, split: str | None,
         new_split: bool, on_error: str, storage_options: dict[str, Any] | None) -> ConversionJob:
    """The conversion job that writes ``source``'s new records as ``target``'s next part."""
    base = target.base
    if hasattr(source, "for_dataset"):  # keyed and shaped as the dataset's records were
        source = source.for_dataset(base.created_by, base.schema)
    if isinstance(source, SplitSources):  # each record's split is its source's
        if split is not None:
            raise OptionError("a split -> source mapping gives each record its split: give "
                              "split= or a mapping, not both")
        missing = sorted(set(source.parts) - set(base.splits))
        if missing and not new_split:
            raise OptionError(f"{where}: has no split {missing[0]!r} (it has "
                              f"{sorted(base.splits)}); give new_split=True (--new-split) to "
                              "create it")
        split = next(iter(source.parts))  # a name for the job: the items name their own
    rule, stratified = target.split_rule(split)
    if stratified and not isinstance(rule, str):
        logger.info("%s was split with exact per-class counts (stratify=True); appended "
                    "records are split by key and seed alone", where)
    schema = open_images(grown_schema(base.schema, source.schema(), source.description),
                         source.schema())
    job = ConversionJob.build(
        source, where, schema=schema, split=rule, shards=target.shard_options(),
        on_error=on_error, overwrite=False, label_feature=base.label_feature,
        storage_options=storage_options, stratify=False).with_vocabularies()
    if job.schema.keys() != base.schema.keys():  # provenance on one side only
        only = sorted(job.schema.keys() ^ base.schema.keys())
        raise OptionError(f"{where}: the dataset's records and the new ones differ in "
                          f"{only} (each record's input is stored by conversions of folders "
                          "and tables): append records of the kind the dataset was made from")
    return dataclasses.replace(job, append=target,
                               created_by=target.created_by(source.description))
