"""Batches as NumPy arrays, without any framework: ``load_numpy_dataset``, one entry point for
every sampling mode (``open_loader`` picks the :class:`Loader` for in-order and shuffled
batches, or ``_metric``'s P×K and triplet loaders, all with one interface)."""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor, Future
from typing import Any

import numpy as np

from tfrecordkit.codecs import RecordKeys
from tfrecordkit.errors import DatasetError
from tfrecordkit.format import RecordSlices
from tfrecordkit.readers import RECORD_ID, VALID
from tfrecordkit.readers._decoding import (
    DecodeOptions,
    chunk_size,
    decode_options,
)
from tfrecordkit.readers._epochs import Epochs
from tfrecordkit.readers._examples import UNBATCHED_STEP, Examples, check_unbatched
from tfrecordkit.readers._metric import PKLoader, TripletLoader, stack_records
from tfrecordkit.readers._mix import JoinedOrder, Mix
from tfrecordkit.readers._modes import (
    PK,
    InOrder,
    ReadOptions,
    Sampling,
    Shuffled,
    Triplets,
    batch_size_of,
    implementation,
    refuse_moved,
    refuse_untaken,
    sampling_of,
    seed_of,
    shuffle_mode,
)
from tfrecordkit.readers._open import open_plan, split_records
from tfrecordkit.readers._options import thread_count
from tfrecordkit.readers._partition import Partition
from tfrecordkit.readers._read_plan import PathArg
from tfrecordkit.sampling import EpochOrder, check_state
from tfrecordkit.store import SplitArg, SplitRecords, split_text

__all__ = ["PK", "Augment", "DecodeOptions", "Examples", "InOrder", "Loader", "Mix", "PKLoader",
           "Partition",
           "ReadOptions", "Sampling", "Shuffled", "TripletLoader", "Triplets",
           "load_numpy_dataset", "open_loader", "stack_records"]


# -- the general loader --------------------------------------------------------------------

_LOADER_TAKES = ("DecodeOptions(augment=)", "ReadOptions(num_threads=)",
                 "ReadOptions(max_open_files=)")


