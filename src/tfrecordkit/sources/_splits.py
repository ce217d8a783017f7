"""A mapping of split names to sources, converted as one dataset: each source's records in its
split (COCO's ``instances_train.json`` and ``instances_val.json``, or any sources)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tfrecordkit.errors import DatasetError, OptionError, SourceError
from tfrecordkit.schema import Boxes, Schema
from tfrecordkit.sources._protocol import Source, SourceItem, SourceTraits
from tfrecordkit.store import check_split_name

__all__ = ["SplitSources"]


class SplitSources:
    """Sources by split (``{"train": a, "val": b}``): every record of ``a`` in split ``train``,
    of ``b`` in ``val``. The sources must describe the same features (the first one's schema
    is the dataset's), but for box categories, which are joined by name (the first source's,
    then each new one: COCO files of one dataset whose splits hold other categories). A
    record's key is its source's when that source keys records uniquely across sources (one
    with a ``key_rule``: COCO's image folder and file name), else ``<split>/<key>`` (two
    tables' row numbers, two folders' paths would collide). A conversion of it takes no
    split ratios: each record's split is its source's.

    Raises:
        OptionError: no sources, or a split name a dataset cannot hold.
        SourceError: two sources whose features differ (naming both splits and the feature).
    """

    def __init__(self, parts: Mapping[str, Source]) -> None:
        if not parts:
            raise OptionError("a split -> source mapping needs at least one split")
        for name in parts:
            try:
                check_split_name(name)
            except DatasetError as err:
                raise OptionError(str(err)) from None
        self.parts = dict(parts)
        first_name = next(iter(self.parts))
        self._schema = _joined_boxes([p.schema() for p in self.parts.values()])
        for name, part in self.parts.items():
            schema = _nameless_boxes(part.schema())  # box names are joined, the rest equal
            if schema != _nameless_boxes(self._schema):
                mine = _nameless_boxes(self._schema)
                odd = sorted(n for n in {*schema, *mine} if schema.get(n) != mine.get(n))
                raise SourceError(f"split {name!r}", f"its features differ from split "
                                                     f"{first_name!r}'s in {odd}: the splits of "
                                                     "one dataset share one schema")
        traits = [SourceTraits.of(p) for p in self.parts.values()]
        self.description = "splits:" + ";".join(f"{name}={p.description}"
                                                for name, p in self.parts.items())
        self.in_process = all(p.in_process for p in self.parts.values())
        self.resumable = all(t.resumable for t in traits)
        self.threaded = all(t.threaded for t in traits)
        self.provenance = all(t.provenance for t in traits)
        self.reorderable = all(t.reorderable for t in traits)
        self.reiterable = all(t.reiterable for t in traits)
        self.named_classes = all(t.named_classes for t in traits)
        self.conversions = {k: v for t in traits for k, v in t.conversions.items()}

    @property
    def key_rule(self) -> str | None:
        """The parts' key rule (as :class:`~tfrecordkit.sources.Coco` names its own)."""
        rules = {getattr(p, "key_rule", None) for p in self.parts.values()}
        return rules.pop() if len(rules) == 1 else None

    def for_dataset(self, created_by: Mapping[str, Any], schema: Schema) -> SplitSources:
        """These sources as the dataset they are appended to was written (each part that
        can say so asked in turn, as :meth:`Coco.for_dataset`)."""
        return SplitSources({name: p.for_dataset(created_by, schema)
                             if hasattr(p, "for_dataset") else p
                             for name, p in self.parts.items()})

    def schema(self) -> Schema:
        return self._schema

    def items(self) -> Iterator[SourceItem]:
        for split, part in self.parts.items():
            unique = getattr(part, "key_rule", None) is not None
            for item in part.items():
                key = item.key if unique else f"{split}/{item.key}"
                yield SourceItem(key, (split, item), split)

    def load(self, item: Any) -> Mapping[str, Any]:
        split, inner = item
        return self.parts[split].load(inner.item)

    def describe(self, item: SourceItem) -> str:
        split, inner = item.item
        return self.parts[split].describe(inner)

    def origin(self, item: SourceItem) -> str:
        """Where the record came from, as its split's source says."""
        split, inner = item.item
        return str(self.parts[split].origin(inner))  # type: ignore[attr-defined]


def _joined_boxes(schemas: list[Schema]) -> Schema:
    """The first schema with each ``Boxes`` feature's category names joined by name over all
    of them (:meth:`Boxes.joined`). Box labels are given by name (COCO's sources), so each
    source's records encode under the joined names."""
    first = schemas[0]
    features = dict(first)
    for name, boxes in first.of_kind(Boxes).items():
        each = [s.of_kind(Boxes).get(name) for s in schemas[1:]]
        features[name] = boxes.joined([b for b in each if b is not None])
    return Schema(features)


def _nameless_boxes(schema: Schema) -> Schema:
    """``schema`` with its boxes' category names and ids left out (what is compared between
    splits: the names are joined)."""
    import dataclasses

    return Schema({**schema, **{name: dataclasses.replace(boxes, names=(), ids=())
                                for name, boxes in schema.of_kind(Boxes).items()}})
