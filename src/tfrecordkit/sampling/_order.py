"""Which records a training step reads: a pure function of the dataset, the seed, the epoch,
the step, the global batch size and the shuffle mode. Nothing per worker or rank is kept."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np

from tfrecordkit._constants import FEISTEL_ROUNDS, SPLITMIX_GAMMA, SPLITMIX_MUL1
from tfrecordkit.codecs import mix_keys
from tfrecordkit.codecs import splitmix as _splitmix
from tfrecordkit.format import compiled_codec
from tfrecordkit.store import resolve_split

__all__ = ["EpochOrder", "ShuffleMode", "feistel_permute", "feistel_permute_each",
           "fingerprint", "mix_keys"]

ShuffleMode = Literal["global", "block", False]
_MASK64 = (1 << 64) - 1


def fingerprint(manifest_json: dict[str, Any], split: str) -> str:
    """A short stable hash of a split's manifest entry and schema (what an order depends on);
    of a split expression, its parts' (each split's entry and the records taken)."""
    splits = manifest_json.get("splits", {})
    if split in splits:
        data = json.dumps({"schema": manifest_json.get("schema"), "split": splits.get(split)},
                          sort_keys=True)
    else:
        parts = resolve_split(split, {name: int(entry.get("records", 0))
                                      for name, entry in splits.items()})
        data = json.dumps({"schema": manifest_json.get("schema"),
                           "parts": [[splits[p.split], p.start, p.stop] for p in parts]},
                          sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def _round_keys(key: int, rounds: int) -> list[int]:
    digest = hashlib.blake2b(key.to_bytes(16, "little", signed=False), digest_size=8 * rounds)
    raw = digest.digest()
    return [int.from_bytes(raw[8 * i : 8 * i + 8], "little") for i in range(rounds)]


def feistel_permute(positions: np.ndarray, n: int, key: int,
                    rounds: int = FEISTEL_ROUNDS) -> np.ndarray:
    """A keyed bijection of ``[0, n)``, applied to ``positions``, in O(1) memory.

    A balanced Feistel network over the smallest even number of bits covering ``n``, with
    cycle-walking: values that land at or above ``n`` are permuted again until they don't.
    """
    if n <= 1:
        return np.zeros_like(positions, dtype=np.int64)
    bits = max(2, int(n - 1).bit_length())
    bits += bits % 2
    half = bits // 2
    low_mask = np.uint64((1 << half) - 1)
    keys = [np.uint64(k) for k in _round_keys(key & ((1 << 128) - 1), rounds)]

    def once(x: np.ndarray) -> np.ndarray:
        left, right = x >> np.uint64(half), x & low_mask
        for k in keys:
            mixed = (right * np.uint64(SPLITMIX_GAMMA)) ^ k
            mixed ^= mixed >> np.uint64(29)
            mixed *= np.uint64(SPLITMIX_MUL1)
            mixed ^= mixed >> np.uint64(32)
            left, right = right, left ^ (mixed & low_mask)
        return (left << np.uint64(half)) | right

    with np.errstate(over="ignore"):
        out = once(np.asarray(positions, dtype=np.uint64))
        outside = out >= np.uint64(n)
        while outside.any():  # cycle-walk: stays a bijection of [0, n)
            out[outside] = once(out[outside])
            outside = out >= np.uint64(n)
    return out.astype(np.int64)


def feistel_permute_each(positions: np.ndarray, sizes: np.ndarray, keys: np.ndarray,
                         rounds: int = FEISTEL_ROUNDS) -> np.ndarray:
    """Element ``i``: ``positions[i]`` through a keyed bijection of ``[0, sizes[i])`` chosen by
    ``keys[i]``, for many domains at once (as :func:`feistel_permute`, vectorised; the
    compiled codec computes the same values where it is built)."""
    positions = np.ascontiguousarray(positions, dtype=np.uint64)
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    if positions.size and (positions >= np.maximum(sizes, 1).astype(np.uint64)).any():
        raise ValueError("every position must lie inside its domain [0, size)")
    codec = compiled_codec()
    if codec is not None:
        out = np.empty(len(positions), np.int64)
        codec.feistel_each(positions, sizes, np.ascontiguousarray(keys, dtype=np.uint64), out,
                           rounds)
        return out
    return _feistel_each_numpy(positions, sizes, np.asarray(keys), rounds)


def _feistel_each_numpy(positions: np.ndarray, sizes: np.ndarray, keys: np.ndarray,
                        rounds: int) -> np.ndarray:
    """:func:`feistel_permute_each` in NumPy (the pure-Python codec's)."""
    bits = np.maximum(2, np.ceil(np.log2(np.maximum(sizes, 2))).astype(np.int64))
    bits += bits % 2
    half = (bits // 2).astype(np.uint64)
    low_mask = (np.uint64(1) << half) - np.uint64(1)
    with np.errstate(over="ignore"):
        round_keys = [_splitmix(keys.astype(np.uint64) + np.uint64(r + 1)) for r in range(rounds)]

        def once(x: np.ndarray, where: np.ndarray) -> np.ndarray:
            h, mask = half[where], low_mask[where]
            left, right = x >> h, x & mask
            for k in round_keys:
                mixed = _splitmix(right ^ k[where])
                left, right = right, left ^ (mixed & mask)
            return (left << h) | right  # type: ignore[no-any-return]

        everyone = np.arange(len(positions))
        out = once(positions, everyone)
        # Domains of 0 or 1 values map to 0 (an empty one would cycle-walk for ever).
        bound = np.maximum(sizes, 1).astype(np.uint64)
        outside = out >= bound
        while outside.any():  # cycle-walk: stays a bijection of each domain
            idx = everyone[outside]
            out[idx] = once(out[idx], idx)
            outside = out >= bound
    return np.where(sizes <= 1, 0, out.astype(np.int64))


@dataclass(frozen=True)
class EpochOrder:
    """The order of one epoch: ``ids(positions)`` maps epoch positions to record ids.

    ``"global"`` is an exact uniform-looking permutation (Feistel); ``"block"`` permutes blocks
    of ``block`` consecutive records, then shuffles records within windows of ``window``
    blocks, so reads stay mostly sequential; ``False`` is the split's own order.
    """

    records: int
    seed: int
    epoch: int
    mode: ShuffleMode = "block"
    block: int = 64
    window: int = 16

    def _key(self, *parts: int) -> int:
        data = json.dumps([self.seed, self.epoch, *parts]).encode()
        return int.from_bytes(hashlib.blake2b(data, digest_size=16).digest(), "little")

    def ids(self, positions: np.ndarray) -> np.ndarray:
        """Record ids at ``positions`` (each in ``[0, records)``)."""
        positions = np.asarray(positions, dtype=np.int64)
        n = self.records
        if not self.mode or n <= 1:
            return positions.copy()
        if self.mode == "global":
            return feistel_permute(positions, n, self._key(0))
        # Block mode: the permuted blocks laid end to end (the last block may be short);
        # each window of `window` of them is shuffled within itself.
        starts, _ = self._windows
        out = np.empty_like(positions)
        window_of = np.searchsorted(starts, positions, side="right") - 1
        for w in np.unique(window_of).tolist():
            mask = window_of == w
            out[mask] = self._window(w)[positions[mask] - starts[w]]
        return out

    def _window(self, w: int) -> np.ndarray:
        """Window ``w``'s record ids in their shuffled order (the few latest kept: steps
        walk through a window's records one batch after another)."""
        kept = self._kept
        found = kept.get(w)
        if found is None:
            ids = self._windows[1](w)
            found = ids[feistel_permute(np.arange(len(ids)), len(ids), self._key(2, w))]
            with self._lock:  # tf.data asks for steps from several threads at once
                if len(kept) >= 4:
                    kept.pop(next(iter(kept)))
                kept[w] = found
        return found

    @cached_property
    def _lock(self) -> threading.Lock:
        return threading.Lock()

    @cached_property
    def _kept(self) -> dict[int, np.ndarray]:
        return {}

    @cached_property
    def _windows(self) -> tuple[np.ndarray, Any]:
        """Window start positions, and a function giving a window's record ids in order."""
        n, size = self.records, self.block
        blocks = -(-n // size)
        order = feistel_permute(np.arange(blocks), blocks, self._key(1))  # O(n / block)
        lengths = np.minimum(size, n - order * size)
        ends = np.cumsum(lengths)
        starts = np.concatenate([[0], ends[self.window - 1 :: self.window]])[
            : -(-blocks // self.window)]

        def ids_of(w: int) -> np.ndarray:
            chosen = order[w * self.window : (w + 1) * self.window]
            ids = (chosen[:, None] * size + np.arange(size)).ravel()
            return ids[ids < n] if chosen.max(initial=-1) == blocks - 1 else ids

        return starts.astype(np.int64), ids_of
