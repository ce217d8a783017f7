"""Columnar decoding of a batch of serialized ``tf.train.Example`` records: per parsing spec,
one array for the whole batch, as ``tf.io.parse_example`` gives them, without TensorFlow.

The compiled codec (``_codec``, C) is used when it was built; otherwise, or with
``TFRECORDKIT_PURE_PYTHON=1``, the same results come from protobuf. Both accept and reject the
same records and give the same values.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfrecordkit.errors import SchemaError
from tfrecordkit.format._compiled import CODEC
from tfrecordkit.format._example import decode_example, decode_example_keys
from tfrecordkit.format._spec import KeySpec, check_key

__all__ = ["Column", "RecordSlices", "codec_name", "compiled_codec", "gather_spans",
           "parse_example", "parse_examples"]

_KIND = {"string": 1, "float32": 2, "int64": 3}
_DTYPE: dict[str, np.dtype[Any]] = {"float32": np.dtype("<f4"), "int64": np.dtype("<i8")}


_CODEC = CODEC  # a module global: tests swap it


def compiled_codec() -> Any:
    """The compiled codec module, or None (not built, or ``TFRECORDKIT_PURE_PYTHON`` set)."""
    return _CODEC


def gather_spans(data: bytes | memoryview, offsets: np.ndarray, lengths: np.ndarray,
                 out: np.ndarray) -> memoryview:
    """The spans ``data[offsets[i] : offsets[i] + lengths[i]]`` copied back to back into
    ``out`` (a contiguous uint8 array): the part of ``out`` they fill.

    Raises:
        ValueError: a span lies outside ``data``, or the spans do not fit ``out``.
    """
    offsets = np.ascontiguousarray(offsets, np.int64)
    lengths = np.ascontiguousarray(lengths, np.int64)
    if out.dtype != np.uint8 or out.ndim != 1 or not out.flags.c_contiguous:
        raise ValueError("out must be a contiguous uint8 array")
    target = out.data
    if _CODEC is not None and hasattr(_CODEC, "gather"):  # one call, without the GIL
        return target[: _CODEC.gather(data, offsets, lengths, target)]
    view = memoryview(data).cast("B")
    if len(offsets) != len(lengths):
        raise ValueError("offsets and lengths must be 8-byte arrays of one length")
    if len(offsets) and (int(offsets.min()) < 0 or int(lengths.min()) < 0
                         or int((offsets + lengths).max()) > len(view)):
        raise ValueError("a span lies outside the data")
    if int(lengths.sum()) > len(target):
        raise ValueError("the spans do not fit the output buffer")
    at = 0
    for o, n in zip(offsets.tolist(), lengths.tolist(), strict=True):
        target[at : at + n] = view[o : o + n]
        at += n
    return target[:at]


def codec_name() -> str:
    """Which codec decodes: ``"compiled"`` or ``"python"``."""
    return "compiled" if _CODEC is not None else "python"


@dataclass(frozen=True)
class RecordSlices:
    """Records lying in one buffer (a shard read whole, or mapped): record ``i`` is
    ``buffer[offsets[i] : offsets[i] + lengths[i]]``. Decoded without copying each one out."""

    buffer: Any  # bytes, memoryview, mmap, or a NumPy uint8 array
    offsets: np.ndarray
    lengths: np.ndarray

    def __post_init__(self) -> None:
        size = memoryview(self.buffer).nbytes
        offsets = np.asarray(self.offsets, dtype=np.int64)
        lengths = np.asarray(self.lengths, dtype=np.int64)
        if offsets.shape != lengths.shape:
            raise ValueError("offsets and lengths must have one length")
        bad = np.flatnonzero((offsets < 0) | (lengths < 0) | (offsets + lengths > size))
        if bad.size:
            raise ValueError(f"record {int(bad[0])} lies outside the buffer ({size} bytes)")

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, part: slice) -> RecordSlices:
        """Records ``part`` (a slice) over the same buffer."""
        return RecordSlices(self.buffer, self.offsets[part], self.lengths[part])

    def records(self) -> list[bytes]:
        """The records as separate ``bytes`` objects."""
        view = memoryview(self.buffer).cast("B")
        return [bytes(view[o : o + n]) for o, n in zip(self.offsets.tolist(),
                                                        self.lengths.tolist(), strict=True)]


@dataclass(frozen=True)
class Column:
    """One key's values over a batch of ``n`` records.

    Numbers: ``values`` is ``[n, *shape]`` for a fixed shape, else the flat values of all
    records, record ``i`` holding ``values[row_splits[i]:row_splits[i+1]]``.
    Bytes: ``values`` is one uint8 buffer and ``offsets`` the ``m + 1`` boundaries of its ``m``
    values; ``row_splits`` says which values belong to which record.
    ``missing[i]`` is True where record ``i`` lacks the key (a fixed key then holds its default).
    """

    spec: KeySpec
    values: np.ndarray
    row_splits: np.ndarray
    missing: np.ndarray
    offsets: np.ndarray | None = None

    def to_bytes(self) -> list[bytes]:
        """Every bytes value, in record order, as Python ``bytes``."""
        if self.offsets is None:
            raise TypeError(f"key {self.spec.key!r} holds numbers, not bytes")
        if _CODEC is not None and hasattr(_CODEC, "split_bytes"):  # one copy, in one call
            values = np.ascontiguousarray(self.values, np.uint8)
            offsets = np.ascontiguousarray(self.offsets, np.int64)
            return _CODEC.split_bytes(values, offsets)  # type: ignore[no-any-return]
        data = self.values.tobytes()
        bounds = self.offsets.tolist()
        return [data[a:b] for a, b in itertools.pairwise(bounds)]

    def row(self, i: int) -> Any:
        """Record ``i``'s values: an array of numbers, or a list of ``bytes``."""
        start, stop = int(self.row_splits[i]), int(self.row_splits[i + 1])
        if self.offsets is not None:
            data = self.values
            return [data[a:b].tobytes() for a, b in zip(self.offsets[start:stop].tolist(),
                                                        self.offsets[start + 1 : stop + 1]
                                                        .tolist(), strict=True)]
        flat = self.values.reshape(-1)
        return flat[start:stop]


