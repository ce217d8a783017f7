"""Layout options of a conversion, and the seeded record hash that orders records."""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass
from typing import Any, Literal

from tfrecordkit.errors import OptionError
from tfrecordkit.format import normalize_compression

__all__ = ["DEFAULT_SHARD_SIZE", "ShardOptions", "record_hash"]

DEFAULT_SHARD_SIZE = 192 << 20
"""Default target bytes per shard: 192 MiB, inside the 128–256 MiB range readers like."""


def record_hash(key: str, seed: int, purpose: str = "order") -> int:
    """A uniform 64-bit hash of ``key`` under ``seed``; stable across runs and machines."""
    hasher = _keyed_hasher(seed, purpose).copy()
    # surrogateescape: keys from non-UTF-8 file names hash their original bytes.
    hasher.update(key.encode("utf-8", "surrogateescape"))
    return int.from_bytes(hasher.digest(), "little")


@functools.lru_cache(maxsize=64)
def _keyed_hasher(seed: int, purpose: str) -> Any:
    """BLAKE2b keyed by ``seed`` and personalised by ``purpose``, nothing hashed yet (copied
    per key: the key block is compressed once)."""
    return hashlib.blake2b(digest_size=8, key=seed.to_bytes(16, "little", signed=True),
                           person=purpose.encode()[:16])


@dataclass(frozen=True)
class ShardOptions:
    """How records are laid out into shards.

    Attributes:
        shard_size: target bytes per shard (ignored when ``num_shards`` is set).
        num_shards: exact shards per split (per class with the per-class layout).
        min_shards: at least this many shards per split (mixed layout), e.g. the number of
            reader workers you expect.
        compression: None, ``"gzip"`` or ``"zlib"``.
        layout: ``"mixed"`` or ``"per_class"`` (each class in its own shards).
        seed: seeds the write-time shuffle and split assignment.
        shuffle: shuffle records at write time (seeded); else keep input order.
        index: write an offset index next to each (uncompressed) shard.
    """

    shard_size: int = DEFAULT_SHARD_SIZE
    num_shards: int | None = None
    min_shards: int = 1
    compression: str | None = None
    layout: Literal["mixed", "per_class"] = "mixed"
    seed: int = 0
    shuffle: bool = True
    index: bool = True

    def __post_init__(self) -> None:
        if self.shard_size <= 0:
            raise OptionError(f"shard_size must be positive; got {self.shard_size}")
        if self.num_shards is not None and self.num_shards < 1:
            raise OptionError(f"num_shards must be at least 1; got {self.num_shards}")
        if self.min_shards < 1:
            raise OptionError(f"min_shards must be at least 1; got {self.min_shards}")
        if self.layout not in ("mixed", "per_class"):
            raise OptionError(f"layout must be 'mixed' or 'per_class'; got {self.layout!r}")
        object.__setattr__(self, "compression", normalize_compression(self.compression))

    def streams(self, presorted: bool = False) -> bool:
        """Whether records are written straight into shards cut by size as they come: no
        fixed shard count, the mixed layout, and no write-time shuffle left to do (none, or
        ``presorted``: records come in the shuffled order already)."""
        return ((not self.shuffle or presorted) and self.layout == "mixed"
                and self.num_shards is None and self.min_shards == 1)

    def shard_count(self, nbytes: int) -> int:
        """Shards for ``nbytes`` of records."""
        if self.num_shards is not None:
            return self.num_shards
        count = max(1, math.ceil(nbytes / self.shard_size))
        return max(count, self.min_shards) if self.layout == "mixed" else count
