"""Split expressions: several splits read as one (``"train+val"``, or ``["train", "val"]``),
and slices of a split by record position or percent (``"train[:10%]"``, ``"train[-1000:]"``,
``"train[10%:20%]"``), with the arithmetic of TFDS's ``ReadInstruction``: percent boundaries
are ``round(p * records / 100)`` (half to even), a negative boundary counts from the end, a
boundary beyond the split is an error, and a split named twice is read twice."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tfrecordkit.errors import DatasetError

__all__ = ["SplitArg", "SplitPart", "is_expression", "resolve_split", "split_text"]

SplitArg = str | Sequence[str]
"""A split: its name, an expression (``"train[:10%]+val"``), or a list of them (joined)."""

# <split name>[<from>:<to>], as TFDS writes it (e.g. ``train[54%:]``)
_PART = re.compile(r"^(?P<name>[\w-]+)(\[(?P<selector>[^\]]*)\])?$")
_BOUND = re.compile(r"^(?P<value>-?[\d_.]+)?(?P<percent>%)?$")
_FORMS = "'train', 'train+val', 'train[:10%]', 'train[100:200]', 'train[-1000:]'"


@dataclass(frozen=True)
class SplitPart:
    """Records ``start:stop`` of one split (positions in its stored order)."""

    split: str
    start: int
    stop: int

    @property
    def records(self) -> int:
        """How many records the part holds."""
        return max(0, self.stop - self.start)


def split_text(split: Any) -> str:
    """``split`` as one expression string (a list of names or expressions joined by ``+``).

    Raises:
        DatasetError: neither a string nor a non-empty list of strings.
    """
    if isinstance(split, str):
        return split
    if (isinstance(split, Sequence) and split
            and all(isinstance(s, str) for s in split)):
        return "+".join(split)
    raise DatasetError(f"split={split!r}: give a split's name, an expression such as "
                       f"{_FORMS}, or a list of them")


def is_expression(split: str, splits: Mapping[str, Any]) -> bool:
    """Whether ``split`` is more than one of ``splits`` named as it is."""
    return split not in splits


def resolve_split(split: SplitArg, counts: Mapping[str, int]) -> tuple[SplitPart, ...]:
    """The parts a split expression reads, in order, given each split's record count.

    Raises:
        DatasetError: one line naming the expression, and the splits there are for an
            unknown one, or the slice that does not fit.
    """
    text = split_text(split)
    if text in counts:
        return (SplitPart(text, 0, counts[text]),)
    pieces = [p.strip() for p in text.split("+")]
    parts: list[SplitPart] = []
    for piece in pieces:
        found = _PART.match(piece)
        if found is None:
            raise DatasetError(f"split {text!r}: cannot read {piece!r} (write {_FORMS}); "
                               f"the dataset has {_listed(counts)}")
        name, selector = found["name"], found["selector"]
        if name == "all" and "all" not in counts and selector is None:
            parts.extend(SplitPart(s, 0, n) for s, n in counts.items())
            continue
        if name not in counts:
            raise DatasetError(f"split {text!r}: no split {name!r}; the dataset has "
                               f"{_listed(counts)}")
        parts.append(_sliced(text, name, selector, counts[name]))
    return tuple(parts)


def _bound(text: str, value: str | None, default: int, percent: bool, records: int) -> int:
    """One boundary of a slice as a record position (negative: from the end)."""
    if value is None:
        return default
    try:
        number = float(value) if percent else int(value)
    except ValueError:
        raise DatasetError(f"split {text!r}: {value!r} is not a "
                           f"{'number' if percent else 'record position'}") from None
    if percent and not -100 <= number <= 100:
        raise DatasetError(f"split {text!r}: {value}% is not a percent of the split "
                           "(-100% to 100%)")
    return round(number * records / 100.0) if percent else int(number)


def _listed(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} ({n} records)" for name, n in counts.items())


def _sliced(text: str, name: str, selector: str | None, records: int) -> SplitPart:
    """Split ``name``'s records as ``[selector]`` picks them."""
    if selector is None:
        return SplitPart(name, 0, records)
    bounds = selector.split(":")
    matched = [_BOUND.match(b.strip()) for b in bounds]
    if len(bounds) != 2 or not all(matched) or not any(b.strip() for b in bounds):
        raise DatasetError(f"split {text!r}: [{selector}] is not a slice (write [from:to], "
                           "each a record position or a percent, either left out)")
    if any(m is not None and m["percent"] and m["value"] is None for m in matched):
        raise DatasetError(f"split {text!r}: [{selector}] has a % with no number before it "
                           "(write e.g. [:10%])")
    percent = any(m is not None and m["percent"] for m in matched)
    start, stop = (_bound(text, m["value"] if m is not None else None, default, percent,
                          records) for m, default in zip(matched, (0, records), strict=True))
    if abs(start) > records or abs(stop) > records:
        raise DatasetError(f"split {text!r}: [{selector}] reaches past {name!r}, which holds "
                           f"{records} records")
    start = start + records if start < 0 else start
    stop = stop + records if stop < 0 else stop
    return SplitPart(name, start, max(start, stop))