def _spec_args(specs: Sequence[KeySpec]) -> list[tuple[bytes, int, int, bool]]:
    last = _LAST_ARGS[0]
    if last is not None and last[0] is specs:  # the same tuple as the last call: no hashing
        return last[1]
    key = tuple(specs)
    try:
        found = _SPEC_ARGS.get(key)
    except TypeError:  # a default that can't be hashed (a list): not kept
        return _make_spec_args(key)
    if found is None:
        found = _SPEC_ARGS[key] = _make_spec_args(key)
        if len(_SPEC_ARGS) > 256:  # bounded: a long-lived process may see many schemas
            del _SPEC_ARGS[next(iter(_SPEC_ARGS))]
    if isinstance(specs, tuple):  # immutable: its identity names its args
        _LAST_ARGS[0] = (specs, found)
    return found


_SPEC_ARGS: dict[tuple[KeySpec, ...], list[tuple[bytes, int, int, bool]]] = {}
_LAST_ARGS: list[tuple[tuple[KeySpec, ...], list[tuple[bytes, int, int, bool]]] | None] = [None]


def _make_spec_args(specs: Sequence[KeySpec]) -> list[tuple[bytes, int, int, bool]]:
    out = []
    for spec in specs:
        count = -1 if spec.shape is None else int(np.prod(spec.shape, dtype=np.int64))
        out.append((spec.key.encode("utf-8"), _KIND[spec.dtype], count,
                    spec.default is not None))
    return out


def _default_values(spec: KeySpec) -> list[Any]:
    count = int(np.prod(spec.shape, dtype=np.int64)) if spec.shape is not None else 0
    default = spec.default
    if spec.dtype == "string":
        items = default if isinstance(default, list | tuple) else [default] * count
        return [d.encode() if isinstance(d, str) else bytes(d) for d in items][:count]
    numbers: list[Any] = np.broadcast_to(np.asarray(default, dtype=_DTYPE[spec.dtype]),
                                         (count,)).tolist()
    return numbers


def _raise(err: ValueError, specs: Sequence[KeySpec], where: Any, first: int = 0) -> None:
    # The codec raises ValueError(record, spec, reason); anything else is about the arguments.
    if len(err.args) != 3 or not isinstance(err.args[0], int):
        raise err
    record, spec, reason = err.args
    record = record + first if record >= 0 else record
    name = specs[spec].key if spec >= 0 else "<record>"
    place = where(record) if where is not None and record >= 0 else record
    raise SchemaError(name, reason, record=place) from None


