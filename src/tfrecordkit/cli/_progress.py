"""Progress bars for long commands: on stderr, shown on a terminal, silenced by ``--quiet``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


def progress(
    items: Iterable[T], *, quiet: bool, desc: str, total: int | None = None, unit: str = "rec"
) -> Iterator[T]:
    """Wrap ``items`` in a progress bar on stderr unless ``quiet`` (or stderr is not a terminal)."""
    bar = tqdm(
        items, desc=desc, total=total, unit=unit, unit_scale=True, leave=False,
        disable=True if quiet else None, mininterval=0.25,
    )
    try:
        yield from bar
    finally:
        bar.close()
