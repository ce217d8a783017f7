"""Several datasets (or splits of them) read as one, mixed by weight: :class:`Mix`, given to any
loader where the path goes. Their records are joined into one record set (source ``j``'s
record ``i`` is id ``offsets[j] + i``), read through one decoder, and each epoch's positions
drawn from the sources by :class:`~tfrecordkit.sampling.MixOrder`; class names are joined by
name, each source's ids mapped onto the joined list."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfrecordkit.errors import DatasetError, OptionError
from tfrecordkit.format import Storage
from tfrecordkit.readers._layout import BatchLayout
from tfrecordkit.sampling import MixOrder, ShuffleMode, mix_weights
from tfrecordkit.schema import Schema
from tfrecordkit.store import SplitArg, SplitPart, joined_locations, split_text

__all__ = ["Mix", "MixPlan", "MixSource", "open_mix", "refuse_mix"]

MixSource = str | os.PathLike[str] | tuple[str | os.PathLike[str], SplitArg]
"""One source of a :class:`Mix`: a dataset directory (or TFRecord files' glob), read at the
loader's split, or ``(path, split)`` with its own split or split expression."""


@dataclass(frozen=True)
class Mix:
    """Several datasets read as one, each position of an epoch drawn from a source with
    probability proportional to its weight; give it to any loader where the path goes,
    e.g. ``load_numpy_dataset(tk.Mix(["web", "books"], weights=[3, 1]), batch_size=32)``.

    An epoch is ``epoch_records`` positions (default: the sources' records together), read
    in batches as a split of that many records is. Each source is read in its own order
    (shuffled, or stored with ``InOrder()``) and starts again, reshuffled, whenever it runs
    out, so a small source with a large weight repeats and a large one with a small weight
    is sampled. Which source and record each position reads is a pure function of (seed,
    epoch, position): the same batches in every reader, and ``state=`` resumes exactly.

    Attributes:
        sources: each a dataset directory (read at the loader's ``split``), or
            ``(path, split)`` with its own split or split expression.
        weights: one number >= 0 per source (any scale); None: each source's records.
        epoch_records: positions in an epoch (None: the sources' records together).
    """

    sources: Sequence[MixSource]
    weights: Sequence[float] | None = None
    epoch_records: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.sources, str | os.PathLike) or not isinstance(self.sources,
                                                                         Sequence):
            raise OptionError(f"Mix(sources=...) must be a list of datasets; got "
                              f"{self.sources!r:.80}")
        object.__setattr__(self, "sources", tuple(self.sources))
        if not self.sources:
            raise OptionError("Mix needs at least one source")
        for source in self.sources:
            if not (isinstance(source, str | os.PathLike)
                    or (isinstance(source, tuple) and len(source) == 2
                        and isinstance(source[0], str | os.PathLike))):
                raise OptionError(f"Mix: a source is a dataset path or (path, split); got "
                                  f"{source!r:.80}")
        if self.weights is not None:
            if isinstance(self.weights, str) or not isinstance(self.weights, Sequence):
                raise OptionError(f"Mix(weights=...) must be a list of numbers; got "
                                  f"{self.weights!r:.80}")
            object.__setattr__(self, "weights", tuple(self.weights))
            # Checked as the mix will use them (sizes are known once the sources are open).
            mix_weights(self.weights, [1] * len(self.sources),
                        [str(s) for s in self.sources])
        size = self.epoch_records
        if size is not None and (isinstance(size, bool) or not isinstance(size, int)
                                 or size < 1):
            raise OptionError(f"Mix(epoch_records=...) must be a positive number or None; "
                              f"got {size!r}")

    def located(self, split: str) -> list[tuple[str | os.PathLike[str], str]]:
        """Each source's path and split (the loader's ``split`` for those without one)."""
        return [(s[0], split_text(s[1])) if isinstance(s, tuple) else (s, split)
                for s in self.sources]