def parse_examples(records: Sequence[bytes] | RecordSlices, specs: Sequence[KeySpec], *,
                   where: Any = None, strict: bool = False,
                   threads: int | None = None) -> dict[str, Column]:
    """Decode a batch of serialized Examples into one :class:`Column` per spec.

    ``records`` is a sequence of ``bytes`` or :class:`RecordSlices` of one buffer. Each key is
    checked like ``tf.io.parse_example`` checks it: present (or defaulted), the right list
    type, for a fixed shape the right number of values; when a key appears twice the last one
    counts. ``where(i)`` may name record ``i`` in errors (default: its index). ``strict``:
    a key no spec names is an error too (a record the specs do not fully describe).
    ``threads``: at most this many threads parse a large batch (a loader's plan; default:
    up to 8 of the machine's cores).

    Raises:
        SchemaError: a record is not an Example, or a key is missing, of the wrong type or
            count (names the key and the record).
    """
    n = len(records)
    if _CODEC is None:
        return _parse_python(records, specs, where, strict)
    args = _spec_args(specs)
    parts = _split(records, n, threads)
    try:
        # Each part's scan keeps what it found for its fill (no second look for the keys),
        # unless that would take more than _KEEP_MAX entries of 24 bytes.
        scanned = _run(lambda part: _CODEC.scan(part[2], args, True, strict)
                       if part[1] * len(args) <= _KEEP_MAX
                       else (_CODEC.scan(part[2], args, False, strict), None), parts)
    except _PartError as err:
        _raise(err.error, specs, where, err.first)
    totals = [found for found, _ in scanned]
    outs, views = [], []
    whole = len(parts) == 1
    # Every key's record counts and missing flags in two allocations (the codec writes the
    # flags as bytes 0 and 1: a bool array as it is).
    all_counts = np.empty((len(specs), n), np.int64)
    all_missing = np.zeros((len(specs), n), np.bool_)
    for k, spec in enumerate(specs):
        counts = [t[k][0] for t in totals]
        sizes = [t[k][1] for t in totals]
        strings = spec.dtype == "string"
        values = (np.empty(sum(sizes), np.uint8) if strings
                  else np.empty(sum(counts), _DTYPE[spec.dtype]))
        lens = np.empty(sum(counts), np.int64) if strings else None
        row_counts, missing = all_counts[k], all_missing[k]
        outs.append((values, row_counts, lens, missing))
        if whole:  # one part writes the whole arrays
            views.append([(values, row_counts, lens, missing)])
            continue
        # Each part writes its own slice of the same arrays.
        value_at = list(itertools.accumulate(sizes if strings else counts, initial=0))
        count_at = list(itertools.accumulate(counts, initial=0))
        views.append([(values[value_at[j] : value_at[j + 1]],
                       row_counts[first : first + size],
                       None if lens is None else lens[count_at[j] : count_at[j + 1]],
                       missing[first : first + size])
                      for j, (first, size, _) in enumerate(parts)])
    try:
        _run(lambda part: _CODEC.fill(part[1], args, [v[part[2]] for v in views],
                                      scanned[part[2]][1]),
             [(first, source, j) for j, (first, _, source) in enumerate(parts)])
    except _PartError as err:
        _raise(err.error, specs, where, err.first)
    return {spec.key: _finish(spec, values, row_counts, lens, missing)
            for spec, (values, row_counts, lens, missing) in zip(specs, outs, strict=True)}


def parse_example(record: bytes, specs: Sequence[KeySpec], *, where: Any = None,
                  strict: bool = False) -> dict[str, Any]:
    """One serialized Example's keys by ``specs``, as a row of :func:`parse_examples`' batch:
    a fixed shape's numbers as an array of that shape (a NumPy scalar for ``()``), its
    strings as ``bytes`` (an object array for a shape with axes); a variable length's
    numbers as a 1-D array, its strings as a list of ``bytes``; defaults put in place.
    Checked as :func:`parse_examples` checks a batch; ``where`` names the record in errors
    (a callable: called for the name, only on an error).

    Raises:
        SchemaError: the record is not an Example, or a key is missing, of the wrong type or
            count (names the key and the record).
    """
    def name(_: int) -> Any:
        return where() if callable(where) else where

    if _CODEC is None:
        columns = parse_examples([record], specs, where=name, strict=strict)
        return {spec.key: _row(spec, columns[spec.key]) for spec in specs}
    try:
        values = _CODEC.parse_one(record, _spec_args(specs), strict)
    except ValueError as err:
        _raise(err, specs, name)
    return {spec.key: _one_value(spec, value) for spec, value in zip(specs, values, strict=True)}


