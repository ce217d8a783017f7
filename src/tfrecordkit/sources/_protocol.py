"""What a source is: items (light, picklable), a loader run in worker processes, a schema."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple, Protocol, runtime_checkable

from tfrecordkit.schema import Schema

__all__ = ["Source", "SourceItem", "SourceTraits"]


class SourceItem(NamedTuple):
    """One input: its stable key (hashed for shuffling and splits), what to load, its split."""

    key: str
    item: Any
    split: str | None = None


@runtime_checkable
class Source(Protocol):
    """Anything with these members can be converted.

    ``items()`` is iterated in the main process and must stream; ``load()`` runs in worker
    processes and turns one item into ``{feature name: value}``, raising
    :class:`~tfrecordkit.errors.SourceError` (or ``OSError``/``ValueError``) on bad input.

    A source may also set ``resumable = False`` when ``description`` does not identify its data
    (an in-memory iterable): a killed conversion of it then starts over instead of resuming.
    One that sets ``threaded = True`` spends its ``load()`` time with the GIL released (file
    reads, compiled decoders): it is then loaded on threads of the converting process rather
    than in worker processes. One that sets ``provenance = True`` has
    ``origin(item) -> str`` (where the item came from, relative to the source); conversion
    stores it with each record as ``"__source"``. One that sets ``reorderable = True`` can
    list its (light) items again and load any item in any order: the write-time shuffle then
    reads it in shuffled order and writes each record once, with no spill. These optional
    attributes are declared, with their defaults, by :class:`SourceTraits`.
    """

    description: str
    in_process: bool  # True when loading an item is cheap: worker processes would not pay off

    def schema(self) -> Schema: ...

    def items(self) -> Iterator[SourceItem]: ...

    def load(self, item: Any) -> Mapping[str, Any]: ...

    def describe(self, item: SourceItem) -> str: ...


@dataclasses.dataclass(frozen=True)
class SourceTraits:
    """What a source may say about itself beyond :class:`Source`'s members, each optional
    (a source sets it as an attribute; these are the defaults), read in one place.

    Attributes:
        resumable: ``description`` identifies its data, so a killed conversion resumes.
        threaded: ``load()`` spends its time with the GIL released: load on threads.
        provenance: it has ``origin(item) -> str``, stored with each record.
        reorderable: it lists its items again and loads any in any order (one-pass shuffle).
        reiterable: ``items()`` can be run twice (a vocabulary pass before the conversion).
        conversions: what it changed in its inputs (e.g. CMYK JPEGs stored as PNG), by kind.
        named_classes: its class labels are ids numbering its own schema's class names
            (folders, Hugging Face): a schema given to the conversion maps them by name.
    """

    resumable: bool = True
    threaded: bool = False
    provenance: bool = False
    reorderable: bool = False
    reiterable: bool = True
    conversions: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    named_classes: bool = False

    @classmethod
    def of(cls, source: Any) -> SourceTraits:
        """``source``'s traits (the defaults where it says nothing)."""
        values = {f.name: getattr(source, f.name) for f in dataclasses.fields(cls)
                  if hasattr(source, f.name)}
        values["provenance"] = bool(values.get("provenance")) and callable(
            getattr(source, "origin", None))
        if not isinstance(values.get("conversions", {}), Mapping):
            values.pop("conversions")
        return cls(**values)
