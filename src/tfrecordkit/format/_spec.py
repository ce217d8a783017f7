"""Parsing specs: how one Example key is read (its list type, its fixed shape or variable
length, its default), and the check that a decoded key fits its spec. The schema layer
produces them; the codecs consume them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = ["KeySpec", "SpecDtype", "check_key", "decoded_kind"]

SpecDtype = Literal["string", "int64", "float32"]


@dataclass(frozen=True)
class KeySpec:
    """How to parse one Example key: its list dtype and fixed shape (None: variable length).

    ``sequence``: a SequenceExample feature list, whose ``shape`` is one step's (every record
    holds any number of steps)."""

    key: str
    dtype: SpecDtype
    shape: tuple[int, ...] | None = ()
    default: Any = None
    sequence: bool = False


# decode_example gives float32 or int64 arrays: the dtype's kind letter tells them apart
# (much cheaper than dtype.name, and this runs for every key of every record).
_LIST_DTYPE: dict[str, SpecDtype] = {"f": "float32", "i": "int64"}


def decoded_kind(value: Any) -> str:
    """The list dtype of a value from ``decode_example_keys`` (a list is a bytes list, empty
    or not, as TensorFlow's parser types it)."""
    if isinstance(value, np.ndarray):
        kind = _LIST_DTYPE.get(value.dtype.kind)
        return kind if kind is not None else str(value.dtype)
    return "string"


def check_key(spec: KeySpec, features: Mapping[str, Any]) -> str | None:
    """What is wrong with ``features[spec.key]`` for ``spec``, or None if it fits, as
    ``tf.io.parse_example`` judges it (``features`` from ``decode_example_keys``).

    A missing variable-length key reads as empty (as TensorFlow's ``RaggedFeature`` does);
    a missing fixed-length key needs a default.
    """
    value = features.get(spec.key)
    if value is None:
        if spec.shape is None or spec.default is not None:
            return None
        return f"key {spec.key!r} is missing from the record"
    kind = decoded_kind(value)
    if kind != spec.dtype:
        return f"key {spec.key!r} holds a {kind} list; the schema expects {spec.dtype}"
    if spec.shape is not None:
        want = math.prod(spec.shape)
        if len(value) != want:
            return f"key {spec.key!r} holds {len(value)} value(s); the schema expects {want}"
    return None
