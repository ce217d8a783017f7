"""What an append needs of the dataset it grows: its manifest (kept whole, its shards never
rewritten), the number of this append (which names its shards), the records it holds (key
hashes and content digests, from the shards' ``.digests`` sidecars), its split rule and
shard options, and its schema grown by the source's new class names."""

from __future__ import annotations

import dataclasses
import logging
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfrecordkit.errors import DatasetError, SchemaError
from tfrecordkit.format import Storage
from tfrecordkit.schema import SOURCE_FEATURE, Boxes, ClassLabel, Image, Schema
from tfrecordkit.store import (
    SHARD_PATTERN,
    KnownRecords,
    Manifest,
    ShardOptions,
    append_tag,
    read_digests,
)

__all__ = ["AppendTarget", "grown_schema", "open_images"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AppendTarget:
    """The dataset an append adds to.

    Attributes:
        base: its manifest, as it was read (the new one keeps every shard it lists).
        part: this append's number (1 for the first), in its new shards' names.
        known: the records it holds, to leave out inputs already there.
        version: the manifest's :meth:`Storage.version` before it was read: the new
            manifest replaces exactly that one, or the append is refused.
        writer: this attempt's id (hex), in its shards' names beside ``part``, so two
            appends that read the same manifest never write one file.
    """

    base: Manifest
    part: int
    known: KnownRecords
    version: str | None = None
    writer: str = dataclasses.field(default_factory=lambda: secrets.token_hex(4))

    @property
    def tag(self) -> str:
        """What names this append's shards (:func:`~tfrecordkit.store.append_tag`)."""
        return append_tag(self.part, self.writer)

    @classmethod
    def load(cls, base: Manifest, directory: str, storage: Storage,
             version: str | None = None) -> AppendTarget:
        """The target for the dataset in ``directory`` whose manifest is ``base`` (read when
        it had ``version``)."""
        if base.schema.shard_label is not None:
            raise DatasetError(f"{directory}: its class label comes from its files' names "
                               "(adopted with --class-pattern); appending stores labels in "
                               "records: convert it anew instead")
        parts = [int(m["part"] or 0) for split in base.splits.values() for shard in split.shards
                 if (m := SHARD_PATTERN.fullmatch(shard.file))]
        known = KnownRecords.gather(_digests(base, directory, storage))
        return cls(base, max(parts, default=0) + 1, known, version)

    def split_rule(self, split: str | None) -> tuple[str | dict[str, float], bool]:
        """The split the appended records go to: ``split`` if given, else the dataset's own
        rule (its split name or ratios), and whether the dataset was stratified."""
        made = self.base.created_by
        if split is not None:
            return split, False
        rule = made.get("split")
        if isinstance(rule, dict) and "by_source" in rule:
            raise DatasetError(f"the dataset's splits came from a split -> source mapping "
                               f"({rule['by_source']}): give split= (--split) naming the split "
                               "the new records go to, or append a mapping of splits")
        if isinstance(rule, str) or (isinstance(rule, dict) and rule and all(
                isinstance(v, int | float) for v in rule.values())):
            return rule, bool(made.get("stratified"))
        raise DatasetError("the dataset does not record how its records were split (it was "
                           "adopted, or written by an older tfrecordkit): give split= "
                           "(--split) naming the split the new records go to")

    def shard_options(self) -> ShardOptions:
        """Shard options that continue the dataset's: layout, compression, seed, shuffle."""
        made = self.base.created_by
        seed, shuffle = made.get("seed", 0), made.get("shuffle", True)
        shards = [s for split in self.base.splits.values() for s in split.shards]
        return ShardOptions(layout=self.base.layout, compression=self.base.compression,
                            seed=seed if isinstance(seed, int) else 0,
                            shuffle=shuffle if isinstance(shuffle, bool) else True,
                            index=any(s.index for s in shards) or not shards)

    def created_by(self, source: str) -> dict[str, Any]:
        """The dataset's provenance with this append added."""
        from tfrecordkit._version import __version__

        made = dict(self.base.created_by)
        appends = list(made.get("appends") or [])
        appends.append({"part": self.part, "source": source, "version": __version__})
        made["appends"] = appends
        return made


def _digests(base: Manifest, directory: str, storage: Storage
             ) -> Iterator[tuple[str, np.ndarray | None]]:
    for split in base.splits.values():
        for shard in split.shards:
            yield shard.file, (read_digests(storage, storage.join(directory, shard.digests),
                                            shard.records) if shard.digests else None)


def grown_schema(dataset: Schema, source: Schema, where: str) -> Schema:
    """The dataset's schema with the class names ``source`` adds (at the end, so no id
    moves), after checking the two describe the same features.

    Raises:
        SchemaError: a feature is missing on one side or is of another kind (naming it).
    """
    mine = {name: f for name, f in dataset.items() if name != SOURCE_FEATURE}
    theirs = {name: f for name, f in source.items() if name != SOURCE_FEATURE}
    for name in sorted(mine.keys() ^ theirs.keys()):
        side = "the dataset" if name in mine else where
        raise SchemaError(name, f"only {side} has this feature: the dataset has "
                                f"{sorted(mine)}, {where} {sorted(theirs)}")
    features = dict(dataset)
    for name, feature in mine.items():
        other = theirs[name]
        if other.kind != feature.kind:
            raise SchemaError(name, f"is {feature.kind} in the dataset but {other.kind} in "
                                    f"{where}")
    source_labels = source.of_kind(ClassLabel)
    for name, feature in dataset.of_kind(ClassLabel).items():
        if (label := source_labels.get(name)) is not None:
            added = [n for n in label.names if n not in feature.names]
            if added:
                logger.info("%s: %d new class(es) get ids %d..%d: %s", name, len(added),
                            feature.num_classes, feature.num_classes + len(added) - 1,
                            added[:10])
                features[name] = dataclasses.replace(feature,
                                                     names=(*feature.names, *added))
    source_boxes = source.of_kind(Boxes)
    for name, boxes in dataset.of_kind(Boxes).items():
        if (given := source_boxes.get(name)) is not None:
            features[name] = _grown_boxes(name, boxes, given, where)
    return Schema(features)


def _grown_boxes(name: str, boxes: Boxes, other: Boxes, where: str) -> Boxes:
    """The dataset's ``boxes`` with the category names ``other`` adds, at the end (no id
    moves), and their source ids when the dataset keeps ids.

    Raises:
        SchemaError: a new category's source id is an old category's (naming both).
    """
    added = [n for n in other.names if n not in boxes.names]
    if not added:
        return boxes
    logger.info("%s: %d new box categor(ies) get ids %d..%d: %s", name, len(added),
                len(boxes.names), len(boxes.names) + len(added) - 1, added[:10])
    ids: tuple[int, ...] = ()
    if boxes.ids and other.ids:
        theirs = dict(zip(other.names, other.ids, strict=True))
        mine = dict(zip(boxes.ids, boxes.names, strict=True))
        for new in added:
            if theirs[new] in mine:
                raise SchemaError(name, f"{where} gives the new category {new!r} id "
                                        f"{theirs[new]}, which is {mine[theirs[new]]!r}'s in "
                                        "the dataset")
        ids = (*boxes.ids, *(theirs[n] for n in added))
    elif boxes.ids:
        raise SchemaError(name, f"the dataset keeps its categories' ids, and {where} gives "
                                f"none for the new categories {added[:5]}")
    return dataclasses.replace(boxes, names=(*boxes.names, *added), ids=ids)


def open_images(schema: Schema, source: Schema) -> Schema:
    """``schema`` (an appended-to dataset's, grown) with each image's format, channels and
    size left open where the source does not pin them: the dataset's were found from its
    images at conversion, and new images may differ (the manifest is then widened as
    converting everything at once would describe it, see :meth:`ImageObservations.widen`)."""
    features = dict(schema)
    theirs = source.of_kind(Image)
    for name, image in schema.of_kind(Image).items():
        given = theirs.get(name)
        if given is None:
            continue
        features[name] = dataclasses.replace(
            image, encoding=given.encoding, channels=given.channels, size=given.size)
    return Schema(features)
