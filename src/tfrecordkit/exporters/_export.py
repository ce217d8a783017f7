"""``export``: a dataset handed to another ecosystem in its own convention, every value kept.
Records stream through in chunks (memory stays flat whatever the dataset's size) into a
staging folder that takes the output's place only when the export is whole."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from tfrecordkit.errors import OptionError
from tfrecordkit.exporters._arrow import arrow_features, arrow_table
from tfrecordkit.exporters._output import StagedOutput
from tfrecordkit.exporters._registry import TARGETS
from tfrecordkit.exporters._rows import Rows, split_labels
from tfrecordkit.format import Storage
from tfrecordkit.readers import refuse_mix
from tfrecordkit.store import SplitArg, SplitRecords, load_manifest, split_text

__all__ = ["ExportResult", "Target", "export"]

Target = Literal["webdataset", "parquet", "hf"]
_CHUNK = 256  # records read and converted at a time


@dataclass
class ExportResult:
    """What an export wrote: records per split, and the files (or directories) written."""

    target: str
    out: str
    records: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def export(path: str | os.PathLike[str], out: str | os.PathLike[str], *, to: Target,
           split: SplitArg | None = None, rows_per_file: int = 10_000,
           overwrite: bool = False, progress: bool = True,
           storage_options: dict[str, Any] | None = None,
           boxes: str = "fractions") -> ExportResult:
    """Write a dataset in another library's format, every value kept.

    The export is written into a staging folder beside ``out`` and moved into place when
    it is whole, with a marker file (``.tfrecordkit-export.json``) naming what wrote it: an
    export that fails or is killed leaves ``out`` as it was.

    Args:
        path: a dataset directory (a path or a URL).
        out: the output folder (local): new, empty, or (with ``overwrite``) an earlier export
            of tfrecordkit; never the dataset, a folder holding it, or one inside it.
        to: ``"webdataset"`` (tar shards ``<split>-000000.tar``: per record
            ``<key>.jpg``/``.png`` (an image's bytes as stored; raw pixels as PNG; further
            images ``<key>.<name>.<ext>``), ``<key>.cls`` (the class id), ``<key>.<name>.bin``
            (a binary value's bytes), ``<key>.json`` (every other value, and class names);
            feature names in member names percent-encoded); ``"parquet"``
            (``<split>-00000-of-0000n.parquet``, Hugging Face's layout:
            ``datasets.load_dataset("parquet", data_dir=out)`` reads it with its ``Image`` and
            ``ClassLabel`` features); ``"hf"`` (a ``DatasetDict`` saved with
            ``save_to_disk``).
        split: one split or expression (default: every split, each under its own name).
        rows_per_file: records per tar or Parquet file.
        overwrite: replace an earlier export of tfrecordkit at ``out`` (a folder of other
            files is never removed).
        progress: show a progress bar.
        storage_options: for a URL ``path``, passed to fsspec.
        boxes: how a ``Boxes`` feature is written: ``"fractions"`` (the default: its value
            as every reader gives it, corners as fractions, under its own name) or
            ``"coco"`` (Hugging Face's detection datasets' layout: an ``objects`` column of
            COCO's pixel boxes ``[x, y, width, height]``, their ``category`` (a ClassLabel)
            and per-object fields, beside the image's ``width`` and ``height``; in
            WebDataset's ``.json`` likewise), for a dataset with one ``Boxes`` feature.

    Raises:
        OptionError: an unknown target, an output refused (see ``out``), or two splits that
            would share file names.
        DatasetError: ``path`` is not a dataset, or a split expression is bad.
    """
    if to not in TARGETS:
        raise OptionError(f"export to= must be one of {', '.join(TARGETS)}; got {to!r}")
    target = TARGETS[to]
    if isinstance(rows_per_file, bool) or not isinstance(rows_per_file, int) or rows_per_file < 1:
        raise OptionError(f"rows_per_file must be a positive number; got {rows_per_file!r}")
    refuse_mix(path)
    storage = Storage.of(path, storage_options)
    manifest = load_manifest(path, storage=storage)
    splits = [split_text(split)] if split is not None else list(manifest.splits)
    labels = split_labels(splits)
    from tfrecordkit._version import __version__

    marker = {"written_by": f"tfrecordkit {__version__}", "target": to,
              "dataset": os.fspath(path), "splits": splits,
              "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    result = ExportResult(to, os.fspath(out))
    rows = Rows(manifest.schema, boxes)
    from tqdm import tqdm

    with StagedOutput(out, None if storage.fs is not None else os.fspath(path),
                      overwrite=overwrite, marker=marker) as folder:
        for name in splits:
            records = SplitRecords(path, name, manifest=manifest, storage=storage)
            with tqdm(total=len(records), desc=f"export {name}", unit="rec", unit_scale=True,
                      file=sys.stderr, mininterval=0.5, disable=not progress) as bar:
                spans = _spans(len(records), bar)
                if target.arrow:
                    def first(records: SplitRecords = records) -> list[dict[str, Any]]:
                        return rows.rows(records, range(min(1, len(records))))

                    schema = arrow_features(rows, first).arrow_schema
                    data: Iterator[Any] = (arrow_table(rows, records, ids, schema)
                                           for ids in spans)
                    written = target.write_split(folder, labels[name], data, schema,
                                                 per_file=rows_per_file, total=len(records))
                else:
                    written = target.write_split(
                        folder, labels[name], (rows.rows(records, ids) for ids in spans),
                        rows, per_file=rows_per_file, total=len(records))
            result.files += [folder.final(f) for f in written]
            result.records[name] = len(records)
        target.finish(folder, [labels[s] for s in splits])
    return result


def _spans(total: int, bar: Any) -> Iterator[range]:
    for start in range(0, total, _CHUNK):
        ids = range(start, min(start + _CHUNK, total))
        yield ids
        bar.update(len(ids))