def refuse_mix(path: Any) -> None:
    """Refuse a :class:`Mix` given where one dataset goes.

    Raises:
        OptionError: ``path`` is a mix.
    """
    if isinstance(path, Mix):
        raise OptionError("tk.Mix is read by load_numpy_dataset, load_torch_dataset, "
                          "load_tf_dataset and load_grain_source, which draw its batches; "
                          "this takes one dataset (export, show, report and Ray's "
                          "read_dataset read each source on its own)")


@dataclass(frozen=True)
class MixPlan:
    """A mix as opened: each source's name and records, where its ids start in the joined
    record set, its weight, the epoch's size, and each source's class ids mapped onto the
    joined class names (``relabel``: None when the sources' names agree)."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    weights: tuple[float, ...]
    records: int
    fingerprint: str
    label: str | None = None
    relabel: np.ndarray | None = None  # (sources, classes) -> joined id

    @property
    def offsets(self) -> np.ndarray:
        """Where each source's ids start in the joined record set."""
        return np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)

    def order(self, seed: int, epoch: int, mode: ShuffleMode, block: int) -> JoinedOrder:
        """Epoch ``epoch``'s order, as ids of the joined record set."""
        return JoinedOrder(MixOrder(self.sizes, self.weights, seed, epoch, self.records, mode,
                                    (block,) * len(self.sizes)), self.offsets)

    def source_of(self, ids: np.ndarray) -> np.ndarray:
        """The source (its position in the mix) of each joined record id."""
        return np.searchsorted(self.offsets, np.asarray(ids, np.int64), side="right") - 1

    def counts(self, seed: int, epoch: int) -> dict[str, int]:
        """How many records of each source epoch ``epoch`` reads, by source name (the draw
        of sources does not depend on the shuffle)."""
        taken = MixOrder(self.sizes, self.weights, seed, epoch, self.records).counts()
        return dict(zip(self.names, (int(n) for n in taken), strict=True))

    def relabelled(self, values: Mapping[str, Any], ids: np.ndarray | np.integer
                   ) -> dict[str, Any]:
        """``values`` (a batch, or one example with a scalar id) with the class label given
        as its joined id."""
        out = dict(values)
        if self.relabel is not None and self.label in out:
            label = np.asarray(out[self.label])
            out[self.label] = self.relabel[self.source_of(np.reshape(ids, -1)).reshape(
                np.shape(ids)), label].astype(label.dtype)
        return out


@dataclass(frozen=True)
class JoinedOrder:
    """One epoch of a mix as joined record ids: what a loader's epoch order gives."""

    mixed: MixOrder
    offsets: np.ndarray

    @property
    def epoch(self) -> int:
        return self.mixed.epoch

    def ids(self, positions: np.ndarray) -> np.ndarray:
        """The joined record id at each of ``positions``."""
        source, local = self.mixed.ids(positions)
        return self.offsets[source] + local  # type: ignore[no-any-return]


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
    from tfrecordkit.readers._plan import ReadPlan

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
    each = [p.locations() for p in plans]  # files without a manifest: counted here
    sizes = tuple(len(where.shard) for where in each)
    weights = mix_weights(mix.weights, sizes, names)
    records = mix.epoch_records or sum(sizes)
    located = joined_locations([(SplitPart(p.split, 0, n), where)
                                for p, n, where in zip(plans, sizes, each, strict=True)],
                               first.compression)
    described = json.dumps([[p.fingerprint for p in plans], weights, records])
    plan = MixPlan(names, sizes, weights, records,
                   hashlib.sha256(described.encode()).hexdigest()[:16], label, relabel)
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
    from tfrecordkit.readers._plan import plan_read

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
        for feature in read:
            ours, theirs = (_described(p.schema[feature], joined=label is not None
                                       and feature == label[0]) for p in (plans[0], plan))
            if ours != theirs:
                raise DatasetError(f"Mix: feature {feature!r} differs: {names[0]} has "
                                   f"{ours}, {name} has {theirs}")
    return read


def _described(feature: Any, *, joined: bool) -> dict[str, Any]:
    """A feature's definition (the class label's names aside: those are joined by name)."""
    described = dict(feature.to_json())
    if joined:
        described.pop("names", None)
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