def _one_value(spec: KeySpec, value: Any) -> Any:
    """A spec's value from the codec's ``parse_one`` (None: absent), as :func:`_row` gives it."""
    if value is None:
        value = _default_values(spec) if spec.default is not None else []
        if spec.dtype != "string":
            value = bytearray(np.asarray(value, _DTYPE[spec.dtype]).tobytes())
    if spec.dtype == "string":
        return _strings(spec, value)
    numbers = np.frombuffer(value, _DTYPE[spec.dtype]) if value else np.empty(
        0, _DTYPE[spec.dtype])
    if spec.shape is None:
        return numbers
    return numbers[0] if spec.shape == () else numbers.reshape(spec.shape)


def _strings(spec: KeySpec, values: list[bytes]) -> Any:
    """One record's string values as :func:`parse_example` gives them."""
    if spec.shape is None:
        return values
    if spec.shape == ():
        return values[0]
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(spec.shape)


def _row(spec: KeySpec, column: Column) -> Any:
    """Record 0 of a one-record column, as :func:`parse_example` gives it."""
    if spec.dtype == "string":
        return _strings(spec, column.to_bytes())
    if spec.shape is None:
        return column.values[column.row_splits[0] : column.row_splits[1]]
    return column.values[0]


_PARALLEL_MIN = 512  # records per thread below which splitting costs more than it saves
_KEEP_MAX = 1 << 20  # (record, key) pairs a scan keeps for its fill: 24 MiB at most
_POOL: Any = None


class _PartError(Exception):
    """A part's codec error, with the index of the part's first record."""

    def __init__(self, error: ValueError, first: int) -> None:
        super().__init__(error)
        self.error, self.first = error, first


