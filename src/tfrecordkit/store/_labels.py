"""Reading one int64 per record (a class label) from a record file, checked, a batch of
records at a time."""

from __future__ import annotations

import numpy as np

from tfrecordkit.format import RecordReader, Storage, parse_examples
from tfrecordkit.format._spec import KeySpec

__all__ = ["scan_labels"]


def scan_labels(file: str, label_feature: str, storage: Storage,
                 batch: int = 4096) -> np.ndarray:
    """Every record's label, each checked to be one int64 (only that key is decoded)."""
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

    for record in RecordReader(file, storage=storage):
        pending.append(record)
        if len(pending) == batch:
            flush()
    flush()
    return np.concatenate(labels) if labels else np.zeros(0, np.int64)
