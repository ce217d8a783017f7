"""Metric learning without a framework: class-balanced P×K batches and triplet batches as
NumPy arrays, decoded with the dataset's schema, with exact resume (JSON state)."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future
from typing import Any

import numpy as np

from tfrecordkit.codecs import RecordKeys
from tfrecordkit.errors import DatasetError
from tfrecordkit.format import RecordSlices, Storage
from tfrecordkit.readers import CLASS_ID, CLASS_POSITION, RECORD_ID
from tfrecordkit.readers._decoding import DecodeOptions, RecordDecoder
from tfrecordkit.readers._epochs import Epochs
from tfrecordkit.readers._modes import PK, ReadOptions, Triplets, class_dataset, refuse_untaken
from tfrecordkit.readers._options import thread_count
from tfrecordkit.readers._partition import Partition
from tfrecordkit.readers._read_plan import plan_read
from tfrecordkit.sampling import (
    ClassIndex,
    PKSampler,
    TripletSampler,
    check_state,
    fingerprint,
)
from tfrecordkit.schema import Schema
from tfrecordkit.store import Manifest, RecordFetcher, SplitArg, split_text

__all__ = ["PKLoader", "TripletLoader", "pk_loader", "stack_records", "triplet_loader"]


def stack_records(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Records to a batch: arrays stacked where shapes agree, else a list per feature."""
    batch: dict[str, Any] = {}
    for name in records[0]:
        values = [r[name] for r in records]
        try:
            batch[name] = np.stack([np.asarray(v) for v in values])
        except (ValueError, TypeError):
            batch[name] = values
    return batch


def _sources(index: ClassIndex, positions: np.ndarray) -> Callable[[int], str]:
    """Where the ``i``-th record of a batch is, for error messages."""
    def where(i: int) -> str:
        position = positions[i]
        return f"at byte {index.offset[position]} of {index.files[index.shard[position]]}"
    return where


Records = list[bytes] | RecordSlices
Step = tuple[list[np.ndarray], list[Records]]  # a step's position groups and records
READ_AHEAD_STEPS = 8
"""Steps whose records are requested ahead of the one being built, from object stores."""


