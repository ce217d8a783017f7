"""``batch_size=None``, the same in every loader: single examples, each record's values in the
batch structure without the batch dimension (``"__id"`` a scalar), in the order the batched
loaders read on one rank; the state counts records."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import numpy as np

from tfrecordkit.codecs import RecordKeys
from tfrecordkit.errors import OptionError
from tfrecordkit.format import RecordSlices
from tfrecordkit.readers._decoding import RecordDecoder, record_values
from tfrecordkit.readers._keys import RECORD_ID
from tfrecordkit.readers._mix import MixPlan
from tfrecordkit.readers._partition import Partition
from tfrecordkit.sampling import check_state
from tfrecordkit.store import SplitRecords

__all__ = ["UNBATCHED_STEP", "Examples", "check_unbatched"]

#: Records read at a time for single examples: on one rank the order is the same for every
#: batch size, so only the read size changes.
UNBATCHED_STEP = 256


class StepLoader(Protocol):
    """What single examples read through: the NumPy loader's order, records and decoder
    (:class:`~tfrecordkit.readers.numpy_data.Loader` has them; named here so this module does
    not import the loader that builds it)."""

    partition: Partition
    features: Any
    mix: MixPlan | None
    batch_size: int
    seed: int
    shuffle: Any
    augment: Any
    fingerprint: str
    plan: Any

    @property
    def epoch_records(self) -> int: ...

    @property
    def records(self) -> SplitRecords: ...

    @property
    def decoder(self) -> RecordDecoder: ...

    def step_ids(self, epoch: int, step: int) -> tuple[np.ndarray, Any]: ...

    def __len__(self) -> int: ...


def check_unbatched(partition: Partition) -> None:
    """Refuse single examples on several ranks.

    Raises:
        OptionError: ``partition`` has more than one rank.
    """
    if partition.world_size > 1:
        raise OptionError("batch_size=None gives single examples: with several ranks give "
                          "the global batch_size (each rank reads its share of every global "
                          "batch)")


class Examples:
    """Single examples of one split (``batch_size=None``): iterating runs the rest of the
    current epoch, example by example; ``len()`` is the records of an epoch; ``state_dict()``
    (JSON) counts the examples given, and ``load_state_dict`` continues exactly there."""

    def __init__(self, loader: StepLoader) -> None:
        check_unbatched(loader.partition)
        self.loader = loader
        self.epoch, self.step = 0, 0
        self.features, self.mix = loader.features, loader.mix

    def __len__(self) -> int:
        return self.loader.epoch_records

    def set_epoch(self, epoch: int) -> None:
        """Start ``epoch`` (from its first example) on the next iteration."""
        self.epoch, self.step = int(epoch), 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        epoch = self.epoch
        for example in self.examples(epoch, self.step):
            self.step += 1
            yield example
        self.epoch, self.step = epoch + 1, 0

    def batches(self, steps: int | None = None) -> Iterator[dict[str, Any]]:
        """``steps`` examples (None: endless) from where the loader stands, across epochs."""
        if steps is not None and steps < 0:
            raise OptionError(f"steps must be >= 0 or None; got {steps}")
        count = 0
        while steps is None or count < steps:
            for example in self:
                yield example
                count += 1
                if steps is not None and count >= steps:
                    return

    def examples(self, epoch: int, start: int = 0) -> Iterator[dict[str, Any]]:
        """The examples of ``epoch`` from its ``start``-th, read :data:`UNBATCHED_STEP`
        records at a time."""
        loader = self.loader
        size = loader.batch_size
        for step in range(start // size, len(loader)):
            ids, _ = loader.step_ids(epoch, step)
            rows = self._rows(epoch, ids)
            for i in range(start - step * size if step == start // size else 0, len(ids)):
                rows[i][RECORD_ID] = ids[i]
                yield rows[i]

    def _rows(self, epoch: int, ids: np.ndarray) -> list[dict[str, Any]]:
        """Records ``ids`` as single examples, decoded as the batched loaders decode them."""
        loader = self.loader
        records, decoder = loader.records, loader.decoder
        raw = records.get_slices(ids)
        classes = records.shard_classes(ids) if decoder.shard_label else None

        def where(i: int) -> str:
            return records.where(int(ids[i]))

        if not decoder.options.decode:
            listed = raw.records() if isinstance(raw, RecordSlices) else raw
            parsed = [decoder.raw_one(r, where(i), None if classes is None
                                      else int(classes[i])) for i, r in enumerate(listed)]
            return parsed if loader.mix is None else [
                loader.mix.relabelled(row, np.int64(i)) for row, i in zip(parsed, ids,
                                                                         strict=True)]
        rows = decoder.decode_rows(raw, where, classes, RecordKeys(loader.seed, epoch, ids))
        if loader.augment is not None:  # randomness keyed by the record, as when batched
            rows = [loader.augment(row, np.random.default_rng([loader.seed, epoch, int(i)]))
                    for row, i in zip(rows, ids, strict=True)]
        padding, layout = decoder.options.padding, decoder.layout
        if loader.mix is not None:  # each source's class ids as the joined names' ids
            rows = [loader.mix.relabelled(row, np.int64(i)) for row, i in zip(rows, ids,
                                                                              strict=True)]
        return [{name: record_values(layout[name], row[name], padding)
                 for name in decoder.features} for row in rows]

    def state_dict(self) -> dict[str, Any]:
        """Where the loader is, as JSON: the epoch and the examples of it given."""
        loader = self.loader
        return {"epoch": self.epoch, "step": self.step, "seed": loader.seed,
                "batch_size": None, "shuffle": loader.shuffle, "drop_last": False,
                "fingerprint": loader.fingerprint, "split": loader.plan.split}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a :meth:`state_dict`; refuses one of another dataset, seed, order
        or batch size, or a malformed one (naming the key)."""
        state = self.check_state(state)
        self.epoch, self.step = state["epoch"], state["step"]

    def check_state(self, state: Any) -> dict[str, Any]:
        """``state`` as a dict, checked to be a whole state of these examples."""
        loader = self.loader
        return check_state(state, {"fingerprint": loader.fingerprint, "seed": loader.seed,
                                   "batch_size": None, "shuffle": loader.shuffle,
                                   "drop_last": False}, len(self),
                           split=loader.plan.split)
