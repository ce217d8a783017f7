"""Several datasets (or splits of them) read as one, mixed by weight: :class:`Mix`, given to any
loader where the path goes. Their records are joined into one record set (source ``j``'s
record ``i`` is id ``offsets[j] + i``), read through one decoder, and each epoch's positions
drawn from the sources by :class:`~tfrecordkit.sampling.MixOrder`; class names are joined by
name, each source's ids mapped onto the joined list."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfrecordkit.errors import OptionError
from tfrecordkit.sampling import MixOrder, ShuffleMode, mix_weights
from tfrecordkit.store import SplitArg, split_text

__all__ = ["Mix", "MixPlan", "MixSource", "refuse_mix"]

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
    #: Per ``Boxes`` feature whose sources' category names differ: (sources, categories)
    #: -> joined category id.
    boxes: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)

    @property
    def joins(self) -> bool:
        """Some source's class or box ids must be mapped onto the joined names."""
        return self.relabel is not None or bool(self.boxes)

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
        for name, table in self.boxes.items():
            if isinstance(out.get(name), Mapping) and "labels" in out[name]:
                sources = self.source_of(np.reshape(ids, -1)).reshape(np.shape(ids))
                out[name] = {**out[name], "labels": _box_labels(table, out[name]["labels"],
                                                                sources)}
        return out


def _box_labels(table: np.ndarray, labels: Any, sources: np.ndarray) -> Any:
    """Box labels (one example's ``[n]``, a batch's ``{"values": [B, n], "lengths"}``
    padded or a list of arrays when ragged) as joined category ids, by each row's source;
    padding stays 0."""
    if isinstance(labels, Mapping):
        values = np.asarray(labels["values"])
        rows = sources.reshape(-1, *([1] * (values.ndim - 1))) if sources.ndim else sources
        lengths = np.asarray(labels["lengths"])[..., 0]
        kept = np.arange(values.shape[-1]) < (lengths[..., None] if values.ndim > 1
                                              else lengths)
        joined = np.where(kept, table[rows, values], 0).astype(values.dtype)
        return {**labels, "values": joined}
    if isinstance(labels, list):
        return [table[int(s), np.asarray(v)].astype(np.asarray(v).dtype)
                for s, v in zip(np.reshape(sources, -1), labels, strict=True)]
    values = np.asarray(labels)
    return table[int(np.reshape(sources, -1)[0]), values].astype(values.dtype)


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
