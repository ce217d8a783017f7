"""The write-time shuffle of sources that can be read in any order (folders, arrays): their
items listed in the order the shuffle puts records in, so each record is read once and
written once, straight into its shard (no spill), with memory bounded however many items."""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Iterator

import numpy as np

from tfrecordkit.errors import SourceError
from tfrecordkit.sources import SourceItem
from tfrecordkit.store import record_hash

__all__ = ["WINDOW", "shuffled_items"]

#: Items held at once: more than this are listed again, one range of order hashes per pass.
WINDOW = 1 << 18


def shuffled_items(listing: Callable[[], Iterator[SourceItem]], seed: int,
                   window: int | None = None) -> Iterator[SourceItem]:
    """The items ``listing()`` gives, ordered by their order hash under ``seed`` (the order
    the write-time shuffle gives records; ties in listing order).

    Up to ``window`` items are held; a longer listing is listed once more per ``window``
    items, each pass keeping the items whose hash falls in its range (8 bytes an item
    besides). Every listing must give the same keys in the same order (a digest of them is
    compared before a pass yields anything).

    Raises:
        SourceError: the listing changed between passes (files added, renamed or removed
            during the conversion): a record would be written twice or lost.
    """
    window = WINDOW if window is None else window
    held: list[tuple[int, int, SourceItem]] = []
    hashes = array("Q")
    first = hashlib.blake2b(digest_size=16)
    for position, item in enumerate(listing()):
        h = record_hash(item.key, seed)
        first.update(item.key.encode("utf-8", "surrogatepass") + b"\0")
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
        again = hashlib.blake2b(digest_size=16)
        count = 0
        for position, item in enumerate(listing()):
            h = record_hash(item.key, seed)
            again.update(item.key.encode("utf-8", "surrogatepass") + b"\0")
            count = position + 1
            if h >= low and (high is None or h < high):
                batch.append((h, position, item))
        if again.digest() != first.digest():
            raise SourceError(f"listing {len(ordered):,} inputs", f"the inputs changed during "
                              f"the conversion (listed again: {count:,}, or other names): "
                              "files were added, renamed or removed while it ran, so records "
                              "would be written twice or lost; convert again once the folder "
                              "stops changing")
        batch.sort(key=lambda entry: (entry[0], entry[1]))
        for _, _, item in batch:
            yield item