class _Done:
    """A result already at hand, with the part of the Future interface the loader uses."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value

    def cancel(self) -> bool:
        return False



Augment = Callable[[dict[str, Any], np.random.Generator], dict[str, Any]]
"""Per-record augmentation: (decoded values, a generator seeded by the record) -> values."""


def _finisher(whole: Future[dict[str, Any]] | _Done) -> Callable[..., dict[str, Any]]:
    """What :meth:`Loader._start` returns for a step done in one piece."""

    def finish(cancel: bool = False) -> dict[str, Any]:
        if cancel:
            whole.cancel()
            return {}
        return whole.result()

    return finish


class Loader(Epochs):
    """Batches of one split as dicts of NumPy arrays, in an order that is a pure function of
    (dataset fingerprint, seed, epoch, step, global batch size, sampling).

    The interface every loader of :func:`load_numpy_dataset` has (P×K and triplets too):
    ``len()`` is the number of steps per epoch; iterating runs the current epoch from the
    current step, then moves to the next epoch; ``batches(n)`` runs ``n`` steps across epochs.
    ``state_dict()`` is JSON and the same on every rank; ``load_state_dict`` continues exactly
    (also with another world size or number of loading workers, as long as the global batch
    is unchanged).
    """

    def __init__(self, path: PathArg, split: SplitArg = "train", *, batch_size: int,
                 sampling: InOrder | Shuffled | None = None, seed: int = 0,
                 partition: Partition | None = None, options: DecodeOptions | None = None,
                 read: ReadOptions | None = None) -> None:
        self.partition = partition or Partition()
        self.partition.per_rank(batch_size)  # the global batch, checked
        sampling = sampling or Shuffled()
        self.options, read = options or DecodeOptions(), read or ReadOptions()
        refuse_untaken("the NumPy and PyTorch loaders", _LOADER_TAKES, sampling=sampling,
                       options=self.options, read=read)
        shuffle = shuffle_mode(sampling)
        self.augment = self.options.augment
        self.plan, self.decoder = open_plan(path, split_text(split), self.options,
                                            storage_options=read.storage_options,
                                            schema=read.schema)
        self._max_open_files = read.max_open_files
        self._records: SplitRecords | None = None
        self._opening = threading.Lock()  # tf.data's step-reader threads may ask at once
        self.features = self.decoder.features
        self.batch_size, self.shuffle, self.seed = batch_size, shuffle, seed
        self.drop_last = drop_last = sampling.drop_last
        self.num_threads = thread_count(read.num_threads)  # its decoder's parse too
        self.fingerprint = self.plan.fingerprint
        self.mix = self.plan.mix
        self.epoch, self.step = 0, 0
        self._order: EpochOrder | JoinedOrder | None = None
        n = self.epoch_records = (self.mix.records if self.mix is not None
                                  else self.plan.records if self.plan.records >= 0
                                  else len(self.records))
        self._steps = n // batch_size if drop_last else -(-n // batch_size)
        if self._steps == 0:
            raise DatasetError(f"{path}: split {split!r} has {n} records, fewer than one "
                               f"batch of {batch_size}"
                               + (" (drop_last=True drops it)" if drop_last else ""))

    @property
    def records(self) -> SplitRecords:
        """Random access to the split's records (opened on first use, once, whichever thread
        asks first: tf.data reading the files in order needs only the plan)."""
        if self._records is None:
            with self._opening:
                if self._records is None:
                    self._records = split_records(self.plan, self._max_open_files)
        return self._records

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_order"] = None  # rebuilt on first use (it caches closures)
        # Opened here, once, rather than by every process the loader is sent to (each would
        # read every index file again).
        state["_records"] = self.records
        del state["_opening"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._opening = threading.Lock()

    @property
    def num_threads(self) -> int:
        """Threads that read and decode a step (the loader's plan: its pool, its chunks and
        the codec's parse of a large batch all follow it)."""
        return self._threads

    @num_threads.setter
    def num_threads(self, threads: int) -> None:
        self._threads = self.decoder.threads = threads

    @property
    def rank(self) -> int:
        """This process's rank."""
        return self.partition.rank

    @property
    def world_size(self) -> int:
        """The number of ranks sharing every global batch."""
        return self.partition.world_size

    def __len__(self) -> int:
        return self._steps

    def set_epoch(self, epoch: int) -> None:
        """Start ``epoch`` (from its first step) on the next iteration."""
        self.epoch, self.step = int(epoch), 0

    def step_ids(self, epoch: int, step: int) -> tuple[np.ndarray, np.ndarray]:
        """This rank's record ids at global ``step`` of ``epoch``, and which are real
        (False: a wrapped-around filler in the last step when ``drop_last=False`` and there
        are several ranks; with one rank the last step is smaller instead)."""
        n, per_rank = self.epoch_records, self.batch_size // self.world_size
        start = step * self.batch_size + self.rank * per_rank
        positions = np.arange(start, start + per_rank)
        if self.world_size == 1:  # one rank: the last batch is smaller, nothing repeated
            positions = positions[positions < n]
        valid = positions < n
        if self._order is None or self._order.epoch != epoch:
            # One per epoch: block mode lays out the epoch's block order once, not per step.
            self._order = (EpochOrder(n, self.seed, epoch, self.shuffle,
                                      block=self.records.read_block) if self.mix is None
                           else self.mix.order(self.seed, epoch, self.shuffle,
                                               self.records.read_block))
        return self._order.ids(positions % n), valid

    def load_step(self, epoch: int, step: int, pool: Executor | None = None) -> dict[str, Any]:
        """This rank's batch of global ``step`` in ``epoch`` (with ``"__id"``, and ``"__valid"``
        when ``drop_last=False``)."""
        if pool is not None:
            return self._start(epoch, step, pool)()
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(self.num_threads) as own:
            return self._start(epoch, step, own)()

    def _start(self, epoch: int, step: int, pool: Executor) -> Callable[..., dict[str, Any]]:
        """Start reading and decoding a step on ``pool`` (in chunks, so threads share it);
        the returned function waits for it and assembles the batch (or, with
        ``cancel=True``, drops what has not started)."""
        ids, valid = self.step_ids(epoch, step)
        records, decoder = self.records, self.decoder

        augment, seed = self.augment, self.seed
        # Fixed-shape images are decoded straight into the batch's array; images of varying
        # sizes into a zero-padded one, once the records say how large it must be (read
        # here, decoded on the pool).
        arrays = decoder.batch_arrays(len(ids)) if augment is None else {}
        ahead: RecordSlices | list[bytes] | None = None
        if augment is None and decoder.padded_images and len(ids):
            ahead = records.get_slices(ids)
            arrays.update(decoder.padded_arrays(ahead, lambda i: records.where(int(ids[i]))))

        def part(chunk: np.ndarray, at: int = 0) -> Any:
            # Local files: decoded where they lie.
            raw = records.get_slices(chunk) if ahead is None else _part_of(ahead, at,
                                                                          len(chunk))
            classes = records.shard_classes(chunk) if decoder.shard_label else None
            if not decoder.options.decode:
                return decoder.raw_columns(raw, lambda i: records.where(int(chunk[i])),
                                           classes)
            keys = RecordKeys(seed, epoch, chunk)
            if augment is None:  # feature by feature: no per-record rows at all
                return decoder.decode_columns(
                    raw, lambda i: records.where(int(chunk[i])), classes,
                    {name: a[at : at + len(chunk)] for name, a in arrays.items()}, keys)
            rows = decoder.decode_rows(raw, lambda i: records.where(int(chunk[i])), classes,
                                       keys)
            if augment is not None:  # randomness keyed by the record, not by the thread
                rows = [augment(row, np.random.default_rng([seed, epoch, int(i)]))
                        for row, i in zip(rows, chunk, strict=True)]
            return rows

        def assemble(results: list[Any]) -> dict[str, Any]:
            if not decoder.options.decode:
                batch = dict(results[0])  # one part: parsed, not decoded
            elif augment is None:
                batch = decoder.assemble_columns(results, arrays)
            else:
                batch = decoder.assemble([row for rows in results for row in rows])
            if self.mix is not None:  # each source's class ids as the joined names' ids
                batch = self.mix.relabelled(batch, ids)
            batch[RECORD_ID] = ids
            if not self.drop_last:
                batch[VALID] = valid
            return batch

        if not decoder.options.decode:  # a few reads: faster here than handed to a thread
            return _finisher(_Done(assemble([part(ids)])))
        # Images and audio: a chunk per thread, so threads share a batch; light records: one
        # chunk, so the columnar codec sees large batches, assembled on its thread too (on
        # the consumer's, it took the GIL from the thread reading the next step).
        size = chunk_size(len(ids), self.num_threads) if decoder.heavy else max(len(ids), 1)
        if size >= len(ids):
            return _finisher(pool.submit(lambda: assemble([part(ids)])))
        parts = [pool.submit(part, ids[i : i + size], i) for i in range(0, len(ids), size)]

        def finish(cancel: bool = False) -> dict[str, Any]:
            if cancel:
                for p in parts:
                    p.cancel()
                return {}
            return assemble([p.result() for p in parts])

        return finish

    def iter_steps(self, epoch: int, steps: Iterable[int], pool: Executor,
                   prefetch: int = 2) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(step, batch)`` for ``steps`` of ``epoch``, reading and decoding up to
        ``prefetch`` steps ahead of the one being consumed."""
        pending: deque[tuple[int, Callable[..., dict[str, Any]]]] = deque()
        remaining = iter(steps)
        try:
            for step in remaining:
                pending.append((step, self._start(epoch, step, pool)))
                if len(pending) > prefetch:
                    done, finish = pending.popleft()
                    yield done, finish()
            while pending:
                done, finish = pending.popleft()
                yield done, finish()
        finally:  # an abandoned iteration leaves no queued work behind
            for _, finish in pending:
                finish(cancel=True)

    @property
    def pool_threads(self) -> int:
        """Threads that read and decode steps ahead. Light records from local files take
        one: their Python holds the GIL for most of a step, so a second thread only added
        GIL hand-offs (16-feature records: 2.80 vs 2.15 CPU µs per record, 476k vs 491k
        rec/s); images, audio, per-record augmentation, compressed files (inflating drops
        the GIL) and remote reads take them all."""
        light = (not self.decoder.heavy and self.augment is None
                 and self.records.storage.local and self.records.restarts is None)
        return 1 if light else self.num_threads

    def state_dict(self) -> dict[str, Any]:
        """Where the loader is, as JSON: the same on every rank and worker."""
        return {"epoch": self.epoch, "step": self.step, "seed": self.seed,
                "batch_size": self.batch_size, "shuffle": self.shuffle,
                "drop_last": self.drop_last, "fingerprint": self.fingerprint,
                "split": self.plan.split}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a :meth:`state_dict`; refuses one made for another dataset, seed,
        global batch size or shuffle mode, or one that is malformed (naming the key)."""
        state = self.check_state(state)
        self.epoch, self.step = state["epoch"], state["step"]

    def check_state(self, state: Any) -> dict[str, Any]:
        """``state`` as a dict, checked to be a whole state of a loader of this
        configuration (else :class:`~tfrecordkit.errors.StateError` naming the key)."""
        return check_state(state, {key: getattr(self, key) for key in
                                   ("fingerprint", "seed", "batch_size", "shuffle",
                                    "drop_last")}, self._steps, split=self.plan.split)


@refuse_moved("load_numpy_dataset")
def load_numpy_dataset(path: PathArg, split: SplitArg = "train", *,
                       batch_size: int | None = None, sampling: Sampling | None = None,
                       seed: int | None = 0, image_size: int | tuple[int, int] | None = None,
                       options: DecodeOptions | None = None,
                       partition: Partition | None = None,
                       state: Mapping[str, Any] | None = None,
                       read: ReadOptions | None = None
                       ) -> Loader | PKLoader | TripletLoader | Examples:
    """Batches of a split as dicts of NumPy arrays, without any framework.

    The result is re-iterable: each pass is one epoch (from the step it stopped at), ``len()``
    its steps, ``state_dict()`` (JSON, the same on every rank) where it is, and ``state=``
    continues exactly there. Every batch carries ``"__id"``.

    Args:
        path: a dataset directory, or TFRecord files / globs written by anyone (their schema
            inferred from a sample unless ``read`` gives one); URLs (``s3://``, ``gs://``,
            ...) too; or a :class:`Mix` of several, read as one by weight.
        split: which split, or a split expression read as one: ``"train+val"`` (or
            ``["train", "val"]``), ``"train[:10%]"``, ``"train[-1000:]"`` (TFDS's meaning:
            see :func:`~tfrecordkit.store.resolve_split`).
        batch_size: the global batch: each of the ``partition``'s ranks gets
            ``batch_size / world_size`` records a step, every rank the same number of steps.
            On one rank the last batch is smaller; with several, the last step wraps around
            and ``"__valid"`` marks the real records. For :class:`PK` leave it out (P×K).
            None (in order or shuffled, one rank): single examples, each record's values
            without the batch dimension, in the same order (an :class:`Examples`).
        sampling: which records make each batch: :class:`Shuffled` (default),
            :class:`InOrder`, :class:`PK` (class-balanced) or :class:`Triplets`.
        seed: seeds the order, P×K draws, triplets, random crops and ``augment``: the same
            seed gives the same batches every run. None draws a fresh one (or, with
            ``state``, takes the state's).
        image_size: resize images to ``(height, width)`` (an int: a square); the shortcut of
            ``options.image_size``.
        options: how records become values (:class:`DecodeOptions`: features, decode,
            crops, dtype, padding, ``augment``...).
        partition: this process's share (:class:`Partition`; default: all of it).
        state: a ``state_dict()`` to continue from.
        read: how files are read (:class:`ReadOptions`: schema, storage options, threads,
            open files).

    Returns:
        A :class:`Loader` (in order or shuffled), :class:`PKLoader` or
        :class:`TripletLoader`, all with one interface.
    """
    loader: Loader | PKLoader | TripletLoader | Examples = open_loader(
        path, split_text(split), batch_size=batch_size, sampling=sampling,
        seed=seed_of(seed, state), image_size=image_size, options=options,
        partition=Partition.given(partition), read=read)
    if state is not None:
        loader.load_state_dict(dict(state))
    return loader


def open_loader(path: PathArg, split: str, *, batch_size: int | None,
                sampling: Sampling | None, seed: int,
                image_size: int | tuple[int, int] | None, options: DecodeOptions | None,
                partition: Partition, read: ReadOptions | None) -> Any:
    """The loader a sampling mode reads with (what the NumPy and PyTorch entry points share):
    the mode's batch-size rule, then its own NumPy loader (:class:`SamplingMode`).

    Raises:
        OptionError: a batch size the mode cannot take.
    """
    sampling = sampling_of(sampling)
    options = decode_options(options, image_size=image_size)
    batch_size = batch_size_of(sampling, batch_size)
    return implementation(sampling.numpy_loader)(
        sampling, path, split, batch_size=batch_size, seed=seed, options=options,
        partition=partition, read=read)


def ordered_loader(sampling: InOrder | Shuffled, path: PathArg, split: str, *,
                   batch_size: int | None, seed: int, options: DecodeOptions,
                   partition: Partition, read: ReadOptions | None) -> Loader | Examples:
    """:class:`InOrder`'s and :class:`Shuffled`'s loader: batches, or single examples (no
    ``batch_size``) in the order of every batch size."""
    if batch_size is None:
        check_unbatched(partition)
        return Examples(Loader(path, split, batch_size=UNBATCHED_STEP,
                               sampling=dataclasses.replace(sampling, drop_last=False),
                               seed=seed, partition=partition, options=options, read=read))
    return Loader(path, split, batch_size=batch_size, sampling=sampling, seed=seed,
                  partition=partition, options=options, read=read)


def _part_of(records: RecordSlices | list[bytes], start: int, count: int
             ) -> RecordSlices | list[bytes]:
    """Records ``start : start + count`` of a batch read at once."""
    if isinstance(records, RecordSlices):
        return RecordSlices(records.buffer, records.offsets[start : start + count],
                            records.lengths[start : start + count])
    return records[start : start + count]
