"""Shard file names: ``<split>-<i>-of-<n>.tfrecord`` (mixed) or ``<split>-c<class>-<i>-of-<n>``;
the shards of the ``g``-th append say so after the split, with the id of the attempt that wrote
them (``<split>-a<g>x<writer>-...``), so two appends that raced for the same number never write
one file name."""

from __future__ import annotations

import re

__all__ = ["SHARD_PATTERN", "append_tag", "compression_suffix", "is_shard_file", "shard_name"]

_SUFFIX = {None: "", "gzip": ".gz", "zlib": ".zz"}
SHARD_PATTERN = re.compile(
    r"^(?P<split>[A-Za-z0-9_.]+)-(?:a(?P<part>\d{4,})(?:x(?P<writer>[0-9a-f]{8,}))?-)?"
    r"(?:c(?P<class_id>\d+)-)?"
    r"(?P<index>\d{5,})-of-(?P<count>\d{5,})"
    r"\.tfrecord(?:\.gz|\.zz)?$"
)


def compression_suffix(compression: str | None) -> str:
    """File suffix after ``.tfrecord`` for a compression."""
    return _SUFFIX[compression]


def append_tag(part: int, writer: str) -> str:
    """What marks the shards of the ``part``-th append, written by the attempt ``writer``
    (hex digits): ``a0003x1f2e3d4c``."""
    return f"a{part:04d}x{writer}"


def shard_name(
    split: str, index: int, count: int, compression: str | None = None,
    class_id: int | None = None, *, part: str = "",
) -> str:
    """The file name of shard ``index`` of ``count`` in ``split`` (of one class if given; of
    the append ``part`` names, see :func:`append_tag`, if not empty)."""
    klass = f"c{class_id:05d}-" if class_id is not None else ""
    appended = f"{part}-" if part else ""
    return f"{split}-{appended}{klass}{index:05d}-of-{count:05d}.tfrecord{_SUFFIX[compression]}"


def is_shard_file(name: str) -> bool:
    """Whether ``name`` is a shard or one of a shard's sidecars (index, restart points)."""
    return bool(SHARD_PATTERN.fullmatch(
        name.removesuffix(".index").removesuffix(".restarts").removesuffix(".digests")))
