"""A dataset handed to another ecosystem in its own convention, every value kept: WebDataset
shards (``.jpg``/``.png`` bytes as stored, ``.cls``, ``.json``), Parquet as Hugging Face stores
it (images as ``{bytes, path}`` structs, ``ClassLabel`` names in the schema's metadata), or a
Hugging Face ``DatasetDict`` saved with ``save_to_disk``. Records stream through in chunks:
memory stays flat whatever the dataset's size."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tarfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tfrecordkit.errors import OptionError
from tfrecordkit.format import KeySpec, parse_examples
from tfrecordkit.readers._mix import refuse_mix
from tfrecordkit.schema import SOURCE_FEATURE, Boxes, DecodeContext, Image, Schema
from tfrecordkit.store import (
    SplitArg,
    SplitRecords,
    load_manifest,
    split_text,
)

__all__ = ["ExportResult", "Target", "export"]

Target = Literal["webdataset", "parquet", "hf"]
TARGETS: tuple[Target, ...] = ("webdataset", "parquet", "hf")
_CHUNK = 256  # records read and converted at a time
Chunk = list[dict[str, Any]]


@dataclass
class ExportResult:
    """What an export wrote: records per split, and the files (or directory) written."""

    target: Target
    out: str
    records: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def export(path: str | os.PathLike[str], out: str | os.PathLike[str], *, to: Target,
           split: SplitArg | None = None, rows_per_file: int = 10_000,
           overwrite: bool = False, progress: bool = True) -> ExportResult:
    """Write a dataset in another library's format, every value kept.

    Args:
        path: a dataset directory.
        out: the output directory (refused if it exists and is not empty, unless
            ``overwrite``).
        to: ``"webdataset"`` (tar shards ``<split>-000000.tar``: per record
            ``<key>.jpg``/``.png`` (an image's bytes as stored; raw pixels as PNG; further
            images ``<key>.<name>.<ext>``), ``<key>.cls`` (the class id), ``<key>.json``
            (every other value, and class names); ``"parquet"`` (``<split>-00000-of-0000n
            .parquet``, Hugging Face's layout: ``datasets.load_dataset("parquet",
            data_dir=out)`` reads it with its ``Image`` and ``ClassLabel`` features); ``"hf"``
            (a ``DatasetDict`` saved with ``save_to_disk``).
        split: one split or expression (default: every split, each under its own name).
        rows_per_file: records per tar or Parquet file.
        overwrite: replace what ``out`` holds.
        progress: show a progress bar.

    Raises:
        OptionError: an unknown target, or an output that is not empty.
        DatasetError: ``path`` is not a dataset, or a split expression is bad.
    """
    if to not in TARGETS:
        raise OptionError(f"export to= must be one of {', '.join(TARGETS)}; got {to!r}")
    if isinstance(rows_per_file, bool) or not isinstance(rows_per_file, int) or rows_per_file < 1:
        raise OptionError(f"rows_per_file must be a positive number; got {rows_per_file!r}")
    refuse_mix(path)
    manifest = load_manifest(path)
    target = os.fspath(out)
    _prepare(target, overwrite)
    splits = [split_text(split)] if split is not None else list(manifest.splits)
    schema = manifest.schema
    result = ExportResult(to, target)
    rows = _Rows(schema)
    from tqdm import tqdm

    for name in splits:
        records = SplitRecords(path, name)
        with tqdm(total=len(records), desc=f"export {name}", unit="rec", unit_scale=True,
                  file=sys.stderr, mininterval=0.5, disable=not progress) as bar:
            def spans(records: SplitRecords = records, bar: Any = bar) -> Iterator[range]:
                for start in range(0, len(records), _CHUNK):
                    ids = range(start, min(start + _CHUNK, len(records)))
                    yield ids
                    bar.update(len(ids))

            label = _file_label(name)
            if to == "webdataset":
                result.files += _write_webdataset(
                    target, label, (rows.rows(records, ids) for ids in spans()), rows,
                    rows_per_file)
            else:
                def first(records: SplitRecords = records) -> Chunk:
                    return [_hf_row(r, rows) for r in rows.rows(records, range(min(
                        1, len(records))))]

                schema_pa = _known_features(rows, first).arrow_schema
                tables = (rows.table(records, ids, schema_pa) for ids in spans())
                if to == "parquet":
                    result.files += _write_parquet(target, label, tables, schema_pa,
                                                   per_file=rows_per_file,
                                                   total=len(records))
                else:
                    result.files.append(_save_hf(target, label, tables, schema_pa))
        result.records[name] = len(records)
    if to == "hf":
        _hf_dataset_dict(target, [_file_label(s) for s in splits])
    return result


def _file_label(split: str) -> str:
    """A split (or expression) as a file-name part."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in split)


def _prepare(target: str, overwrite: bool) -> None:
    if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
        if not overwrite:
            raise OptionError(f"{target} exists and is not empty: give another output, or "
                              "overwrite=True (--overwrite)")
        if os.path.isdir(target):
            shutil.rmtree(target)
        else:
            os.remove(target)
    os.makedirs(target, exist_ok=True)


