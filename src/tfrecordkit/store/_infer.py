"""The schema of TFRecord files someone else wrote, from a sample of their records or from
every record: what globbed files are read with (and what ``adopt`` writes down)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any

from tfrecordkit.errors import DatasetError, SchemaError
from tfrecordkit.format import RecordReader, Storage
from tfrecordkit.schema import RecordProfile, Schema, schema_from_profile
from tfrecordkit.store._inputs import expand_record_paths

__all__ = ["SAMPLE_FILES", "infer_schema", "profile_files", "record_files"]

SAMPLE_FILES = 8  # a sample takes records from the first files and the last one


def infer_schema(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
                 sample: int | None = 1000, progress: bool = False,
                 storage_options: dict[str, Any] | None = None) -> Schema:
    """The schema that reads TFRecord files of ``tf.train.Example`` (or SequenceExample)
    records that another tool wrote, by the rule every reader and ``adopt`` use.

    ``sample`` records are profiled, spread over the first files and the last one (what a
    glob given to a loader reads with); ``sample=None`` reads every record (with a progress
    bar if ``progress``), the only way to describe a key or a list length first seen late.
    Pass the result as ``schema=`` to any loader.

    Raises:
        DatasetError: no files, or no record is an Example (the file is named).
    """
    files = record_files(paths, storage_options)
    profile = profile_files(files, sample, progress=progress, storage_options=storage_options)
    try:
        return schema_from_profile(profile, complete=sample is None)
    except SchemaError as err:
        raise DatasetError(f"{files[0]}: cannot infer a schema: {err}") from None


def profile_files(files: Sequence[str], sample: int | None, *, progress: bool = False,
                  storage_options: dict[str, Any] | None = None,
                  storage: Storage | None = None) -> RecordProfile:
    """A profile of ``sample`` records spread over ``files`` (None: every record), read
    through ``storage`` if given."""
    profile = RecordProfile()
    bar = None
    if progress and sample is None:
        from tqdm import tqdm

        bar = tqdm(desc="profiling", unit="rec", unit_scale=True, file=sys.stderr,
                   mininterval=0.5)
    try:
        for record in _records(files, sample,
                               lambda f: storage or Storage.of(f, storage_options)):
            profile.add(record)
            if bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
    return profile


def _records(files: Sequence[str], sample: int | None,
             storage_of: Callable[[str], Storage]) -> Iterator[bytes]:
    if sample is None:
        for file in files:
            yield from RecordReader(file, storage=storage_of(file))
        return
    chosen = list(files[:SAMPLE_FILES]) + ([files[-1]] if len(files) > SAMPLE_FILES else [])
    left = sample
    for number, file in enumerate(chosen):
        # An even share of what is left from each remaining file: short files leave more
        # for the next.
        share = -(-left // (len(chosen) - number))
        taken = 0
        for record in islice(RecordReader(file, storage=storage_of(file)),
                             share):
            taken += 1
            yield record
        left -= taken
        if left <= 0:
            return


def record_files(paths: Any, storage_options: dict[str, Any] | None = None, *,
                 storage: Storage | None = None) -> list[str]:
    """The TFRecord files that files / globs (no dataset directory, no folder) name.

    Raises:
        DatasetError: they name none.
    """
    patterns = ([os.fspath(paths)] if isinstance(paths, str | os.PathLike)
                else [os.fspath(p) for p in paths])
    files = expand_record_paths(patterns, storage_options, manifests=False, folders=False,
                                storage=storage)
    if not files:
        raise DatasetError(f"no TFRecord files in {paths!r}")
    return files
