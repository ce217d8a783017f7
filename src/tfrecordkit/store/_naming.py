"""Shard file names: ``<split>-<i>-of-<n>.tfrecord`` (mixed) or ``<split>-c<class>-<i>-of-<n>``;
the shards of the ``g``-th append say so after the split: ``<split>-a<g>-...``."""

from __future__ import annotations

import re

__all__ = ["SHARD_PATTERN", "compression_suffix", "is_shard_file", "shard_name"]

_SUFFIX = {None: "", "gzip": ".gz", "zlib": ".zz"}
SHARD_PATTERN = re.compile(
    r"^(?P<split>[A-Za-z0-9_.]+)-(?:a(?P<part>\d{4,})-)?(?:c(?P<class_id>\d+)-)?"
    r"(?P<index>\d{5,})-of-(?P<count>\d{5,})"
    r"\.tfrecord(?:\.gz|\.zz)?$"
)


def compression_suffix(compression: str | None) -> str:
    """File suffix after ``.tfrecord`` for a compression."""
    return _SUFFIX[compression]


def shard_name(
    split: str, index: int, count: int, compression: str | None = None,
    class_id: int | None = None, *, part: int = 0,
) -> str:
    """The file name of shard ``index`` of ``count`` in ``split`` (of one class if given; of
    the ``part``-th append if above 0)."""
    klass = f"c{class_id:05d}-" if class_id is not None else ""
    appended = f"a{part:04d}-" if part else ""
    return f"{split}-{appended}{klass}{index:05d}-of-{count:05d}.tfrecord{_SUFFIX[compression]}"


def is_shard_file(name: str) -> bool:
    """Whether ``name`` is a shard or one of a shard's sidecars (index, restart points)."""
    return bool(SHARD_PATTERN.fullmatch(
        name.removesuffix(".index").removesuffix(".restarts").removesuffix(".digests")))
