"""Reading a few keys of every record of a file (a class label, image headers), checked, a
batch of records at a time, with memory bounded however large the records are."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from tfrecordkit.format import Column, KeySpec, RecordReader, Storage, parse_examples

__all__ = ["labels_of", "scan_columns", "scan_labels"]

_BATCH_BYTES = 1 << 24  # records held at once: at most this many bytes (or ``batch`` records)


def scan_labels(file: str, label_feature: str, storage: Storage,
                batch: int = 4096) -> np.ndarray:
    """Every record's label, each checked to be one int64 (only that key is decoded)."""
    return labels_of(RecordReader(file, storage=storage), label_feature, file, batch)


def labels_of(records: Iterable[bytes], label_feature: str, file: str,
              batch: int = 4096) -> np.ndarray:
    """The label of each of ``records`` (from ``file``, for errors), as :func:`scan_labels`."""
    labels: list[np.ndarray] = []
    scan_columns(records, [KeySpec(label_feature, "int64", ())], file,
                 lambda columns: labels.append(columns[label_feature].values.reshape(-1)),
                 batch)
    return np.concatenate(labels) if labels else np.zeros(0, np.int64)


def scan_columns(records: Iterable[bytes], specs: Sequence[KeySpec], file: str,
                 on_batch: Callable[[dict[str, Column]], None], batch: int = 4096) -> int:
    """Parse ``specs`` from each of ``records`` (from ``file``, for errors), checked, and hand
    each batch's columns to ``on_batch``; returns how many records there were."""
    pending: list[bytes] = []
    held = done = 0

    def flush() -> None:
        nonlocal done, held
        first = done
        on_batch(parse_examples(pending, specs, where=lambda i: f"{first + i} of {file}"))
        done += len(pending)
        held = 0
        pending.clear()

    for record in records:
        pending.append(record)
        held += len(record)
        if len(pending) == batch or held >= _BATCH_BYTES:
            flush()
    if pending:
        flush()
    return done
