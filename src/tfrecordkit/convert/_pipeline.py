"""``convert`` and ``write_dataset``: check the arguments, make the job, and run it on the chosen
engine (local processes by default); the same inputs and seed always give byte-identical shards.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict, Unpack

from tfrecordkit.convert._source_choice import open_source
from tfrecordkit.errors import OptionError
from tfrecordkit.format import Storage
from tfrecordkit.job import ConversionJob, SplitSpec
from tfrecordkit.schema import Schema
from tfrecordkit.sources import Records, Source
from tfrecordkit.store import Manifest, ShardOptions

__all__ = ["ConversionResult", "convert", "run_conversion", "write_dataset"]

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class ConversionResult:
    """What a conversion produced, and how fast.

    Attributes:
        path: the dataset directory (a local ``Path``, or a URL).
        manifest: the :class:`~tfrecordkit.store.Manifest` written as ``dataset.json``
            (splits, shards, class counts, the inputs skipped and why).
        seconds: wall time of the conversion.
        resumed: whether it continued an interrupted run.
        ignored_count: files in the source's folders that are not its media (a
            ``notes.txt`` in a class folder), passed over; ``ignored`` lists the first 100.
        records: records written (a property, over all splits); ``bytes`` likewise.
        added: for an append, the records it added (``records`` counts the whole dataset);
            ``present`` the inputs left out as already there, ``part`` the append's number.
    """

    path: Path | str  # a local folder, or a URL
    manifest: Manifest
    seconds: float
    resumed: bool
    ignored_count: int = 0
    ignored: tuple[str, ...] = ()
    added: int | None = None
    present: int = 0
    part: int = 0

    @property
    def records(self) -> int:
        """Records written, over all splits."""
        return sum(s.records for s in self.manifest.splits.values())

    @property
    def bytes(self) -> int:
        """Bytes of shards written, over all splits."""
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
            "ignored_count": self.ignored_count,
            "ignored": list(self.ignored),
            **({"appended": {"records": self.added, "already_present": self.present,
                             "part": self.part}} if self.added is not None else {}),
        }

    def summary(self) -> str:
        """Human-readable summary: records per split and class, shards, bytes, skipped inputs."""
        m = self.manifest
        seconds = max(self.seconds, 1e-9)
        lines = [
            f"wrote {self.records} records ({self.bytes / 1e6:.1f} MB) to {self.path} in "
            f"{self.seconds:.1f}s ({self.records / seconds:,.0f} rec/s, "
            f"{self.bytes / 1e6 / seconds:.1f} MB/s){' (resumed)' if self.resumed else ''}"
        ] if self.added is None else [
            f"appended {self.added} records to {self.path} in {self.seconds:.1f}s as part "
            f"{self.part} ({self.present} input(s) already there, left out); it now holds "
            f"{self.records} records ({self.bytes / 1e6:.1f} MB)"]
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
        if self.ignored_count:
            lines.append(f"  ignored {self.ignored_count} file(s) that are not its media: "
                         + ", ".join(self.ignored[:5])
                         + (" ..." if self.ignored_count > 5 else ""))
        return "\n".join(lines)


def _plan_id(source: Source, schema: Schema, options: ShardOptions, split: SplitSpec,  # noqa: PLR0917
             label_feature: str | None, stratify: bool) -> str:
    plan = {
        "source": source.description, "schema": schema.to_json(), "options": repr(options),
        "split": split if isinstance(split, str) else dict(split), "label": label_feature,
        "stratify": stratify,
    }
    return hashlib.sha256(json.dumps(plan, sort_keys=True, default=str).encode()).hexdigest()


def convert(
    source: Source | str | os.PathLike[str] | Mapping[str, Any],
    out_dir: str | os.PathLike[str],
    *,
    schema: Schema | None = None,
    split: SplitSpec = "train",
    shards: ShardOptions | None = None,
    label_feature: str | None = None,
    stratify: bool = False,
    workers: int | None = None,
    engine: Literal["local", "ray"] = "local",
    on_error: Literal["raise", "skip"] = "raise",
    overwrite: bool = False,
    progress: bool | Callable[[int, int], None] = False,
    storage_options: dict[str, Any] | None = None,
) -> ConversionResult:
    """Convert ``source`` into a dataset directory of TFRecord shards plus ``dataset.json``.

    Args:
        source: where records come from (see :mod:`tfrecordkit.sources`), or a path, opened
            with :func:`open_source`'s defaults.
        out_dir: the dataset directory: a local path, or a URL (``s3://bucket/ds``,
            ``gs://...``; shards are staged locally and uploaded, ``dataset.json`` last).
        schema: the features (default: the source's own schema).
        split: a split name, or ratios such as ``{"train": 0.9, "val": 0.1}``: each input's
            split is a function of its key (its path under the folder, a table's row) and the
            seed alone, so converting a grown folder again puts every old input in the same
            split (each class keeps its proportions in expectation). Inputs that name their
            split (folders ``train/``, ``val/``; a mapping of records) keep it.
        shards: how records are laid out into shards (:class:`~tfrecordkit.ShardOptions`:
            size or count, ``layout="per_class"``, compression, and the ``seed`` and
            ``shuffle`` of the write-time shuffle and split assignment); default
            ``ShardOptions()``.
        label_feature: the class-label feature (default: the schema's first ClassLabel).
        stratify: with split ratios and a class label, make every class's split counts exact
            (within one record of the ratios) by counting within each class in input order
            instead; then one more file can move others between splits when the data grows.
        workers: encoding processes, or threads for sources whose loading releases the GIL
            (default: all cores; 0 or 1 encodes in this process).
        on_error: ``"raise"`` on the first bad input, or ``"skip"`` it (listed in the manifest).
        overwrite: replace an existing dataset in ``out_dir``.
        progress: show a progress bar on stderr, or a ``callback(records, bytes)``.
        storage_options: options for the URL's filesystem (fsspec), e.g. credentials or
            ``{"client_kwargs": {"endpoint_url": ...}}``.
        engine: ``"local"`` (processes on this machine) or ``"ray"`` (the connected Ray
            cluster, extra ``ray``): the same shards with the write-time shuffle.

    Raises:
        SourceError: an input is unreadable (with ``on_error="raise"``); names the input.
        DatasetError: ``out_dir`` holds a dataset and ``overwrite`` is False.
    """
    if isinstance(source, str | os.PathLike | Mapping):
        source = open_source(source)
    elif not isinstance(source, Source):
        raise OptionError(f"source must be a path or a source (tk.open_source(path), "
                          f"tk.sources...); got {type(source).__name__}")
    job = ConversionJob.build(
        source, out_dir, schema=schema, split=split, shards=shards, on_error=on_error,
        overwrite=overwrite, label_feature=label_feature, storage_options=storage_options,
        stratify=stratify).with_vocabularies()
    if workers is None:
        workers = 1 if source.in_process else (os.cpu_count() or 1)
    # Engines sit above convert (they run its jobs); each is imported only when chosen.
    if engine == "ray":
        from tfrecordkit.engines.ray_data import run_on_ray

        return run_conversion(job, lambda report: (run_on_ray(job, report=report), False),
                              progress=progress)
    if engine != "local":
        raise OptionError(f"engine must be 'local' or 'ray'; got {engine!r}")
    from tfrecordkit.engines.local import run_local

    # An empty plan id never resumes: used when the source's data can't be identified.
    plan_id = (_plan_id(source, job.schema, job.options, split, job.label_feature,
                        job.stratify)
               if job.traits.resumable else "")
    return run_conversion(
        job, lambda report: run_local(job, workers=workers, report=report, plan_id=plan_id),
        progress=progress)


def run_conversion(job: ConversionJob,
                   run: Callable[[Callable[..., None]], tuple[Manifest, bool]], *,
                   progress: bool | Callable[[int, int], None] = False) -> ConversionResult:
    """Run ``job`` with an engine's ``run(report) -> (manifest, resumed)``, timed, with a
    progress bar or callback, warning about skipped inputs."""
    started = time.perf_counter()
    report = _progress_reporter(progress)
    try:
        manifest, resumed = run(report)
    finally:  # closed on failure too: an error then starts on a line of its own
        report(0, 0, done=True)
    if manifest.skipped_count:
        logger.warning("skipped %d input(s); they are listed in %s/dataset.json",
                       manifest.skipped_count, job.out_dir)
    where: Path | str = Path(job.out_dir) if Storage.of(job.out_dir).local else job.out_dir
    ignored = tuple(getattr(job.source, "ignored", ()))
    ignored_count = int(getattr(job.source, "ignored_count", 0))
    if ignored_count:
        logger.warning("ignored %d file(s) that are not %s media, e.g. %s", ignored_count,
                       job.source.description.split(":", 1)[0], ignored[0])
    return ConversionResult(where, manifest, time.perf_counter() - started, resumed,
                            ignored_count, ignored)


def _progress_reporter(progress: bool | Callable[[int, int], None]) -> Callable[..., None]:
    if callable(progress):
        user = progress
        return (lambda records, nbytes, done=False, present=0:
                None if done or present else user(records, nbytes))
    if not progress:
        return lambda records, nbytes, done=False, present=0: None
    from tqdm import tqdm

    bar = tqdm(desc="converting", unit="rec", unit_scale=True, file=sys.stderr, mininterval=0.5)
    state = {"bytes": 0, "last": 0.0}
    start = time.perf_counter()

    def report(records: int, nbytes: int, done: bool = False, present: int = 0) -> None:
        if done:
            bar.close()
            return
        if present:
            state["present"] = state.get("present", 0) + present
            bar.set_description(f"appending ({state['present']:,} already there)",
                                refresh=False)
            return
        state["bytes"] += nbytes
        bar.update(records)
        now = time.perf_counter()
        if now - state["last"] > 0.5:
            state["last"] = now
            bar.set_postfix_str(f"{state['bytes'] / 1e6 / max(now - start, 1e-9):.1f} MB/s",
                                refresh=False)

    return report


class ConvertOptions(TypedDict, total=False):
    """:func:`convert`'s keyword options (what :func:`write_dataset` passes on)."""

    split: SplitSpec
    shards: ShardOptions | None
    label_feature: str | None
    stratify: bool
    workers: int | None
    engine: Literal["local", "ray"]
    on_error: Literal["raise", "skip"]
    overwrite: bool
    progress: bool | Callable[[int, int], None]
    storage_options: dict[str, Any] | None


def write_dataset(
    records: Iterable[Mapping[str, Any]] | Mapping[str, Iterable[Mapping[str, Any]]],
    out_dir: str | os.PathLike[str],
    schema: Schema,
    *,
    key: str | None = None,
    **options: Unpack[ConvertOptions],
) -> ConversionResult:
    """Write records (``{feature: value}`` dicts) as a dataset; see :func:`convert` for options.

    ``records`` may also map split names to iterables of records (explicit splits). ``key``
    names the feature identifying each record (see :class:`~tfrecordkit.Records`): splits
    then go by it, and ``tk.append(out_dir, tk.Records(more, schema, key=...))`` grows the
    dataset as writing everything at once would.
    """
    return convert(Records(records, schema, key=key), out_dir, schema=schema, **options)
