"""Seeded sampling plans for metric learning: P×K class-balanced batches and triplets.

Plans choose *which* records (by position in a :class:`ClassIndex`); readers fetch and decode
them. A plan's state can be saved and restored to continue identically.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from tfrecordkit.errors import DatasetError, OptionError, StateError
from tfrecordkit.sampling._class_index import ClassIndex
from tfrecordkit.sampling._order import feistel_permute, feistel_permute_each, mix_keys
from tfrecordkit.sampling._state import MAX_EPOCH, check_state, state_int

__all__ = ["PKSampler", "TripletSampler"]

logger = logging.getLogger(__name__)

EpochUnit = Literal["classes", "examples"]


@dataclass(frozen=True)
class _SmallClasses:
    count: int
    examples: int


class PKSampler:
    """Batches of P distinct classes × K records each, as a pure function of
    ``(seed, epoch, step)``: any step can be built by any worker, and the state is JSON.

    Every *round* visits each class once, in a fresh seeded order, so which classes meet in a
    batch keeps changing; a round's last step, when short, is filled with other classes of the
    same round. Each class's records are used without replacement, in a fresh order each
    time all have been used (a class holding fewer than K records is sampled with replacement,
    or left out with ``exclude_small``).

    ``epoch="classes"`` makes an epoch one round; ``"examples"`` makes it as many steps as cover
    the records once on average. ``rank``/``world_size`` split every step's P·world_size classes
    between workers, so together they cover each round.
    """

    def __init__(
        self,
        index: ClassIndex,
        classes_per_batch: int,
        examples_per_class: int,
        *,
        seed: int = 0,
        exclude_small: bool = False,
        epoch: EpochUnit = "classes",
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        if classes_per_batch < 1 or examples_per_class < 1:
            raise OptionError(f"P and K must be positive; got P={classes_per_batch}, "
                             f"K={examples_per_class}")
        if not 0 <= rank < world_size:
            raise OptionError(f"rank must be in 0..{world_size - 1}; got {rank}")
        if epoch not in ("classes", "examples"):
            raise OptionError(f"epoch must be 'classes' or 'examples'; got {epoch!r}")
        self.index = index
        self.p, self.k = classes_per_batch, examples_per_class
        self.rank, self.world_size = rank, world_size
        self.epoch, self.seed, self.exclude_small = epoch, int(seed), exclude_small
        counts = index.counts
        small = counts < examples_per_class
        self.small_classes = _SmallClasses(int(small.sum()), int(counts[small].sum()))
        eligible = np.flatnonzero(~small if exclude_small else counts > 0)
        self._eligible = eligible  # positions in index.classes
        needed = classes_per_batch * world_size
        if len(eligible) < needed:
            raise DatasetError(
                f"P×workers = {needed} distinct classes per step, but only {len(eligible)} "
                f"classes are eligible (K={examples_per_class}, exclude_small={exclude_small})")
        if self.small_classes.count:
            verb = "left out" if exclude_small else "sampled with replacement"
            logger.warning("%d classes have fewer than K=%d records; they are %s",
                           self.small_classes.count, examples_per_class, verb)
        self._steps_per_round = math.ceil(len(eligible) / needed)
        self._round: tuple[int, np.ndarray, np.ndarray] | None = None  # (round, order, fill)
        self.next_epoch, self.next_step = 0, 0  # the cursor of next_batch()

    @property
    def num_classes(self) -> int:
        """Classes the sampler draws from."""
        return len(self._eligible)

    @property
    def steps_per_epoch(self) -> int:
        """Steps per epoch for this worker (see ``epoch``)."""
        per_step = self.p * self.world_size
        if self.epoch == "classes":
            return self._steps_per_round
        records = int(self.index.counts[self._eligible].sum())
        return math.ceil(records / (per_step * self.k))

    def _key(self, *parts: int) -> int:
        data = json.dumps([self.seed, *parts]).encode()
        return int.from_bytes(hashlib.blake2b(data, digest_size=16).digest(), "little")

    def _round_orders(self, round_: int) -> tuple[np.ndarray, np.ndarray]:
        """A round's class order, and the order its short last step is filled from."""
        held = self._round  # read once: a thread reading ahead may hold another round
        if held is None or held[0] != round_:
            n = len(self._eligible)
            order = self._eligible[feistel_permute(np.arange(n), n, self._key(0, round_))]
            fill = self._eligible[feistel_permute(np.arange(n), n, self._key(1, round_))]
            held = self._round = (round_, order, fill)
        return held[1], held[2]

    def step_classes(self, epoch: int, step: int) -> tuple[int, list[int], int]:
        """The round, all workers' classes (positions in the index) at ``step`` of ``epoch``,
        and how many of them come from the round's order (the rest fill a short last step)."""
        rounds_per_epoch = math.ceil(self.steps_per_epoch / self._steps_per_round)
        round_ = epoch * rounds_per_epoch + step // self._steps_per_round
        order, fill = self._round_orders(round_)
        needed = self.p * self.world_size
        first = (step % self._steps_per_round) * needed
        chosen = order[first : first + needed].tolist()
        in_order = len(chosen)
        if in_order < needed:
            taken = set(chosen)
            chosen += [c for c in fill.tolist() if c not in taken][: needed - in_order]
        return round_, chosen, in_order

    def batch(self, epoch: int, step: int) -> np.ndarray:
        """This worker's batch at ``step`` of ``epoch``: P·K record positions in the class
        index, class-major (K per class).

        A class's ``v``-th visit as a round's member takes records ``[vK, (v+1)K)`` of an order
        of its records that changes every ``size // K`` visits (so every record is used before
        any repeats); a filler visit takes K records of its own order.
        """
        round_, classes, in_order = self.step_classes(epoch, step)
        first = self.rank * self.p
        mine = np.asarray(classes[first : first + self.p], dtype=np.int64)
        filler = np.arange(first, first + self.p) >= in_order
        k, sizes = self.k, self.index.counts[mine].astype(np.int64)
        cycle, visit = np.divmod(round_, np.maximum(sizes // k, 1))
        keys = mix_keys(self.seed, 2, mine, cycle)
        if filler.any():
            keys = np.where(filler, mix_keys(self.seed, 3, mine, round_), keys)
        slots = np.where(filler, 0, visit * k)[:, None] + np.arange(k)
        grid = np.zeros((len(mine), k), dtype=np.int64)
        full = sizes >= k
        grid[full] = feistel_permute_each(
            slots[full].ravel(), np.repeat(sizes[full], k), np.repeat(keys[full], k)
        ).reshape(-1, k)
        picked = grid.ravel()
        for i in np.flatnonzero(~full).tolist():  # too few records: with replacement
            rng = np.random.default_rng([self.seed, int(mine[i]), round_, 2 + int(filler[i])])
            picked[i * k : (i + 1) * k] = rng.choice(int(sizes[i]), k, replace=True)
        return np.repeat(self.index.starts[mine], k) + picked

    def __iter__(self) -> Iterator[np.ndarray]:
        """Endless batches from the cursor (see :meth:`next_batch`)."""
        while True:
            yield self.next_batch()

    def next_batch(self) -> np.ndarray:
        """The batch at the cursor, which then moves one step (into the next epoch after the
        last step)."""
        batch = self.batch(self.next_epoch, self.next_step)
        self.next_step += 1
        if self.next_step == self.steps_per_epoch:
            self.next_epoch, self.next_step = self.next_epoch + 1, 0
        return batch

    def state_dict(self) -> dict[str, Any]:
        """The cursor and what the batches depend on, as JSON."""
        return {"epoch": self.next_epoch, "step": self.next_step, "seed": self.seed,
                "classes_per_batch": self.p, "examples_per_class": self.k,
                "epoch_unit": self.epoch, "exclude_small": self.exclude_small,
                "classes": self.num_classes}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`state_dict`; refuses one saved with other settings or a
        malformed one (:class:`~tfrecordkit.errors.StateError` naming the key)."""
        mine = {k: v for k, v in self.state_dict().items() if k not in ("epoch", "step")}
        state = check_state(state, mine, self.steps_per_epoch, what="sampler")
        self.next_epoch, self.next_step = state["epoch"], state["step"]


class TripletSampler:
    """(anchor, positive, negative) record positions; every anchor once per epoch.

    The positive is another record of the anchor's class, the negative a record of a different
    class (classes drawn uniformly). Classes with a single record cannot be anchors (there is no
    other positive); they are reported once and still serve as negatives.
    """

    def __init__(self, index: ClassIndex, *, seed: int = 0, rank: int = 0,
                 world_size: int = 1) -> None:
        if len(index.classes) < 2:
            raise DatasetError("triplets need at least two classes")
        if not 0 <= rank < world_size:
            raise OptionError(f"rank must be in 0..{world_size - 1}; got {rank}")
        self.index = index
        self.rank, self.world_size = rank, world_size
        counts = index.counts
        self._class_of = np.repeat(np.arange(len(counts)), counts)
        anchors = np.flatnonzero(counts[self._class_of] >= 2)
        self._anchors = anchors
        lonely = int((counts < 2).sum())
        if lonely:
            logger.warning("%d classes have a single record: no anchors from them", lonely)
        self.seed = seed
        self.epoch = 0

    @property
    def total_anchors(self) -> int:
        """Anchors per epoch over all workers."""
        return len(self._anchors)

    @property
    def anchors_per_epoch(self) -> int:
        """Anchors this worker sees per epoch."""
        return len(range(self.rank, len(self._anchors), self.world_size))

    def epoch_triplets(self) -> np.ndarray:
        """The triplets of the next epoch (see :meth:`triplets`), which then becomes current."""
        out = self.triplets(self.epoch)
        self.epoch += 1
        return out

    def triplets(self, epoch: int) -> np.ndarray:
        """Epoch ``epoch``'s triplets for this worker: an ``(n, 3)`` array of record positions.

        The epoch's randomness is a function of ``(seed, epoch)`` alone, so every worker draws
        the same anchor order however many draws the others made before.
        """
        order = np.random.default_rng([self.seed, epoch]).permutation(self._anchors)
        # All workers permute identically; each takes every world_size-th anchor.
        anchors = order[self.rank :: self.world_size]
        rng = np.random.default_rng([self.seed, epoch, self.rank + 1])
        starts, counts = self.index.starts, self.index.counts
        anchor_class = self._class_of[anchors]
        # Positive: another record of the class (shift by 1..count-1, modulo the class).
        within = anchors - starts[anchor_class]
        shift = 1 + (rng.random(len(anchors)) * (counts[anchor_class] - 1)).astype(np.int64)
        positives = starts[anchor_class] + (within + shift) % counts[anchor_class]
        # Negative: a uniformly drawn other class, then a record of it.
        other = rng.integers(0, len(counts) - 1, len(anchors))
        other += other >= anchor_class
        negatives = starts[other] + (rng.random(len(anchors)) * counts[other]).astype(np.int64)
        return np.stack([anchors, positives, negatives], axis=1)

    def state_dict(self) -> dict[str, Any]:
        """JSON-ready state: the next epoch and the seed."""
        return {"epoch": self.epoch, "seed": self.seed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` output (the seed must match)."""
        if not isinstance(state, Mapping):
            raise StateError("", f"must be a dict; got {type(state).__name__}")
        if "seed" in state and (type(state["seed"]) is not int or state["seed"] != self.seed):
            raise StateError("seed", f"the state was saved with {state['seed']!r:.40}; this "
                                     f"sampler has {self.seed!r}")
        self.epoch = state_int(state, "epoch", 0, MAX_EPOCH)
