"""``tf.train.SequenceExample`` feature lists: parsing each record's steps by their specs, and
the wire form of a record's feature lists (what follows its context)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tfrecordkit.errors import SchemaError
from tfrecordkit.format._example import decode_sequence_example
from tfrecordkit.format._spec import KeySpec, decoded_kind
from tfrecordkit.format._wire import map_entry_prefix, varint

__all__ = ["feature_lists_wire", "parse_feature_lists"]


def parse_feature_lists(records: Sequence[bytes], specs: Sequence[KeySpec],
                        where: Callable[[int], Any] | None = None) -> dict[str, list[Any]]:
    """Each record's feature lists by their ``specs`` (``sequence=True``), as
    ``tf.io.parse_sequence_example`` reads them: per key, one value per record, a
    ``(steps, *step shape)`` array (bytes: a list of the steps' values when a step holds one,
    else an object array), or for steps of any length (``shape=None``) a list of the steps'
    arrays (bytes: lists). A record without the list has no steps.

    Raises:
        SchemaError: a record is not a SequenceExample, or a step holds another type or
            number of values than its spec (names the key and ``where(i)``).
    """
    name_of = where if where is not None else (lambda i: i)
    out: dict[str, list[Any]] = {spec.key: [] for spec in specs}
    for i, record in enumerate(records):
        try:
            _, lists = decode_sequence_example(bytes(record))
        except ValueError as err:
            raise SchemaError("<record>", str(err), record=name_of(i)) from None
        for spec in specs:
            try:
                out[spec.key].append(_steps(spec, lists.get(spec.key, [])))
            except ValueError as err:
                raise SchemaError(spec.key, str(err), record=name_of(i)) from None
    return out


def _steps(spec: KeySpec, steps: list[Any]) -> Any:
    """One record's steps of ``spec``'s list."""
    for t, values in enumerate(steps):
        kind = decoded_kind(values)
        if len(values) and kind != spec.dtype:
            raise ValueError(f"step {t} holds {kind} values; the feature list holds "
                             f"{spec.dtype}")
    if spec.shape is None:  # steps of any length
        if spec.dtype == "string":
            return [list(values) for values in steps]
        return [np.asarray(values, dtype=spec.dtype).reshape(-1) for values in steps]
    width = math.prod(spec.shape)
    for t, values in enumerate(steps):
        if len(values) != width:
            raise ValueError(f"step {t} holds {len(values)} values; every step holds {width}")
    if spec.dtype == "string":
        if spec.shape == ():
            return [values[0] for values in steps]
        array = np.empty((len(steps), width), dtype=object)
        for t, values in enumerate(steps):
            array[t, :] = list(values)
        return array.reshape((len(steps), *spec.shape))
    if not steps:
        return np.zeros((0, *spec.shape), dtype=spec.dtype)
    return np.stack([np.asarray(v, dtype=spec.dtype) for v in steps]).reshape(
        (len(steps), *spec.shape))


def feature_lists_wire(lists: Sequence[tuple[str, Sequence[bytes]]]) -> bytes:
    """A SequenceExample's ``feature_lists`` field (number 2) holding, per ``(key, steps)``,
    the serialized ``Feature`` messages of its steps; appended to a serialized context
    (an Example's bytes), it makes the SequenceExample."""
    entries = []
    for key, steps in lists:
        feature_list = b"".join([b"\x0a" + varint(len(s)) + s for s in steps])
        entry = map_entry_prefix(key) + b"\x12" + varint(len(feature_list)) + feature_list
        entries.append(b"\x0a" + varint(len(entry)) + entry)
    body = b"".join(entries)
    return b"\x12" + varint(len(body)) + body
