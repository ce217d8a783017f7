"""The write-time shuffle of sources that can be read in any order (folders, arrays): their
items listed in the order the shuffle puts records in, so each record is read once and
written once, straight into its shard (no spill), with memory bounded however many items."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator

import numpy as np

from tfrecordkit.sources import SourceItem
from tfrecordkit.store import record_hash

__all__ = ["WINDOW", "shuffled_items"]

#: Items held at once: more than this are listed again, one range of order hashes per pass.
WINDOW = 1 << 18


def shuffled_items(listing: Callable[[], Iterator[SourceItem]], seed: int,
                   window: int = WINDOW) -> Iterator[SourceItem]:
    """The items ``listing()`` gives, ordered by their order hash under ``seed`` (the order
    the write-time shuffle gives records; ties in listing order).

    Up to ``window`` items are held; a longer listing is listed once more per ``window``
    items, each pass keeping the items whose hash falls in its range (8 bytes an item
    besides).
    """
    held: list[tuple[int, int, SourceItem]] = []
    hashes = array("Q")
    for position, item in enumerate(listing()):
        h = record_hash(item.key, seed)
        hashes.append(h)
        if held is not None:
            held.append((h, position, item))
            if len(held) > window:
                held = None  # type: ignore[assignment]
    if held is not None:
        held.sort(key=lambda entry: (entry[0], entry[1]))
        for _, _, item in held:
            yield item
        return
    ordered = np.sort(np.frombuffer(hashes, dtype=np.uint64))
    del hashes
    # Each pass takes one range [low, high) of hashes holding about `window` items; equal
    # hashes never straddle two ranges.
    bounds = [int(ordered[k]) for k in range(window, len(ordered), window)]
    ranges = list(zip([0, *bounds], [*bounds, None], strict=True))
    for low, high in ranges:
        if high is not None and low == high:
            continue
        batch = []
        for position, item in enumerate(listing()):
            h = record_hash(item.key, seed)
            if h >= low and (high is None or h < high):
                batch.append((h, position, item))
        batch.sort(key=lambda entry: (entry[0], entry[1]))
        for _, _, item in batch:
            yield item
