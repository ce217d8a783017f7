"""Opening what a loader reads: a path (a dataset directory, TFRecord files or globs) or a
:class:`~tfrecordkit.readers.Mix` of several, into its read plan, random access to its records
and their decoder. A mix's sources are planned one by one and joined here, above both the plan
and the mix, so neither imports the other."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from tfrecordkit.errors import DatasetError
from tfrecordkit.format import Storage
from tfrecordkit.readers._decoding import DecodeOptions, RecordDecoder
from tfrecordkit.readers._layout import BatchLayout
from tfrecordkit.readers._mix import Mix, MixPlan
from tfrecordkit.readers._read_plan import PathArg, ReadPlan, plan_read
from tfrecordkit.sampling import mix_weights
from tfrecordkit.schema import Boxes, Schema
from tfrecordkit.store import SplitPart, SplitRecords, joined_locations

__all__ = ["open_mix", "open_plan", "open_records", "split_records"]

def open_records(path: PathArg, split: str, options: DecodeOptions, *,
                 max_open_files: int | None = None, storage_options: dict[str, Any] | None = None,
                 schema: Schema | None = None
                 ) -> tuple[ReadPlan, SplitRecords, RecordDecoder]:
    """A split's plan, random access to its records, and their decoder: what the TF-free
    readers stand on (dataset directories and foreign files alike; ``schema`` describes
    foreign files, else it is inferred)."""
    read, decoder = open_plan(path, split, options, storage_options=storage_options,
                              schema=schema)
    return read, split_records(read, max_open_files), decoder


def open_plan(path: PathArg, split: str, options: DecodeOptions, *,
              storage_options: dict[str, Any] | None = None, schema: Schema | None = None
              ) -> tuple[ReadPlan, RecordDecoder]:
    """:func:`open_records` without the records (their locations are not read)."""
    if isinstance(path, Mix):
        read, _ = open_mix(path, split, options, schema=schema, storage_options=storage_options)
    else:
        read = plan_read(path, split, schema=schema, storage_options=storage_options)
    return read, RecordDecoder(read.schema, options, inferred_from=read.inferred_from)


def split_records(read: ReadPlan, max_open_files: int | None = None) -> SplitRecords:
    """Random access to a plan's records (every file's index read, or the file scanned)."""
    return SplitRecords(read.path, read.split, max_open_files=max_open_files,
                        manifest=read.manifest, locations=read.locations(),
                        storage=read.storage)


def open_mix(mix: Mix, split: str, options: Any, *, schema: Schema | None,
             storage_options: dict[str, Any] | None) -> tuple[Any, MixPlan]:
    """Each source's read plan, checked to agree (the features read, their kinds and
    shapes, the storage and compression), joined: the plan of the joined record set (its
    schema the first source's, with the joined class names) and the mix's plan.

    Raises:
        DatasetError: sources that differ in a feature read (named, with both definitions),
            in storage or in compression.
        OptionError: bad weights (negative, summing to 0, on an empty source).
    """
    plans = [_source_plan(path, part, schema, storage_options)
             for path, part in mix.located(split)]
    named = [f"{os.fspath(path)}[{part}]" for path, part in mix.located(split)]
    # A source given twice is two sources: each counted under a name of its own.
    names = tuple(name if named.count(name) == 1 else f"{name}#{named[:i].count(name) + 1}"
                  for i, name in enumerate(named))
    read = _features_agreed(plans, names, options)
    _storage_agreed(plans, names)
    label, joined, relabel = _joined_classes(plans, read)
    first = plans[0]
    found = first.schema.class_label()
    chosen = first.schema if label is None or found is None else Schema({
        **first.schema, label: dataclasses.replace(found[1], names=tuple(joined))})
    boxes, box_tables = _joined_boxes(plans, read)
    chosen = Schema({**chosen, **boxes})
    each = [p.locations() for p in plans]  # files without a manifest: counted here
    sizes = tuple(len(where.shard) for where in each)
    weights = mix_weights(mix.weights, sizes, names)
    records = mix.epoch_records or sum(sizes)
    located = joined_locations([(SplitPart(p.split, 0, n), where)
                                for p, n, where in zip(plans, sizes, each, strict=True)],
                               first.compression)
    described = json.dumps([[p.fingerprint for p in plans], weights, records])
    plan = MixPlan(names, sizes, weights, records,
                   hashlib.sha256(described.encode()).hexdigest()[:16], label, relabel,
                   box_tables)
    # Per file of the joined locations (a split a source names twice lists its files twice).
    counts = np.bincount(located.shard, minlength=len(located.files)).tolist()
    return ReadPlan(" + ".join(names), split, located.files, tuple(counts), first.compression,
                    None, chosen, max(p.inferred_from for p in plans),
                    bytes_per_record=first.bytes_per_record, storage=first.storage,
                    classes=tuple(located.shard_class.tolist()), taken=sum(sizes), mix=plan,
                    mix_locations=located), plan


def _source_plan(path: str | os.PathLike[str], split: str, schema: Schema | None,
                 storage_options: dict[str, Any] | None) -> Any:
    """One source's read plan; its errors name the source.

    Raises:
        DatasetError: as :func:`~tfrecordkit.readers.plan_read`, naming the source.
    """
    try:
        return plan_read(path, split, schema=schema, storage_options=storage_options)
    except DatasetError as err:
        if os.fspath(path) in str(err):
            raise
        raise DatasetError(f"Mix source {os.fspath(path)}: {err}") from None


def _features_agreed(plans: Sequence[Any], names: Sequence[str], options: Any) -> list[str]:
    """The features every source reads (the first source's), after checking each source
    holds them with the same kind, dtype and shape (class names aside)."""
    read = BatchLayout.of(plans[0].schema, options).names
    for plan, name in zip(plans[1:], names[1:], strict=True):
        mine = BatchLayout.of(plan.schema, options).names
        if set(mine) != set(read):
            odd = sorted(set(mine) ^ set(read))[0]
            has = names[0] if odd in read else name
            raise DatasetError(f"Mix: {has} has feature {odd!r}, the other does not "
                               f"({names[0]}: {sorted(read)}; {name}: {sorted(mine)}): "
                               "give DecodeOptions(features=[...]) both hold")
        label = plans[0].schema.class_label()
        boxes = plans[0].schema.of_kind(Boxes)
        for feature in read:
            ours, theirs = (_described(p.schema[feature], joined=feature in boxes or (
                label is not None and feature == label[0])) for p in (plans[0], plan))
            if ours != theirs:
                raise DatasetError(f"Mix: feature {feature!r} differs: {names[0]} has "
                                   f"{ours}, {name} has {theirs}")
    return read


def _described(feature: Any, *, joined: bool) -> dict[str, Any]:
    """A feature's definition (the class label's or boxes' names and ids aside: those are
    joined by name)."""
    described = dict(feature.to_json())
    if joined:
        described.pop("names", None)
        described.pop("ids", None)
    return described


def _storage_agreed(plans: Sequence[Any], names: Sequence[str]) -> None:
    """Refuse sources on different filesystems or with different compressions."""
    first = plans[0]
    for plan, name in zip(plans[1:], names[1:], strict=True):
        if plan.compression != first.compression:
            raise DatasetError(f"Mix: {name} is {plan.compression or 'not'} compressed, "
                               f"{names[0]} {first.compression or 'not'}: mix datasets "
                               "written alike")
        if _storage_key(plan.storage) != _storage_key(first.storage):
            raise DatasetError(f"Mix: {name} and {names[0]} are on different filesystems; "
                               "mix datasets on one (copy one over)")


def _storage_key(storage: Storage) -> Any:
    return None if storage.local else (storage.protocol, json.dumps(storage.options,
                                                                    sort_keys=True,
                                                                    default=str))


def _joined_classes(plans: Sequence[Any], read: Sequence[str]
                    ) -> tuple[str | None, list[str], np.ndarray | None]:
    """The class label read (if any), the sources' class names joined by name (the first
    source's in order, then each new name), and each source's ids mapped to the joined ones
    (None when every source has the same names)."""
    found = plans[0].schema.class_label()
    if found is None or found[0] not in read:
        return None, [], None
    label = found[0]
    lists = [list(p.schema.class_names(label)) for p in plans]
    joined = list(dict.fromkeys(name for names in lists for name in names))
    if all(names == lists[0] for names in lists):
        return label, joined, None
    table = np.zeros((len(lists), max(map(len, lists))), np.int64)
    where = {name: i for i, name in enumerate(joined)}
    for j, names in enumerate(lists):
        table[j, : len(names)] = [where[n] for n in names]
    return label, joined, table


def _joined_boxes(plans: Sequence[Any], read: Sequence[str]
                  ) -> tuple[dict[str, Boxes], dict[str, np.ndarray]]:
    """Each ``Boxes`` feature read, its category names joined by name as class names are
    (:meth:`Boxes.joined`), and where the sources' names differ, each source's ids mapped
    to the joined ones."""
    features: dict[str, Boxes] = {}
    tables: dict[str, np.ndarray] = {}
    for name, first in plans[0].schema.of_kind(Boxes).items():
        if name not in read:
            continue
        each = [p.schema.feature_as(name, Boxes) for p in plans]
        features[name] = joined = first.joined(each[1:])
        lists = [list(b.names) for b in each]
        if any(names != lists[0] for names in lists):
            where = {n: i for i, n in enumerate(joined.names)}
            table = np.zeros((len(lists), max(map(len, lists), default=0) or 1), np.int64)
            for j, names in enumerate(lists):
                table[j, : len(names)] = [where[n] for n in names]
            tables[name] = table
    return features, tables