# -- one record as plain values --------------------------------------------------------------


class _Rows:
    """Records as dicts of plain values: media as their bytes (raw pixels as PNG), class ids,
    text, numbers and lists."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.names = [n for n in schema if n != SOURCE_FEATURE]
        self.source = SOURCE_FEATURE in schema
        # Encoded images and audio: their stored bytes, as they are.
        self.media = [n for n in self.names if schema[n].export_extension(b"") is not None]
        self.raw_images = [n for n, f in schema.of_kind(Image).items() if n not in self.media]
        self.decoded = [n for n in schema if n not in self.media]  # provenance too
        self._media_specs = [KeySpec(n, "string", ()) for n in self.media]

    def _parsed(self, records: SplitRecords, ids: range) -> tuple[dict[str, Any],
                                                                  dict[str, Any]]:
        """Records ``ids`` parsed as a batch (the compiled columnar codec): the decoded
        values of the other features (a label taken from the shard included: the records'
        shard classes), and the media's stored bytes as parsed columns."""
        positions = np.arange(ids.start, ids.stop)
        found = records.get_slices(positions)

        def where(i: int) -> str:
            return records.where(ids.start + i)

        classes = records.shard_classes(positions) if self.schema.shard_label else None
        values = (self.schema.decode_batch(found, features=self.decoded, where=where,
                                           context=DecodeContext(shard_classes=classes))
                  if self.decoded else {})
        return values, parse_examples(found, self._media_specs, where=where)

    def rows(self, records: SplitRecords, ids: range) -> Chunk:
        """Records ``ids`` as rows of plain values."""
        values, columns = self._parsed(records, ids)
        media = {name: column.to_bytes() for name, column in columns.items()}
        plain = {name: [_plain(v) for v in column] for name, column in values.items()}
        return [{name: media[name][i] if name in media else plain[name][i]
                 for name in (*self.names, *([SOURCE_FEATURE] if self.source else []))}
                for i in range(len(ids))]

    def table(self, records: SplitRecords, ids: range, schema: Any) -> Any:
        """Records ``ids`` as an Arrow table of ``schema`` (Hugging Face's layout): encoded
        media straight from the parsed column's buffers, numbers from their arrays."""
        import pyarrow as pa

        values, media = self._parsed(records, ids)
        n, arrays = len(ids), []
        for entry in schema:
            column = media.get(entry.name)
            if column is not None and column.offsets is not None:
                data = pa.Array.from_buffers(pa.binary(), n, [
                    None, pa.py_buffer(column.offsets.astype(np.int32)),
                    pa.py_buffer(column.values)])
                arrays.append(pa.StructArray.from_arrays(
                    [data, pa.nulls(n, pa.string())], fields=list(entry.type)))
                continue
            value = values[entry.name]
            if entry.name in self.raw_images:
                value = [{"bytes": Image("png").encode_array(entry.name, np.asarray(
                    v, np.uint8)), "path": None} for v in value]
            elif not (isinstance(value, np.ndarray) and value.ndim == 1):
                value = [_plain(v) for v in value]
            arrays.append(pa.array(value, type=entry.type))
        return pa.Table.from_arrays(arrays, schema=schema)

    def extension(self, name: str, value: bytes) -> str:
        """The file extension of an image's or audio's bytes (raw pixels: encoded as PNG)."""
        return self.schema[name].export_extension(value) or "png"


