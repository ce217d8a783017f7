"""grain (JAX): a split as a ``RandomAccessDataSource`` (``__len__``, ``__getitem__``, a stable
``__repr__``), so grain's own samplers, sharding and checkpoints work on TFRecord datasets.

grain needs nothing from us beyond that protocol, so this module imports no framework.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from tfrecordkit.codecs import RecordKeys
from tfrecordkit.errors import OptionError
from tfrecordkit.readers import RECORD_ID
from tfrecordkit.readers._decoding import DecodeOptions
from tfrecordkit.readers._modes import (
    InOrder,
    ReadOptions,
    Shuffled,
    refuse_moved,
    refuse_untaken,
    sampling_of,
    shuffle_mode,
)
from tfrecordkit.readers._open import open_records
from tfrecordkit.readers._read_plan import PathArg
from tfrecordkit.sampling import EpochOrder
from tfrecordkit.store import SplitArg, split_text

__all__ = ["GrainSource", "load_grain_source"]


class GrainSource:
    """Record ``i`` of a split as a dict of NumPy values in the batch structure without its
    batch dimension (variable shapes as ``{"values", "lengths"}``), or with
    ``DecodeOptions(decode=False)`` its stored keys parsed but not decoded, plus its
    ``"__id"``. Thread-safe and picklable (files reopen after unpickling); numbers carry
    their schema dtype. Grain's default
    batching stacks fixed shapes; :meth:`collate` batches any record as the other readers
    do. Random crops and flips (``DecodeOptions(crop="random")``) are keyed by ``seed``, the
    epoch (a key ``k`` past the end reads record ``k % len`` in epoch ``k // len``) and the
    record, as in every reader."""

    def __init__(self, path: PathArg, split: SplitArg = "train", *,
                 options: DecodeOptions | None = None, seed: int = 0,
                 read: ReadOptions | None = None) -> None:
        self.options, self.seed = options or DecodeOptions(), seed
        read = read or ReadOptions()
        refuse_untaken("grain's source", ("ReadOptions(max_open_files=)",),
                       options=self.options, read=read)
        plan, self.records, self.decoder = open_records(
            path, split_text(split), self.options, schema=read.schema,
            max_open_files=read.max_open_files, storage_options=read.storage_options)
        self.fingerprint, self.mix = plan.fingerprint, plan.mix

    def __len__(self) -> int:
        return len(self.records) if self.mix is None else self.mix.records

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_orders", None)  # rebuilt on first use (it holds a lock)
        return state

    def _record_id(self, position: int, epoch: int) -> int:
        """The record at ``position`` of ``epoch``: itself, or in a mix the record drawn
        there (the shuffled order every loader reads the mix in)."""
        if self.mix is None:
            return position
        orders = self.__dict__.setdefault("_orders", {})
        order = orders.get(epoch)
        if order is None:
            order = self.mix.order(self.seed, epoch, "block", self.records.read_block)
            orders.clear()
            orders[epoch] = order
        return int(order.ids(np.array([position]))[0])

    def _values(self, record: bytes, key: int, epoch: int = 0) -> dict[str, Any]:
        label = self.decoder.shard_label
        shard_class = int(self.records.shard_classes([key])[0]) if label else None
        if not self.options.decode:  # parsed, not decoded
            values = self.decoder.raw_one(record, functools.partial(self.records.where, key),
                                          shard_class)
            if self.mix is not None:
                values = self.mix.relabelled(values, np.int64(key))
            values[RECORD_ID] = np.int64(key)
            return values
        keys = RecordKeys(self.seed, epoch, np.array([key], np.int64))
        values = self.decoder.decode_one(record, self.records.where(key), shard_class, keys)
        if self.mix is not None:
            values = self.mix.relabelled(values, np.int64(key))
        values[RECORD_ID] = np.int64(key)
        return values

    def __getitem__(self, key: int) -> dict[str, Any]:
        key = int(key)
        if key < 0:
            raise IndexError(f"record keys are not negative; got {key}")
        epoch, position = divmod(key, len(self))
        found = self._record_id(position, epoch)
        return self._values(self.records[found], found, epoch)

    def _getitems(self, keys: Sequence[int]) -> list[dict[str, Any]]:
        """Many records in one call (grain uses it for batched reads): read in file order."""
        epochs = [int(k) // len(self) for k in keys]
        ids = [self._record_id(int(k) % len(self), e) for k, e in zip(keys, epochs,
                                                                      strict=True)]
        return [self._values(r, k, e) for r, k, e in zip(self.records.get_many(ids), ids,
                                                         epochs, strict=True)]

    def order(self, seed: int = 0, epoch: int = 0,
              sampling: InOrder | Shuffled | None = None) -> np.ndarray:
        """The record keys of one epoch in the order ``load_numpy_dataset`` and
        ``load_torch_dataset`` read them with the same ``seed`` and ``sampling`` (one rank),
        e.g. ``grain.MapDataset.range(len(src)).map(lambda i: src[int(keys[i])])``, so
        grain, NumPy and PyTorch see one shuffled order."""
        mode = sampling_of(sampling)
        if not isinstance(mode, InOrder | Shuffled):
            raise OptionError(f"order() gives an epoch of every record: sampling must be "
                              f"InOrder() or Shuffled(); got {mode!r}")
        if self.mix is not None:  # the source's keys are already the mix's positions
            if mode != Shuffled() or seed != self.seed:
                raise OptionError(f"a mix's source reads its positions in the loaders' "
                                  f"Shuffled() order for its own seed ({self.seed}): call "
                                  f"order(seed={self.seed}) (got seed={seed}, {mode!r})")
            return epoch * len(self) + np.arange(len(self))
        return EpochOrder(len(self), seed, epoch, shuffle_mode(mode),
                          block=self.records.read_block).ids(np.arange(len(self)))

    def collate(self, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Records of this source as one batch, structured as every reader's batches
        (variable shapes padded with their ``lengths``): grain's ``batch_fn``, e.g.
        ``MapDataset.source(src).batch(32, batch_fn=src.collate)``."""
        if not self.options.decode:
            return self.decoder.collate_raw(records)
        return self.decoder.collate(list(records))

    def __repr__(self) -> str:
        # Stable across processes and runs: grain checks it when restoring a checkpoint.
        options = ", ".join(f"{k}={v!r}" for k, v in vars(self.options).items())
        return (f"GrainSource(path={self.records.path!r}, split={self.records.split!r}, "
                f"records={len(self)}, fingerprint={self.fingerprint!r}, {options})")


@refuse_moved("load_grain_source", {
    "batch_size": "grain's own batching, with batch_fn=source.collate",
    "sampling": "source.order(sampling=...)"})
def load_grain_source(path: PathArg, split: SplitArg = "train", *, seed: int = 0,
                      image_size: int | tuple[int, int] | None = None,
                      options: DecodeOptions | None = None,
                      read: ReadOptions | None = None, state: Any = None) -> GrainSource:
    """A split as a grain ``RandomAccessDataSource``: ``grain.MapDataset.source(...)`` or
    ``grain.DataLoader(data_source=...)`` then shuffle, shard, batch and checkpoint it.
    ``seed`` keys random crops and flips (see :class:`GrainSource`); ``image_size`` and
    ``options`` say how records become values, ``read`` how files are read (schema, storage
    options, open files), as in every loader. ``state=`` is refused, naming why: grain's
    checkpoints save its iterator. Given a :class:`~tfrecordkit.Mix`, key ``k`` reads position
    ``k % len`` of epoch ``k // len`` of the mix in its default shuffled order for ``seed``
    (what every loader reads; :meth:`GrainSource.order` lists an epoch's keys)."""
    from tfrecordkit.readers._decoding import decode_options

    refuse_untaken("grain's source", (), state=state)

    return GrainSource(path, split, options=decode_options(options, image_size=image_size),
                       seed=seed, read=read)
