"""Text vocabularies: how text becomes token ids, built from a dataset's training split at
conversion and stored in the schema, so readers return ids without a tokenizer."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from tfrecordkit.errors import SchemaError

__all__ = ["Vocabulary"]

Tokenizer = str | Callable[[str], list[str]]

_BUILT_IN: dict[str, re.Pattern[str] | None] = {
    "words": re.compile(r"\w+(?:'\w+)*"),  # runs of letters/digits, inner apostrophes kept
    "whitespace": re.compile(r"\S+"),
    "chars": None,
}


@dataclass(frozen=True)
class Vocabulary:
    """Token ids for text: ``0`` pads, ``1`` is out of vocabulary, ``2..`` are ``tokens``.

    Give ``tokens`` for a fixed vocabulary, or leave them empty to have
    :func:`~tfrecordkit.convert` build it from the training split (the ``max_size`` most
    frequent tokens seen at least ``min_count`` times; ties by first appearance).

    Attributes:
        tokens: the known tokens, id ``2`` onwards.
        tokenizer: ``"words"`` (``\\w+`` runs), ``"whitespace"``, ``"chars"``, a regular
            expression whose matches are the tokens (``"re:<pattern>"``), or a function
            ``text -> tokens`` (kept in this process only; stored as ``"custom"``).
        lowercase: lowercase (and NFKC-normalise) text before tokenizing.
        max_size: most tokens kept when building, special ids included (None: all).
        min_count: fewest occurrences in the training split for a token to be kept.
    """

    tokens: tuple[str, ...] = ()
    tokenizer: Tokenizer = "words"
    lowercase: bool = True
    max_size: int | None = None
    min_count: int = 1
    _index: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    PAD: ClassVar[int] = 0
    OOV: ClassVar[int] = 1
    SPECIAL: ClassVar[tuple[str, str]] = ("<pad>", "<unk>")

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokens", tuple(self.tokens))
        if isinstance(self.tokenizer, str) and self.tokenizer not in (*_BUILT_IN, "custom") \
                and not self.tokenizer.startswith("re:"):
            raise SchemaError("<vocabulary>", f"tokenizer must be one of {sorted(_BUILT_IN)}, "
                                              f"'re:<pattern>' or a function; got "
                                              f"{self.tokenizer!r}")
        if isinstance(self.tokenizer, str) and self.tokenizer.startswith("re:"):
            try:
                re.compile(self.tokenizer[3:])
            except re.error as err:
                raise SchemaError("<vocabulary>", f"bad tokenizer pattern: {err}") from None
        if self.max_size is not None and self.max_size < 3:
            raise SchemaError("<vocabulary>", f"max_size must be at least 3 (two special ids "
                                              f"and a token); got {self.max_size}")
        if self.min_count < 1:
            raise SchemaError("<vocabulary>", f"min_count must be >= 1; got {self.min_count}")
        if len(set(self.tokens)) != len(self.tokens):
            raise SchemaError("<vocabulary>", "tokens must be unique")
        object.__setattr__(self, "_index", {t: i + 2 for i, t in enumerate(self.tokens)})

    @property
    def built(self) -> bool:
        """Whether the tokens are known (else conversion builds them)."""
        return bool(self.tokens)

    @property
    def size(self) -> int:
        """Ids in use, the two special ones included (an embedding table's rows)."""
        return len(self.tokens) + 2

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text``, as this vocabulary cuts it."""
        if self.lowercase:
            text = unicodedata.normalize("NFKC", text).lower()
        if callable(self.tokenizer):
            return list(self.tokenizer(text))
        if self.tokenizer == "custom":
            raise SchemaError("<vocabulary>", "this vocabulary was built with a custom "
                                              "tokenizer: pass it again with "
                                              "dataclasses.replace(vocabulary, tokenizer=fn)")
        if self.tokenizer == "chars":
            return list(text)
        pattern = (_BUILT_IN[self.tokenizer] if not self.tokenizer.startswith("re:")
                   else re.compile(self.tokenizer[3:]))
        assert pattern is not None
        return pattern.findall(text)

    def ids(self, text: str) -> np.ndarray:
        """The int64 token ids of ``text`` (unknown tokens are ``OOV``)."""
        index = self._index
        return np.array([index.get(t, self.OOV) for t in self.tokenize(text)], dtype=np.int64)

    def decode(self, ids: Iterable[int]) -> list[str]:
        """The tokens of ``ids`` (padding dropped, ``<unk>`` for out of vocabulary)."""
        table = (*self.SPECIAL, *self.tokens)
        return [table[int(i)] if 0 <= int(i) < len(table) else self.SPECIAL[1]
                for i in ids if int(i) != self.PAD]

    def built_from(self, counts: Counter[str]) -> Vocabulary:
        """This vocabulary with tokens from ``counts`` (a Counter in first-seen order)."""
        kept = [(t, n) for t, n in counts.items() if n >= self.min_count]
        kept.sort(key=lambda tn: -tn[1])  # stable: ties keep first appearance
        limit = None if self.max_size is None else self.max_size - 2
        return Vocabulary(tuple(t for t, _ in kept[:limit]), self.tokenizer, self.lowercase,
                          self.max_size, self.min_count)

    def to_json(self) -> dict[str, Any]:
        return {"tokens": list(self.tokens),
                "tokenizer": "custom" if callable(self.tokenizer) else self.tokenizer,
                "lowercase": self.lowercase, "max_size": self.max_size,
                "min_count": self.min_count}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Vocabulary:
        return cls(tuple(data.get("tokens", ())), data.get("tokenizer", "words"),
                   bool(data.get("lowercase", True)), data.get("max_size"),
                   int(data.get("min_count", 1)))
