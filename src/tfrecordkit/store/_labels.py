"""Reading one int64 per record (a class label) from a record file, checked, a batch of
records at a time."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tfrecordkit.format import RecordReader, Storage, parse_examples
from tfrecordkit.format._spec import KeySpec

__all__ = ["labels_of", "scan_labels"]


def scan_labels(file: str, label_feature: str, storage: Storage,
                batch: int = 4096) -> np.ndarray:
    """Every record's label, each checked to be one int64 (only that key is decoded)."""
    return labels_of(RecordReader(file, storage=storage), label_feature, file, batch)


def labels_of(records: Iterable[bytes], label_feature: str, file: str,
              batch: int = 4096) -> np.ndarray:
    """The label of each of ``records`` (from ``file``, for errors), as :func:`scan_labels`."""
    spec = KeySpec(label_feature, "int64", ())
    labels: list[np.ndarray] = []
    pending: list[bytes] = []
    done = 0

    def flush() -> None:
        nonlocal done
        first = done
        column = parse_examples(pending, [spec], where=lambda i: f"{first + i} of {file}")
        labels.append(column[label_feature].values.reshape(-1))
        done += len(pending)
        pending.clear()

    for record in records:
        pending.append(record)
        if len(pending) == batch:
            flush()
    if pending:
        flush()
    return np.concatenate(labels) if labels else np.zeros(0, np.int64)