def _plain(value: Any) -> Any:
    """A decoded value as JSON-able Python: arrays as (nested) lists, bytes as text."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _raw_as_png(rows: _Rows, row: dict[str, Any]) -> dict[str, Any]:
    """Raw-pixel images of a row encoded as PNG (lossless), the bytes other tools read."""
    for name in rows.raw_images:
        row[name] = Image("png").encode_array(name, np.asarray(row[name], np.uint8))
    return row


# -- WebDataset --------------------------------------------------------------------------------


def _write_webdataset(target: str, label: str, chunks: Iterator[Chunk], rows: _Rows,
                      per_file: int) -> list[str]:
    files: list[str] = []
    archive: tarfile.TarFile | None = None
    written = 0
    first_image = next(iter(rows.schema.of_kind(Image)), None)
    found = rows.schema.class_label()
    classes = None if found is None else (found[0], list(found[1].names))
    try:
        for chunk in chunks:
            for row in chunk:
                if archive is None or written % per_file == 0:
                    if archive is not None:
                        archive.close()
                    files.append(os.path.join(target, f"{label}-{len(files):06d}.tar"))
                    # One open archive at a time, rolled over; the finally below closes it.
                    archive = tarfile.open(  # noqa: SIM115
                        files[-1], "w", format=tarfile.USTAR_FORMAT)
                key = f"{label}_{written:09d}"
                for name, data in _sample(_raw_as_png(rows, row), rows, classes,
                                          first_image).items():
                    info = tarfile.TarInfo(f"{key}.{name}")
                    info.size, info.mtime, info.mode = len(data), 0, 0o644
                    archive.addfile(info, io.BytesIO(data))
                written += 1
    finally:
        if archive is not None:
            archive.close()
    return files


def _sample(row: dict[str, Any], rows: _Rows, label: tuple[str, list[str]] | None,
            first_image: str | None) -> dict[str, bytes]:
    """One record's files by extension: media, ``cls``, and ``json`` for the rest."""
    out: dict[str, bytes] = {}
    rest: dict[str, Any] = {}
    boxes = rows.schema.of_kind(Boxes)
    for name in rows.names:
        value = row[name]
        if name in rows.media or name in rows.raw_images:
            extension = rows.extension(name, value)
            out[extension if name == first_image else f"{name}.{extension}"] = value
        elif label is not None and name == label[0]:
            out["cls"] = str(value).encode()
            rest[name] = value
            rest[f"{name}_name"] = label[1][value]
        elif name in boxes:
            names = boxes[name].names
            rest[name] = {**value, "label_names": [names[i] for i in value["labels"]]}
        else:
            rest[name] = value
    if SOURCE_FEATURE in row:
        rest[SOURCE_FEATURE] = row[SOURCE_FEATURE]
    out["json"] = json.dumps(rest, ensure_ascii=False, allow_nan=True).encode()
    return out


# -- Hugging Face (Arrow, Parquet) -------------------------------------------------------------


def _hf_features(rows: _Rows) -> dict[str, Any]:
    """The Hugging Face ``Features`` entries of the exported rows, as each kind gives them
    (None: inferred from the values)."""
    spec = {name: rows.schema[name].hf_feature() for name in rows.names}
    if rows.source:
        spec[SOURCE_FEATURE] = {"_type": "Value", "dtype": "string"}
    return spec


def _hf_row(row: dict[str, Any], rows: _Rows) -> dict[str, Any]:
    """A row as Hugging Face stores it: images and audio as ``{bytes, path}``."""
    out = dict(_raw_as_png(rows, row))
    for name in (*rows.media, *rows.raw_images):
        out[name] = {"bytes": out[name], "path": None}
    return out


def _known_features(rows: _Rows, first: Callable[[], list[dict[str, Any]]]) -> Any:
    """``Features`` for every column: the schema's, and for the rest (kinds with no entry of
    their own) what the split's first row holds, read only then (``first()``)."""
    import datasets

    spec = _hf_features(rows)
    if any(v is None for v in spec.values()):
        head = first()[:1]
        guessed = datasets.Dataset.from_list(head).features.to_dict() if head else {}
        spec = {k: (v if v is not None else guessed.get(k, {"_type": "Value", "dtype": "null"}))
                for k, v in spec.items()}
    return datasets.Features.from_dict(spec)


def _write_parquet(target: str, label: str, tables: Iterator[Any], schema: Any, *,
                   per_file: int, total: int) -> list[str]:
    import pyarrow.parquet as pq

    count = max(1, -(-total // per_file))
    files: list[str] = []
    writer: Any = None
    written = 0
    try:
        for whole in tables:
            table = whole
            while table.num_rows:
                if writer is None or written % per_file == 0:
                    if writer is not None:
                        writer.close()
                    files.append(os.path.join(
                        target, f"{label}-{len(files):05d}-of-{count:05d}.parquet"))
                    writer = pq.ParquetWriter(files[-1], schema)
                room = per_file - written % per_file
                part, table = table.slice(0, room), table.slice(room)
                writer.write_table(part)
                written += part.num_rows
    finally:
        if writer is not None:
            writer.close()
    return files


def _save_hf(target: str, label: str, tables: Iterator[Any], schema: Any) -> str:
    """One split written through Hugging Face's own Arrow writer, chunk by chunk, then saved
    with ``save_to_disk`` (memory-mapped, never held)."""
    from datasets.arrow_writer import ArrowWriter

    import datasets

    scratch = os.path.join(target, ".cache", f"{label}.arrow")
    os.makedirs(os.path.dirname(scratch), exist_ok=True)
    writer = ArrowWriter(features=datasets.Features.from_arrow_schema(schema), path=scratch)
    try:
        for table in tables:
            writer.write_table(table)
        writer.finalize()
    finally:
        writer.close()
    where = os.path.join(target, label)
    datasets.Dataset.from_file(scratch).save_to_disk(where)
    return where


def _hf_dataset_dict(target: str, splits: list[str]) -> None:
    """The file ``datasets.load_from_disk`` reads a ``DatasetDict`` from, and the cache
    ``from_generator`` used removed."""
    with open(os.path.join(target, "dataset_dict.json"), "w") as handle:
        json.dump({"splits": splits}, handle)
    shutil.rmtree(os.path.join(target, ".cache"), ignore_errors=True)
