"""The order of one epoch of several sources mixed by weight: which source each position of
the epoch takes (one keyed draw against the cumulative weights), and which of its records (each
source walks its own epoch order, again reshuffled whenever it runs out). A pure function of
(sizes, weights, seed, epoch, position): nothing depends on the batch size, the rank or the
worker, and any position is found without reading the ones before it twice."""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from tfrecordkit.errors import OptionError
from tfrecordkit.sampling._order import EpochOrder, ShuffleMode, mix_keys

__all__ = ["MIX_CHUNK", "MixOrder", "mix_weights"]

#: Positions drawn at a time: each source's running count is kept at every chunk's start.
MIX_CHUNK = 1 << 15
_MIX_SALT = 0x6D6978  # "mix": draws apart from every other keyed draw of the seed
_TOP = 1 << 64


def mix_weights(weights: Sequence[float] | None, sizes: Sequence[int],
                names: Sequence[str]) -> tuple[float, ...]:
    """``weights`` (None: each source's records) as fractions summing to 1.

    Raises:
        OptionError: a weight that is not a finite number >= 0, weights summing to 0, a
            number of weights other than of sources, or a source with weight but no records.
    """
    raw = list(sizes) if weights is None else list(weights)
    if len(raw) != len(sizes):
        raise OptionError(f"Mix: {len(raw)} weights for {len(sizes)} sources")
    given: list[float] = []
    for name, weight in zip(names, raw, strict=True):
        if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
            raise OptionError(f"Mix: the weight of {name} must be a number >= 0; got "
                              f"{weight!r:.60}")
        try:
            value = float(weight)  # NumPy scalars too; an int past float's range refused
        except OverflowError:
            raise OptionError(f"Mix: the weight of {name} is too large for a float; weights "
                              "are relative: give smaller numbers of the same ratios") from None
        if not math.isfinite(value) or value < 0:
            raise OptionError(f"Mix: the weight of {name} must be a finite number >= 0; got "
                              f"{weight!r}")
        given.append(value)
    largest = max(given, default=0.0)
    if largest <= 0:
        raise OptionError(f"Mix: the weights sum to 0 ({', '.join(map(str, raw))}): give "
                          f"at least one source a positive weight")
    for name, weight, size in zip(names, given, sizes, strict=True):
        if weight > 0 and size == 0:
            raise OptionError(f"Mix: {name} has no records but weight {weight}")
    total = sum(given)
    if not math.isfinite(total):  # each finite, their sum not: scaled to [0, 1] first
        given = [w / largest for w in given]
        total = sum(given)
    return tuple(w / total for w in given)