def _split(records: Sequence[bytes] | RecordSlices, n: int, most: int | None
           ) -> list[tuple[int, int, Any]]:
    """``(first record, size, codec source)`` parts: one per thread (at most ``most``, else
    up to 8 of the cores) for large batches."""
    # Below two parts' worth, one part without asking os.cpu_count() (10 µs a call).
    threads = (1 if n < 2 * _PARALLEL_MIN
               else min(most or min(os.cpu_count() or 1, 8), n // _PARALLEL_MIN))
    bounds = [0, n] if threads == 1 else np.linspace(0, n, threads + 1).astype(int).tolist()
    parts = []
    for first, stop in itertools.pairwise(bounds):
        if isinstance(records, RecordSlices):
            source: Any = (records.buffer,
                           np.ascontiguousarray(records.offsets[first:stop], dtype=np.int64),
                           np.ascontiguousarray(records.lengths[first:stop], dtype=np.int64))
        else:
            source = records[first:stop] if threads > 1 else records
        parts.append((first, stop - first, source))
    return parts


def _run(work: Any, parts: list[Any]) -> list[Any]:
    """``work`` on every part (on threads when there are several: the codec drops the GIL);
    the earliest part's error wins, as one pass over the batch would report it."""
    global _POOL  # noqa: PLW0603 - one pool per process, made on first use
    if len(parts) == 1:
        jobs = [_attempt(work, parts[0])]
    else:
        if _POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            _POOL = ThreadPoolExecutor(min(os.cpu_count() or 1, 8),
                                       thread_name_prefix="tfrecordkit-codec")
        jobs = list(_POOL.map(lambda part: _attempt(work, part), parts))
    for outcome in jobs:
        if isinstance(outcome, _PartError):
            raise outcome
    return jobs


def _attempt(work: Any, part: Any) -> Any:
    try:
        return work(part)
    except ValueError as err:
        if len(err.args) == 3 and isinstance(err.args[0], int):
            return _PartError(err, part[0])
        raise


def _finish(spec: KeySpec, values: np.ndarray, row_counts: np.ndarray,
            lens: np.ndarray | None, missing: np.ndarray) -> Column:
    """A column from what the codec wrote: defaults put in place, splits and offsets built."""
    n = len(row_counts)
    if spec.shape is not None and spec.default is not None and missing.any():
        defaults = _default_values(spec)
        if lens is not None:  # bytes: rebuild the buffer with the defaults in place
            rows = Column(spec, values, _splits(row_counts), missing,
                          _splits(lens)).to_bytes()
            per_row, out = len(defaults), []
            cursor = 0
            for i in range(n):
                if missing[i]:
                    out.extend(defaults)
                else:
                    out.extend(rows[cursor : cursor + per_row])
                    cursor += per_row
            row_counts = np.full(n, per_row, np.int64)
            lens = np.array([len(v) for v in out], np.int64)
            values = np.frombuffer(b"".join(out), np.uint8).copy()
        else:
            per_row = len(defaults)
            filled = np.empty(n * per_row, values.dtype)
            grid = filled.reshape(n, per_row)
            grid[~missing] = values.reshape(-1, per_row) if per_row else grid[~missing]
            grid[missing] = np.asarray(defaults, values.dtype)
            values, row_counts = filled, np.full(n, per_row, np.int64)
    if spec.shape is not None and lens is None and n <= _SHARED_SPLITS_MAX:
        # A fixed shape: every record holds its count (the codec checked it, defaults filled).
        splits = _fixed_splits(n, math.prod(spec.shape))
    else:
        splits = _splits(row_counts)
    if lens is not None:
        return Column(spec, values, splits, missing, _splits(lens))
    if spec.shape is not None:
        values = values.reshape((n, *spec.shape))
    return Column(spec, values, splits, missing)


_SHARED_SPLITS_MAX = 1 << 16  # records: batches this size share their fixed row splits


@functools.lru_cache(maxsize=64)
def _fixed_splits(n: int, per_row: int) -> np.ndarray:
    """``0, per_row, 2 * per_row, ... n * per_row``, read-only and shared: the row splits of
    every fixed-shape column of ``n`` records (made once per batch size, not per column)."""
    splits = np.arange(n + 1, dtype=np.int64) * per_row
    splits.flags.writeable = False
    return splits


def _splits(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _parse_python(records: Sequence[bytes] | RecordSlices, specs: Sequence[KeySpec],
                  where: Any, strict: bool = False) -> dict[str, Column]:
    """The same columns through protobuf (the reference the compiled codec is tested against)."""
    items = records.records() if isinstance(records, RecordSlices) else records
    n = len(items)
    per_key: list[list[Any]] = [[] for _ in specs]
    missing = np.zeros((len(specs), n), bool)
    known = {spec.key for spec in specs}
    for i, record in enumerate(items):
        place = where(i) if where is not None else i
        try:
            keys = decode_example_keys(record)
        except ValueError as err:
            raise SchemaError("<record>", str(err), record=place) from None
        if strict:
            # Every key counts, a feature with no list set too (the compiled codec's rule).
            extra = next((key for key in decode_example(record) if key not in known), None)
            if extra is not None:
                shown = extra if len(extra) <= 80 else extra[:80] + "..."
                raise SchemaError("<record>", f"holds key {shown!r}, which the schema does "
                                              "not describe", record=place)
        for k, spec in enumerate(specs):
            problem = check_key(spec, keys)
            if problem:
                raise SchemaError(spec.key, problem, record=place)
            value = keys.get(spec.key)
            missing[k, i] = value is None
            per_key[k].append([] if value is None else value)
    result = {}
    for k, spec in enumerate(specs):
        rows = per_key[k]
        row_counts = np.array([len(r) for r in rows], np.int64)
        if spec.dtype == "string":
            flat = [bytes(v) for r in rows for v in r]
            lens: np.ndarray | None = np.array([len(v) for v in flat], np.int64)
            values = np.frombuffer(b"".join(flat), np.uint8).copy()
        else:
            lens = None
            values = (np.concatenate([np.asarray(r, _DTYPE[spec.dtype]) for r in rows])
                      if rows else np.empty(0, _DTYPE[spec.dtype]))
        result[spec.key] = _finish(spec, values, row_counts,
                                   lens, missing[k])
    return result
