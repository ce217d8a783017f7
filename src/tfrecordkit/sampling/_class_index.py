"""Where each class's records are: (shard, offset, length) per record, grouped by class."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from tfrecordkit.errors import DatasetError
from tfrecordkit.format import Restarts, Storage
from tfrecordkit.store import Manifest, load_manifest, scan_labels, split_locations, split_parts

__all__ = ["ClassIndex"]


@dataclass(frozen=True)
class ClassIndex:
    """Record locations grouped by class (CSR layout: class ``i``'s records are
    ``shard[starts[i]:starts[i+1]]`` etc.). Holds 20 bytes per record, never the records."""

    files: tuple[str, ...]
    classes: np.ndarray  # class ids present, sorted
    starts: np.ndarray  # len(classes) + 1
    shard: np.ndarray  # int32 per record
    offset: np.ndarray  # int64 per record
    length: np.ndarray  # int64 per record
    restarts: Restarts | None = None  # compressed shards: where inflating can begin

    @property
    def counts(self) -> np.ndarray:
        """Records per class, aligned with :attr:`classes`."""
        return np.diff(self.starts)

    @classmethod
    def from_dataset(cls, path: str | os.PathLike[str], split: str = "train",
                     manifest: Manifest | None = None, *,
                     storage: Storage | None = None) -> ClassIndex:
        """Build the index of one split of a dataset directory.

        Per-class datasets need only the manifest and the shards' offset indexes; mixed
        shards are scanned once to read each record's label.

        Raises:
            DatasetError: no label feature, or shards, indexes and labels that disagree with
                the manifest (see :func:`~tfrecordkit.store.split_locations`).
        """
        storage = storage or Storage.of(path)
        # Validated: class ids are in range.
        manifest = manifest or load_manifest(path, storage=storage)
        if manifest.label_feature is None:
            raise DatasetError(f"{path}: the dataset has no class-label feature")
        where = split_locations(path, manifest, split, storage=storage)
        parts = split_parts(manifest, split)
        labels = {name: _split_labels(path, manifest, name, storage)  # each split read once
                  for name in dict.fromkeys(part.split for part in parts)}
        label = np.concatenate([labels[part.split][part.start : part.stop] for part in parts])
        order = np.argsort(label, kind="stable")
        classes, starts = np.unique(label[order], return_index=True)
        return cls(
            files=where.files, classes=classes,
            starts=np.append(starts, len(label)).astype(np.int64),
            shard=where.shard[order], offset=where.offset[order], length=where.length[order],
            restarts=where.restarts,
        )


def _split_labels(path: str | os.PathLike[str], manifest: Manifest, split: str,
                  storage: Storage) -> np.ndarray:
    """Each record's class id in one split: its shard's class, or (mixed shards) its label
    read from the records once.

    Raises:
        DatasetError: a label outside the dataset's classes.
    """
    num_classes = len(manifest.class_names)
    labels = []
    for shard in manifest.split(split).shards:
        if shard.class_id is not None:
            labels.append(np.full(shard.records, shard.class_id, dtype=np.int64))
            continue
        file = storage.join(os.fspath(path), shard.file)
        assert manifest.label_feature is not None
        shard_labels = scan_labels(file, manifest.label_feature, storage)
        bad = np.flatnonzero((shard_labels < 0) | (shard_labels >= num_classes))
        if bad.size:
            raise DatasetError(f"{file}: record {int(bad[0])} has label "
                               f"{int(shard_labels[bad[0]])}, outside 0..{num_classes - 1}")
        labels.append(shard_labels)
    return np.concatenate(labels) if labels else np.zeros(0, np.int64)