@dataclass(frozen=True)
class MixOrder:
    """Epoch ``epoch`` of a mix: ``ids(positions)`` gives, for positions in ``[0, records)``,
    each one's source and the record id within that source.

    Position ``t`` takes source ``j`` with probability ``weights[j]`` (a keyed draw of
    (seed, epoch, t)); the ``c``-th position taking source ``j`` reads that source's epoch
    order at ``c % sizes[j]``, the order drawn afresh (seeded by source and round) each time
    the source has been read through. ``mode`` and ``blocks`` are each source's shuffle, as
    :class:`EpochOrder` takes them.
    """

    sizes: tuple[int, ...]
    weights: tuple[float, ...]
    seed: int
    epoch: int
    records: int
    mode: ShuffleMode = "block"
    blocks: tuple[int, ...] = ()

    @cached_property
    def _bounds(self) -> np.ndarray:
        """The draw's upper bound for each source but the last (uint64)."""
        edges = np.cumsum(np.asarray(self.weights, dtype=np.float64))[:-1]
        return np.array([min(int(e * _TOP), _TOP - 1) for e in edges.tolist()], np.uint64)

    def sources(self, positions: np.ndarray) -> np.ndarray:
        """The source each of ``positions`` takes."""
        draws = mix_keys(self.seed, self.epoch, _MIX_SALT,
                         np.asarray(positions, dtype=np.int64))
        found = np.searchsorted(self._bounds, draws, side="right").astype(np.int64)
        # A source of weight 0 inside the list has the bound of the one before it; past the
        # last weighted source, float rounding of the sum could leave a sliver: clamped.
        return np.minimum(found, self._last_weighted)

    @cached_property
    def _last_weighted(self) -> int:
        return max(j for j, w in enumerate(self.weights) if w > 0)

    @cached_property
    def _kept(self) -> _Kept:
        return _Kept(starts=[np.zeros(len(self.sizes), np.int64)])

    def _chunk(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """Chunk ``c``'s sources and each position's record in its source (drawn for the
        whole chunk at once: a step then only gathers)."""
        with self._kept.lock:  # tf.data asks for steps from several threads
            return self._chunk_locked(c)

    def _chunk_locked(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        chunks, starts = self._kept.chunks, self._kept.starts
        found = chunks.get(c)
        if found is not None:
            return found
        while len(starts) <= c:  # each chunk's start counts, drawn once
            k = len(starts) - 1
            taken = self.sources(np.arange(k * MIX_CHUNK, min((k + 1) * MIX_CHUNK,
                                                              self.records)))
            starts.append(starts[-1] + np.bincount(taken, minlength=len(self.sizes)))
        source = self.sources(np.arange(c * MIX_CHUNK, min((c + 1) * MIX_CHUNK,
                                                           self.records)))
        count = np.empty(len(source), np.int64)
        for j in range(len(self.sizes)):
            mine = source == j
            count[mine] = starts[c][j] + np.arange(int(mine.sum()))
        if len(chunks) >= 2:
            chunks.pop(next(iter(chunks)))
        chunks[c] = (source, self._records_of(source, count))
        return chunks[c]

    def ids(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each of ``positions`` (each in ``[0, records)``): its source and the record id
        in that source."""
        positions = np.asarray(positions, dtype=np.int64)
        if not len(positions):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        first, last = int(positions.min()) // MIX_CHUNK, int(positions.max()) // MIX_CHUNK
        if first == last:  # a step: within one chunk, a gather
            drawn, records = self._chunk(first)
            return drawn[positions - first * MIX_CHUNK], records[positions - first * MIX_CHUNK]
        source = np.empty(len(positions), np.int64)
        record = np.empty(len(positions), np.int64)
        chunk_of = positions // MIX_CHUNK
        for c in np.unique(chunk_of).tolist():
            mask = chunk_of == c
            drawn, records = self._chunk(c)
            source[mask] = drawn[positions[mask] - c * MIX_CHUNK]
            record[mask] = records[positions[mask] - c * MIX_CHUNK]
        return source, record

    def _records_of(self, source: np.ndarray, count: np.ndarray) -> np.ndarray:
        """Each source's record at its ``count``-th read of the epoch."""
        out = np.empty(len(source), np.int64)
        sizes = np.asarray(self.sizes, np.int64)
        size = sizes[source]
        rounds, at = count // np.maximum(size, 1), count % np.maximum(size, 1)
        pair = source * (1 << 40) + rounds  # rounds stay far below 2**40
        for p in np.unique(pair).tolist():
            mask = pair == p
            out[mask] = self._order(p >> 40, p & ((1 << 40) - 1)).ids(at[mask])
        return out

    def _order(self, source: int, round_: int) -> EpochOrder:
        """Source ``source``'s order in its ``round_``-th pass of this epoch."""
        orders = self._kept.orders
        key = (source, round_)
        with self._kept.lock:
            found = orders.get(key)
        if found is None:
            seed = int(mix_keys(self.seed, _MIX_SALT, source, round_)[0]) >> 1
            found = EpochOrder(self.sizes[source], seed, self.epoch, self.mode,
                               block=self.blocks[source] if self.blocks else 64)
            with self._kept.lock:
                if len(orders) >= 2 * len(self.sizes):
                    orders.pop(next(iter(orders)))
                orders[key] = found
        return found

    def counts(self) -> np.ndarray:
        """How many positions of the epoch each source takes."""
        c = max(0, (self.records - 1) // MIX_CHUNK)
        source, _ = self._chunk(c)
        return self._kept.starts[c] + np.bincount(source, minlength=len(self.sizes))


@dataclass
class _Kept:
    """What a :class:`MixOrder` keeps between calls: each chunk's starting counts (a few
    bytes per source per chunk), the latest two chunks' sources and records (16 bytes a
    position) and sources' orders."""

    starts: list[np.ndarray]
    chunks: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    orders: dict[tuple[int, int], EpochOrder] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)
