"""Records as Arrow tables in Hugging Face's layout (images and audio as ``{bytes, path}``
structs, ``ClassLabel`` names in the features, binary values as binary columns), for the
Parquet and Hugging Face targets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tfrecordkit.errors import OptionError
from tfrecordkit.exporters._rows import Chunk, Rows, plain_value, text_of
from tfrecordkit.schema import SOURCE_FEATURE
from tfrecordkit.store import SplitRecords

__all__ = ["arrow_features", "arrow_table"]


def _hf_row(row: dict[str, Any], rows: Rows) -> dict[str, Any]:
    """A row as Hugging Face stores it: images and audio as ``{bytes, path}``."""
    out = dict(row)
    for name in (*rows.media, *rows.raw_images):
        out[name] = {"bytes": out[name], "path": None}
    return out


def arrow_features(rows: Rows, first: Callable[[], Chunk]) -> Any:
    """``datasets.Features`` for every column: the schema's, and for the rest (kinds with no
    entry of their own) what the split's first row holds, read only then (``first()``).

    Raises:
        OptionError: a feature name Arrow or Hugging Face cannot hold as a column (naming it).
    """
    import datasets

    for name in rows.names:
        if "\x00" in name or not name:
            raise OptionError(f"feature {name!r}: a column name cannot be empty or hold NUL; "
                              "export to webdataset, or rename the feature")
    added = rows.coco.hf_features() if rows.coco is not None else {}
    spec = {name: added[name] if name in added else rows.schema[name].hf_feature()
            for name in rows.names}
    if rows.source:
        spec[SOURCE_FEATURE] = {"_type": "Value", "dtype": "string"}
    if any(v is None for v in spec.values()):
        head = [_hf_row(r, rows) for r in first()[:1]]
        guessed = datasets.Dataset.from_list(head).features.to_dict() if head else {}
        spec = {k: (v if v is not None else guessed.get(k, {"_type": "Value", "dtype": "null"}))
                for k, v in spec.items()}
    return datasets.Features.from_dict(spec)


def arrow_table(rows: Rows, records: SplitRecords, ids: range, schema: Any) -> Any:
    """Records ``ids`` as an Arrow table of ``schema``: encoded media straight from the
    parsed column's buffers, numbers from their arrays, bytes as bytes."""
    import pyarrow as pa

    values, media = rows.parsed(records, ids)
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
        if entry.name in rows.raw_images:
            value = [{"bytes": rows.png(entry.name, v), "path": None} for v in value]
        elif entry.name == SOURCE_FEATURE:
            value = [text_of(v) for v in value]
        elif not (isinstance(value, np.ndarray) and value.ndim == 1):
            value = [plain_value(v) for v in value]
        arrays.append(pa.array(value, type=entry.type))
    return pa.Table.from_arrays(arrays, schema=schema)