class ReadAhead:
    """The records of a loader's next steps, requested on I/O threads while the current
    step is built: each request to an object store waits a round trip, so a few steps in
    flight keep batches coming at the store's throughput, not its latency. Errors surface
    when their step is taken, as if read then."""

    def __init__(self, loader: _SampledLoader, depth: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.loader, self.depth = loader, depth
        self._pool = ThreadPoolExecutor(depth, thread_name_prefix="tfrecordkit-ahead")
        self._pending: dict[tuple[int, int], Future[Step]] = {}

    def plan(self, keys: Sequence[tuple[int, int]]) -> None:
        """Request the records of ``keys`` (``(epoch, step)``: the step about to be taken,
        then the next ones) not requested yet; requests for other steps are dropped."""
        wanted = set(keys)
        for key in [k for k in self._pending if k not in wanted]:
            self._pending.pop(key).cancel()
        for key in keys:
            if key not in self._pending:
                self._pending[key] = self._pool.submit(self.loader.read_step, *key)

    def take(self, key: tuple[int, int]) -> Step:
        """Step ``key``'s positions and records (read now if not requested)."""
        future = self._pending.pop(key, None)
        return self.loader.read_step(*key) if future is None else future.result()

    def close(self) -> None:
        """Drop what has not started, and wait for what has."""
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()
        self._pool.shutdown(wait=True)


class _SampledLoader(Epochs):
    """What the P×K and triplet loaders share: epochs of steps built by ``load_step``, run on
    a thread pool, a JSON state checked by ``check_state``, open files to close."""

    epoch: int
    step: int
    seed: int
    num_threads: int
    partition: Partition
    fetcher: RecordFetcher

    def __len__(self) -> int:
        raise NotImplementedError

    @property
    def pool_threads(self) -> int:
        """Threads that build steps (each step's images split between them)."""
        return self.num_threads

    def step_positions(self, epoch: int, step: int) -> list[np.ndarray]:
        """The positions (in the class index) of the records ``step`` of ``epoch`` reads, in
        groups fetched together."""
        raise NotImplementedError

    def keys(self, epoch: int, step: int, positions: np.ndarray) -> RecordKeys:
        """What the step's random crops and flips are keyed by: the seed, the step counter
        (a record drawn at two steps of an epoch gets two windows) and its position."""
        return RecordKeys(self.seed, epoch * max(len(self), 1) + step, positions)

    def build_step(self, epoch: int, step: int, groups: list[np.ndarray],
                   records: list[Records], pool: Executor | None) -> dict[str, Any]:
        """The batch of ``step`` from its groups' positions and their records."""
        raise NotImplementedError

    def load_step(self, epoch: int, step: int, pool: Executor | None = None,
                  ahead: ReadAhead | None = None) -> dict[str, Any]:
        """This rank's batch at ``step`` of ``epoch`` (its records from ``ahead`` when it
        read them already)."""
        groups, records = (ahead.take((epoch, step)) if ahead is not None
                           else self.read_step(epoch, step))
        return self.build_step(epoch, step, groups, records, pool)

    def read_step(self, epoch: int, step: int) -> Step:
        """The positions of ``step`` of ``epoch`` in their groups, and their records (from
        local files as ``RecordSlices`` of one buffer)."""
        groups = self.step_positions(epoch, step)
        return groups, [self.fetcher.fetch_slices(g) for g in groups]

    def read_ahead(self) -> ReadAhead | None:
        """A :class:`ReadAhead` for this loader's storage: object stores answer each
        request after a round trip, so the next steps' records are requested while this one
        is decoded; local files need none (None)."""
        if self.fetcher.storage.local or READ_AHEAD_STEPS < 1:
            return None
        return ReadAhead(self, READ_AHEAD_STEPS)

    def check_state(self, state: Any) -> dict[str, Any]:
        """``state`` as a dict, checked to be a whole state of a loader of this
        configuration (else :class:`~tfrecordkit.errors.StateError` naming the key)."""
        raise NotImplementedError

    def set_epoch(self, epoch: int) -> None:
        """Start ``epoch`` (from its first step) on the next iteration."""
        self.epoch, self.step = int(epoch), 0

    def iter_steps(self, epoch: int, steps: Iterable[int], pool: Executor
                   ) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(step, batch)`` for ``steps`` of ``epoch`` (from object stores, the next steps'
        records requested ahead)."""
        ahead = self.read_ahead()
        order = list(steps)
        try:
            for i, step in enumerate(order):
                if ahead is not None:  # this step and the next ones
                    ahead.plan([(epoch, s) for s in order[i : i + 1 + ahead.depth]])
                yield step, self.load_step(epoch, step, pool, ahead)
        finally:
            if ahead is not None:
                ahead.close()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a :meth:`state_dict` (refused if saved with other settings)."""
        state = self.check_state(state)
        self.epoch, self.step = state["epoch"], state["step"]

    def close(self) -> None:
        """Close the files kept open."""
        self.fetcher.close()


class PKLoader(_SampledLoader):
    """P×K batches by ``(epoch, step)`` with :class:`Loader`'s interface (``len``, epochs,
    JSON state, loading workers taking steps in turn), so every framework adapter serves both.

    Each batch holds the decoded features as stored, ``"__class"`` (class ids, class-major: K
    per class), ``"__class_position"`` (0..P-1) and ``"__id"`` (positions in the class
    index).
    """

    def __init__(self, path: str | os.PathLike[str], split: SplitArg = "train", *, sampling: PK,
                 seed: int = 0, partition: Partition | None = None,
                 options: DecodeOptions | None = None, read: ReadOptions | None = None) -> None:
        self.partition, self.seed = partition or Partition(), seed
        read = _sampled_read(options, read)
        manifest, schema, storage = _sampled_dataset(path, split_text(split), read)
        classes_per_batch, examples_per_class = (sampling.classes_per_batch,
                                                 sampling.examples_per_class)
        self.index = ClassIndex.from_dataset(path, split_text(split), manifest, storage=storage)
        self.sampler = PKSampler(self.index, classes_per_batch, examples_per_class, seed=seed,
                                 exclude_small=sampling.exclude_small,
                                 epoch=sampling.epoch, rank=self.partition.rank,
                                 world_size=self.partition.world_size)
        self.decoder = RecordDecoder(schema, options or DecodeOptions())
        self.fetcher = RecordFetcher(self.index, read.max_open_files, storage=storage)
        self.num_threads = thread_count(read.num_threads)
        self.split = split_text(split)
        self.fingerprint = fingerprint(manifest.to_json(), self.split)
        self.epoch, self.step = 0, 0
        self._class_of = np.repeat(self.index.classes, self.index.counts)
        self._positions = np.repeat(np.arange(classes_per_batch), examples_per_class)

    def __len__(self) -> int:
        return self.sampler.steps_per_epoch

    def step_positions(self, epoch: int, step: int) -> list[np.ndarray]:
        return [self.sampler.batch(epoch, step)]

    def build_step(self, epoch: int, step: int, groups: list[np.ndarray],
                   records: list[Records], pool: Executor | None) -> dict[str, Any]:
        positions = groups[0]
        labels = self._class_of[positions]
        batch = self.decoder.decode_batch(records[0], _sources(self.index, positions), pool,
                                          labels, self.num_threads,
                                          keys=self.keys(epoch, step, positions))
        batch[CLASS_ID] = labels
        batch[CLASS_POSITION] = self._positions
        batch[RECORD_ID] = positions
        return batch

    def state_dict(self) -> dict[str, Any]:
        """Where the loader is, as JSON: the same on every rank and worker."""
        state = self.sampler.state_dict()
        state.update(epoch=self.epoch, step=self.step, fingerprint=self.fingerprint,
                     split=self.split)
        return state

    def check_state(self, state: Any) -> dict[str, Any]:
        """``state`` as a dict, checked to be a whole state of a loader of this
        configuration (else :class:`~tfrecordkit.errors.StateError` naming the key)."""
        settings = {k: v for k, v in self.sampler.state_dict().items()
                    if k not in ("epoch", "step")}
        return check_state(state, {"fingerprint": self.fingerprint, **settings}, len(self),
                           split=self.split)



class TripletLoader(_SampledLoader):
    """Triplet batches by ``(epoch, step)`` with :class:`Loader`'s interface: every anchor once
    per epoch, ``batch_size`` triplets a global step (each of ``world_size`` ranks takes
    ``batch_size / world_size``; the last step may be short), JSON state.

    Each batch is ``{"anchor": ..., "positive": ..., "negative": ...}``, each a decoded batch
    with its ``"__class"`` (class ids) and ``"__id"`` (positions in the class index);
    ``with_labels=False`` leaves each part's label feature out (unless ``options.features``
    names it), as tf.data does.
    """

    def __init__(self, path: str | os.PathLike[str], split: SplitArg = "train", *, batch_size: int,
                 seed: int = 0, partition: Partition | None = None,
                 options: DecodeOptions | None = None, read: ReadOptions | None = None,
                 with_labels: bool = True) -> None:
        self.partition = partition or Partition()
        read = _sampled_read(options, read)
        manifest, schema, storage = _sampled_dataset(path, split_text(split), read)
        self.index = ClassIndex.from_dataset(path, split_text(split), manifest, storage=storage)
        self.sampler = TripletSampler(self.index, seed=seed, rank=self.partition.rank,
                                      world_size=self.partition.world_size)
        options = options or DecodeOptions()
        label = manifest.label_feature
        if not with_labels and options.features is None and label in schema.user_features:
            options = dataclasses.replace(options, features=tuple(
                n for n in schema.user_features if n != label))
        self.decoder = RecordDecoder(schema, options)
        self.fetcher = RecordFetcher(self.index, read.max_open_files, storage=storage)
        # The global batch: this rank takes its share of each step's triplets.
        self.batch_size, self.seed = batch_size, seed
        self._rank_batch = self.partition.per_rank(batch_size)
        self.num_threads = thread_count(read.num_threads)
        self.split = split_text(split)
        self.fingerprint = fingerprint(manifest.to_json(), self.split)
        self.epoch, self.step = 0, 0
        self._class_of = np.repeat(self.index.classes, self.index.counts)
        self._epoch_triplets: tuple[int, np.ndarray] | None = None
        # Every rank gets as many triplets as the first (one more than others at most), so
        # all ranks take the same number of steps.
        world = self.partition.world_size
        self._per_rank = math.ceil(self.sampler.total_anchors / world)
        if self.sampler.anchors_per_epoch == 0:
            raise DatasetError(f"{path}: rank {self.partition.rank} of {world} gets no "
                               f"anchors (only {self.sampler.total_anchors} in the split)")

    def __len__(self) -> int:
        return math.ceil(self._per_rank / self._rank_batch)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_epoch_triplets"] = None  # recomputed from (seed, epoch) where it is needed
        return state

    def step_positions(self, epoch: int, step: int) -> list[np.ndarray]:
        """Anchors, positives and negatives of ``step``."""
        held = self._epoch_triplets
        if held is None or held[0] != epoch:
            triplets = self.sampler.triplets(epoch)
            short = self._per_rank - len(triplets)  # this rank has one anchor fewer: wrap
            held = self._epoch_triplets = (epoch, np.concatenate([triplets, triplets[:short]]))
        chunk = held[1][step * self._rank_batch : (step + 1) * self._rank_batch]
        return [chunk[:, column] for column in range(3)]

    def build_step(self, epoch: int, step: int, groups: list[np.ndarray],
                   records: list[Records], pool: Executor | None) -> dict[str, Any]:
        batch = {}
        for role, positions, found in zip(("anchor", "positive", "negative"), groups, records,
                                          strict=True):
            labels = self._class_of[positions]
            part = self.decoder.decode_batch(found, _sources(self.index, positions), pool,
                                             labels, self.num_threads,
                                             keys=self.keys(epoch, step, positions))
            part[CLASS_ID] = labels
            part[RECORD_ID] = positions
            batch[role] = part
        return batch

    def state_dict(self) -> dict[str, Any]:
        """Where the loader is, as JSON: the same on every rank and worker."""
        return {"epoch": self.epoch, "step": self.step, "seed": self.seed,
                "batch_size": self.batch_size, "fingerprint": self.fingerprint,
                "split": self.split}

    def check_state(self, state: Any) -> dict[str, Any]:
        """``state`` as a dict, checked to be a whole state of a loader of this
        configuration (else :class:`~tfrecordkit.errors.StateError` naming the key)."""
        return check_state(state, {key: getattr(self, key) for key in
                                   ("fingerprint", "seed", "batch_size")}, len(self),
                           split=self.split)



def _sampled_read(options: DecodeOptions | None, read: ReadOptions | None) -> ReadOptions:
    """``read``, once what class-balanced loaders cannot do is refused."""
    read = read or ReadOptions()
    refuse_untaken("P×K and triplet batches of the NumPy and PyTorch loaders",
                   ("ReadOptions(num_threads=)", "ReadOptions(max_open_files=)"),
                   options=options, read=read)
    return read


def _sampled_dataset(path: str | os.PathLike[str], split: str, read: ReadOptions
                     ) -> tuple[Manifest, Schema, Storage]:
    """The dataset a class-balanced loader samples: through the read plan every loader uses
    (its shards checked against the manifest, the schema against its records).

    Raises:
        DatasetError: not a dataset directory (sampling by class needs its manifest).
    """
    read_plan = plan_read(path, split, schema=read.schema,
                          storage_options=read.storage_options)
    if read_plan.manifest is None:
        raise DatasetError(f"{os.fspath(path)}: class-balanced sampling needs a dataset "
                           f"directory with its manifest (adopt the files first)")
    return read_plan.manifest, read_plan.schema, read_plan.storage


def pk_loader(sampling: PK, path: Any, split: str, *, batch_size: int | None, seed: int,
              options: DecodeOptions, partition: Partition,
              read: ReadOptions | None) -> PKLoader:
    """:class:`PK`'s loader (over one dataset directory's classes)."""
    return PKLoader(class_dataset(path, sampling), split, sampling=sampling, seed=seed,
                    partition=partition, options=options, read=read)


def triplet_loader(sampling: Triplets, path: Any, split: str, *, batch_size: int | None,
                   seed: int, options: DecodeOptions, partition: Partition,
                   read: ReadOptions | None) -> TripletLoader:
    """:class:`Triplets`' loader (over one dataset directory's classes)."""
    assert batch_size is not None  # Triplets.batch_size_for refuses None
    return TripletLoader(class_dataset(path, sampling), split, batch_size=batch_size,
                         seed=seed, partition=partition, options=options, read=read,
                         with_labels=sampling.with_labels)
