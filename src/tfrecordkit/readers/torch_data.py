"""PyTorch: batches of a split as an ``IterableDataset`` for ``DataLoader(ds, batch_size=None)``,
split between DataLoader workers and ``torch.distributed`` ranks, with exact resume.

Built on the framework-free :class:`~tfrecordkit.readers.numpy_data.Loader`: the same order,
the same values, the same JSON state; only the arrays become tensors.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from tfrecordkit.errors import (
    MissingDependencyError,
    OptionError,
    RepeatedEpochWarning,
    StateError,
)
from tfrecordkit.readers._decoding import DecodeOptions
from tfrecordkit.readers._mix import MixPlan
from tfrecordkit.readers._modes import ReadOptions, Sampling, refuse_moved, seed_of
from tfrecordkit.readers._options import threads_per_worker
from tfrecordkit.readers._partition import Partition
from tfrecordkit.readers._read_plan import PathArg
from tfrecordkit.readers._shared_epoch import SharedEpoch
from tfrecordkit.readers.numpy_data import (
    Examples,
    Loader,
    PKLoader,
    TripletLoader,
    open_loader,
)
from tfrecordkit.sampling import MAX_EPOCH, state_int
from tfrecordkit.store import SplitArg, split_text

try:
    import torch
    from torch.utils.data import IterableDataset, get_worker_info
    from torch.utils.data._utils.collate import default_collate_fn_map
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError("torch", "torch", "the PyTorch reader") from err

__all__ = ["TorchDataset", "load_torch_dataset", "to_tensors"]


def to_tensors(value: Any) -> Any:
    """NumPy arrays (also inside dicts and lists) as tensors; strings, bytes and serialized
    records stay Python objects."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return value.tolist()
        if value.dtype.kind == "U":
            return value.tolist()
        if not value.flags.writeable:  # e.g. Pillow's pixels: torch wants its own memory
            value = value.copy()
        return torch.from_numpy(np.ascontiguousarray(value))
    if isinstance(value, Mapping):
        return {k: to_tensors(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_tensors(v) for v in value]
    return value


_ALIGN = 64  # bytes: every tensor of a packed batch starts at a multiple of it
#: Names of the shared-memory buffers workers hand batches over in start with it.
SHARED_PREFIX = "tfrk-"


class _Slot(int):
    """Where a tensor stood in a packed batch (its index among the batch's tensors)."""


class _Batch(dict):  # type: ignore[type-arg]
    """A whole batch as the datasets here yield it. torch's default collation refuses it: a
    ``DataLoader(ds, batch_size=4)`` would otherwise stack four batches into one of batches
    (``image (4, 16, ...)``) without a word."""


def _refuse_collation(batch: Any, *, collate_fn_map: Any = None) -> Any:
    raise OptionError("these datasets yield whole batches (their batch_size is the batch): "
                      "give the DataLoader batch_size=None; a DataLoader batch_size stacks "
                      "batches into batches of batches")


# torch's documented way to extend default_collate: a function per type.
default_collate_fn_map[_Batch] = _refuse_collation


class _Packed(_Batch):
    """A batch built in a DataLoader worker. Pickled to the main process, all its tensors
    travel in one buffer (not one per tensor: with 16 features that was most of the time):
    one of the worker's reused shared buffers (:class:`_Ring`) when one is free, else a
    shared-memory tensor of its own; it arrives as a plain dict of tensors viewing it."""

    def __copy__(self) -> _Packed:  # torch's default_convert copies it: stay packed
        return _Packed(self)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        tensors: list[Any] = []
        skeleton = _strip(dict(self), tensors)
        meta, total = [], 0
        for t in tensors:  # a list of bytes travels as its joined bytes (uint8)
            nbytes = (sum(map(len, t)) if isinstance(t, list)
                      else t.numel() * t.element_size())
            meta.append((total, None if isinstance(t, list) else t.dtype,
                         [len(b) for b in t] if isinstance(t, list) else tuple(t.shape),
                         nbytes))
            total += -(-nbytes // _ALIGN) * _ALIGN
        slot = _ring().take(total) if total <= _RING_LARGEST else None
        if slot is not None:
            view = slot.buf
            for (offset, _, _, nbytes), t in zip(meta, tensors, strict=True):
                at = _HEADER + offset
                if not nbytes:
                    continue
                if isinstance(t, list):
                    view[at : at + nbytes] = b"".join(t)
                else:
                    view[at : at + nbytes] = t.contiguous().reshape(-1).view(
                        torch.uint8).numpy().data
            return _unpack_shared, (os.getpid(), slot.name, total, meta, skeleton)
        buffer = torch.empty(max(total, 1), dtype=torch.uint8)
        for (offset, _, _, nbytes), t in zip(meta, tensors, strict=True):
            if not nbytes:
                continue
            part = (torch.frombuffer(bytearray(b"".join(t)), dtype=torch.uint8)
                    if isinstance(t, list) else t.contiguous().reshape(-1).view(torch.uint8))
            buffer[offset : offset + nbytes].copy_(part)
        return _unpack, (buffer, meta, skeleton)


_HEADER = 64  # bytes before a shared buffer's batch; its first says whether it is in use
_SLOTS = 4  # shared buffers a worker reuses
# Larger batches take a segment of their own. Decoded 128 px JPEG batches (12.5 MB) went
# 7.6-13.8k -> 17-18.6k img/s through the ring when it took 64 MiB instead of 8 (fresh
# segments are zeroed and faulted in on both sides, twice per batch).
_RING_LARGEST = 64 << 20


class _Ring:
    """A DataLoader worker's shared-memory buffers, reused batch after batch. A batch is
    written into a free one; the main process hands the batch over as tensors viewing it (no
    copy) and marks the buffer free again once nothing views it. Torch would make (and hand
    over by a socket) a new shared segment per batch, which cost more than reading small
    records. With none free (the main process holds more batches than there are buffers), a
    batch goes torch's way. A buffer's name is removed once the main process has mapped it
    (it came back free), so nothing is left behind however the processes end."""

    def __init__(self) -> None:
        from multiprocessing import util

        self._slots: list[Any] = []
        self._named: set[int] = set()  # buffers whose names the main process may still need
        util.Finalize(self, self.close, exitpriority=10)  # runs as the worker exits

    def take(self, size: int) -> Any:
        """A free buffer holding at least ``size`` bytes after its header, marked in use."""
        need = _HEADER + max(size, 1)
        for i, slot in enumerate(self._slots):
            if slot.buf[0] != 0:
                continue
            if i in self._named:  # came back: the main process has it mapped
                self._named.discard(i)
                slot.unlink()
            if slot.size < need:  # too small: a larger one in its place
                slot.close()
                self._slots[i] = self._new(i, need + need // 4)
            self._slots[i].buf[0] = 1
            return self._slots[i]
        if len(self._slots) < _SLOTS:
            self._slots.append(None)
            fresh = self._new(len(self._slots) - 1, max(need + need // 4, 1 << 20))
            fresh.buf[0] = 1
            return fresh
        return None

    def _new(self, i: int, size: int) -> Any:
        from multiprocessing.shared_memory import SharedMemory

        # Named after this project and the process, so leaks are told from other programs'.
        name = f"{SHARED_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        slot = self._slots[i] = SharedMemory(create=True, size=size, name=name)
        self._named.add(i)
        return slot

    def close(self) -> None:
        for i, slot in enumerate(self._slots):
            slot.close()
            if i in self._named:
                slot.unlink()
        self._slots.clear()
        self._named.clear()


_RINGS: dict[int, _Ring] = {}


def _ring() -> _Ring:
    """This process's ring (a forked worker makes its own)."""
    found = _RINGS.get(os.getpid())
    if found is None:
        _RINGS.clear()
        found = _RINGS[os.getpid()] = _Ring()
    return found


_ATTACHED: dict[str, tuple[int, Any]] = {}  # main process: workers' buffers, mapped once


class _Mapped:
    """A worker's shared buffer, mapped in the main process without telling the resource
    tracker: the worker that made it registered it and unregisters it when it removes the
    name. (``SharedMemory(name=...)`` registers it again before Python 3.13; unregistering
    that here too made a tracker the processes share print a KeyError from the second epoch
    on.)"""

    def __init__(self, name: str) -> None:
        try:
            import _posixshmem  # type: ignore[import-not-found]
        except ImportError:  # Windows: no resource tracker for shared memory
            from multiprocessing.shared_memory import SharedMemory

            shared = SharedMemory(name=name)
            assert shared.buf is not None
            self._shared: Any = shared
            self.buf = shared.buf
            return
        import mmap

        fd = _posixshmem.shm_open("/" + name.lstrip("/"), os.O_RDWR, mode=0o600)
        try:
            self._shared = mmap.mmap(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        self.buf = memoryview(self._shared)

    closed = False

    def close(self) -> None:
        """Unmap it, unless batches still view it (then it goes with the last of them)."""
        self.closed = True
        with contextlib.suppress(BufferError):  # views exported: the mmap outlives us
            self.buf.release()
            self._shared.close()


def _unpack_shared(pid: int, name: str, total: int,
                   meta: list[tuple[int, Any, tuple[int, ...], int]], skeleton: Any) -> Any:
    """A batch viewing worker ``pid``'s shared buffer ``name``, not copied: the buffer goes
    back to the worker once nothing views it (every tensor of the batch, and every view of
    them, gone)."""
    found = _ATTACHED.get(name)
    if found is None:
        for key, (owner, _) in list(_ATTACHED.items()):  # buffers of workers gone
            if not _alive(owner):
                _ATTACHED.pop(key)[1].close()
        found = _ATTACHED[name] = (pid, _Mapped(name))
    slot: Any = found[1]
    array = np.frombuffer(slot.buf, np.uint8, max(total, 1), _HEADER)
    # torch keeps ``array`` while any tensor shares its storage; then the buffer is free.
    weakref.finalize(array, _free, slot)
    return _unpack(torch.from_numpy(array), meta, skeleton)


def _free(slot: _Mapped) -> None:
    """Hand a worker's shared buffer back (its first byte says it is in use)."""
    if not slot.closed:
        slot.buf[0] = 0


def _strip(value: Any, tensors: list[Any]) -> Any:
    """``value`` with each tensor replaced by its :class:`_Slot` (tensors appended)."""
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return _Slot(len(tensors) - 1)
    if isinstance(value, dict):
        return {k: _strip(v, tensors) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(v, bytes) for v in value):  # e.g. encoded images
            tensors.append(value)
            return _Slot(len(tensors) - 1)
        return [_strip(v, tensors) for v in value]
    return value


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _unpack(buffer: Any, meta: list[tuple[int, Any, tuple[int, ...], int]],
            skeleton: Any) -> Any:
    """A packed batch back as a dict of tensors (views of ``buffer``)."""
    views = [_bytes_list(buffer[offset : offset + nbytes], shape) if dtype is None
             else buffer[offset : offset + nbytes].view(dtype).reshape(shape)
             for offset, dtype, shape, nbytes in meta]

    return _filled(skeleton, views)


def _filled(value: Any, views: list[Any]) -> Any:
    """``value`` with each :class:`_Slot` replaced by its view. (Not a closure: a recursive
    one is a reference cycle, which kept every batch, and the shared buffer it views, alive
    until the garbage collector ran.)"""
    if isinstance(value, _Slot):
        return views[value]
    if isinstance(value, dict):
        return {k: _filled(v, views) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, views) for v in value]
    return value


def _bytes_list(data: Any, lengths: Sequence[int]) -> list[bytes]:
    joined = data.numpy().tobytes()
    out, at = [], 0
    for n in lengths:
        out.append(joined[at : at + n])
        at += n
    return out


def _resumed(dataset: TorchDataset, state: Mapping[str, Any] | None) -> TorchDataset:
    if state is not None:
        dataset.load_state_dict(dict(state))
    return dataset


class TorchDataset(IterableDataset[dict[str, Any]]):
    """Batches of one split as dicts of tensors, for ``DataLoader(ds, batch_size=None,
    num_workers=N)``; see :func:`load_torch_dataset`."""

    def __init__(self, loader: Loader | PKLoader | TripletLoader,
                 threads_per_worker: int | None = None
                 ) -> None:
        if isinstance(loader, Loader):  # opened once here: forked workers inherit them
            loader.records  # noqa: B018  (a worker opening them would read every index again)
        self.loader = loader
        self.threads_per_worker = threads_per_worker
        self._worker_state: dict[str, Any] | None = None
        # set_epoch reaches worker processes that keep their copy (persistent_workers).
        self._epoch = SharedEpoch()
        self._seen = 0  # the request (SharedEpoch generation) this copy has followed

    def __len__(self) -> int:
        return len(self.loader)

    @property
    def mix(self) -> MixPlan | None:
        """A :class:`~tfrecordkit.Mix`'s plan (its sources, per-source counts), if one is
        read."""
        return getattr(self.loader, "mix", None)

    def set_epoch(self, epoch: int) -> None:
        """Start ``epoch`` from its first step (call before each epoch when the DataLoader
        has worker processes, as with ``DistributedSampler``; persistent workers follow it
        too)."""
        self.loader.set_epoch(epoch)
        self._worker_state = None
        self._seen = self._epoch.ask(epoch)

    def _follow_request(self, worker: int, epoch: int, first: int,
                        saved: dict[str, Any] | None) -> tuple[int, int, dict[str, Any] | None]:
        """In a worker: the epoch ``set_epoch`` asked for since this copy last looked (a
        persistent worker's copy predates it), else its own position; worker 0 warns once
        when an epoch starts again with no request between."""
        generation, asked = self._epoch.asked()
        if generation != self._seen and asked is not None:
            self._seen = generation
            epoch, first, saved = asked, worker, None
        if worker == 0 and self._epoch.ran_before(self._seen, epoch):
            warnings.warn(
                f"DataLoader workers start epoch {epoch} again: the same order and crops as "
                "last time. The dataset in the main process does not see its workers' "
                "progress (its state_dict() stays at the start): call ds.set_epoch(n) "
                "before each epoch, or use torchdata's StatefulDataLoader and its "
                "state_dict()", RepeatedEpochWarning, stacklevel=2)
        return epoch, first, saved

    def __iter__(self) -> Iterator[dict[str, Any]]:
        loader = self.loader
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        loader.partition = loader.partition.with_worker(worker, workers)
        epoch, first = loader.epoch, loader.step + worker
        saved = self._worker_state
        if info is not None:
            epoch, first, saved = self._follow_request(worker, epoch, first, saved)
        if saved is not None:
            if (saved["worker"], saved["num_workers"]) != (worker, workers):
                raise StateError("num_workers", f"the state was saved by worker "
                                 f"{saved['worker']} of {saved['num_workers']}; iterating with "
                                 f"{workers} would not resume it (restore a StatefulDataLoader "
                                 f"with num_workers={saved['num_workers']}, or load the "
                                 "DataLoader's whole state_dict())")
            epoch, first = saved["epoch"], saved["step"]  # this worker's own next step
        self._worker_state = None
        steps = len(loader)
        from concurrent.futures import ThreadPoolExecutor

        threads = self.threads_per_worker or loader.pool_threads
        if workers > 1 and self.threads_per_worker is None:  # don't oversubscribe the cores
            threads = threads_per_worker(threads, workers)
        if info is not None:  # this worker's own copy: batches split for the threads it has
            loader.num_threads = threads
        with ThreadPoolExecutor(threads) as pool:
            for step, batch in loader.iter_steps(epoch, range(first, steps, workers), pool):
                tensors = to_tensors(batch)
                # A worker's batch crosses to the main process in one buffer, not many.
                tensors = _Packed(tensors) if info is not None else _Batch(tensors)
                self._record(epoch, step + 1, worker, workers)
                yield tensors
        self._record(epoch + 1, 0, worker, workers)

    def _record(self, epoch: int, step: int, worker: int, workers: int) -> None:
        """Note the position after a batch: the global one when this process builds every
        step, else what this worker builds next (StatefulDataLoader keeps one per worker)."""
        if workers == 1:
            self.loader.epoch, self.loader.step = epoch, step
        else:
            self._worker_state = {"epoch": epoch, "step": step - 1 + workers if step else worker,
                                  "worker": worker, "num_workers": workers}

    def state_dict(self) -> dict[str, Any]:
        """Where iteration is, as JSON (torchdata's ``Stateful`` protocol).

        In the process that iterates (``num_workers=0``, or inside a worker) this is exact.
        ``torchdata.stateful_dataloader.StatefulDataLoader`` collects it from every worker; its
        ``state_dict()`` can be given to :meth:`load_state_dict` of a new dataset to continue
        with any number of workers.

        Raises:
            StateError: asked in the main process of a plain ``DataLoader`` whose worker
                processes iterate this dataset (they prefetch: no process knows the step the
                training loop is at).
        """
        if get_worker_info() is None and self._worker_state is None and \
                self._epoch.workers_ran():
            raise StateError("num_workers", "this dataset is iterated by DataLoader worker "
                             "processes, so its state_dict() here would say step 0: use "
                             "torchdata's StatefulDataLoader and its state_dict(), or "
                             "ds.state_at(step) with the step your loop has reached")
        state = self.loader.state_dict()
        if self._worker_state is not None:
            state.update(self._worker_state)
        return state

    def state_at(self, step: int, epoch: int | None = None) -> dict[str, Any]:
        """The state after ``step`` steps of ``epoch`` (default: the current one), for a
        training loop that counts its steps itself (a plain ``DataLoader``'s workers
        prefetch, so no process knows the step the loop has reached)."""
        state = self.loader.state_dict()
        state["step"] = step
        if epoch is not None:
            state["epoch"] = epoch
        return dict(self.loader.check_state(state))

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` output, from one worker's state (as
        ``StatefulDataLoader`` hands them back), or from a whole ``StatefulDataLoader``
        ``state_dict()`` (then any number of workers may follow)."""
        if not isinstance(state, Mapping):
            raise StateError("", f"must be a dict (a state_dict() result); got "
                                 f"{type(state).__name__}")
        if "_snapshot" in state:  # a StatefulDataLoader's own state, with worker processes
            state = _position_of_loader(state)
        elif "fetcher_state" in state and "dataset_state" in state:  # ... without
            state = state["dataset_state"]
            if not isinstance(state, Mapping):
                raise StateError("dataset_state", "must be a dict")
        if "worker" in state or "num_workers" in state:
            # A worker's next step may lie past the end of the epoch: it has no steps left.
            workers = state_int(state, "num_workers", 1, 1 << 16)
            step = state_int(state, "step", 0, len(self.loader) + workers)
            state = {**state, "step": min(step, len(self.loader))}
        state = self.loader.check_state(state)
        if "worker" in state:
            self._worker_state = {k: state[k] for k in ("epoch", "step", "worker",
                                                        "num_workers")}
        else:
            self.loader.load_state_dict(state)
            self._worker_state = None


def _position_of_loader(loader_state: Mapping[str, Any]) -> dict[str, Any]:
    """The global position in a ``StatefulDataLoader`` state: workers take steps in turn,
    so every step before the smallest "next step" of any worker has been consumed."""
    workers = loader_state["_snapshot"].get("_worker_snapshots") or {}
    nexts = []
    for snapshot in workers.values():
        state = snapshot.get("dataset_state")
        if not state:
            continue
        if not isinstance(state, Mapping):
            raise StateError("dataset_state", "must be a dict")
        # A worker that has yielded nothing still holds the global start it was given.
        offset = 0 if "worker" in state else state_int(snapshot, "worker_id", 0, 1 << 16)
        step = state_int(state, "step", 0, MAX_EPOCH) + offset
        nexts.append((state_int(state, "epoch", 0, MAX_EPOCH), step, state))
    if not nexts:
        raise StateError("_snapshot", "this StatefulDataLoader state holds no tfrecordkit "
                                      "dataset state")
    epoch, step, state = min(nexts, key=lambda n: (n[0], n[1]))
    position = {k: v for k, v in state.items() if k not in ("worker", "num_workers")}
    position.update(epoch=epoch, step=step)
    return position


@refuse_moved("load_torch_dataset")
def load_torch_dataset(path: PathArg, split: SplitArg = "train", *,
                       batch_size: int | None = None, sampling: Sampling | None = None,
                       seed: int | None = 0, image_size: int | tuple[int, int] | None = None,
                       options: DecodeOptions | None = None,
                       partition: Partition | None = None,
                       state: Mapping[str, Any] | None = None,
                       read: ReadOptions | None = None) -> TorchDataset | TorchExamples:
    """Batches of a split as dicts of tensors: use ``DataLoader(ds, batch_size=None,
    num_workers=N)`` (or torchdata's ``StatefulDataLoader``).

    The arguments are :func:`~tfrecordkit.load_numpy_dataset`'s (every sampling mode: in
    order, shuffled, :class:`~tfrecordkit.PK`, :class:`~tfrecordkit.Triplets`), and so are the
    order, the values and the state. ``partition`` defaults to ``torch.distributed``'s ranks
    when it is initialised (:meth:`Partition.from_torch`). DataLoader worker ``j`` of ``N``
    builds steps ``j, j+N, ...``, so the DataLoader yields the steps in order; every rank
    yields ``len(ds)`` batches. Images are uint8 ``[B, H, W, C]`` tensors. An ``augment`` in
    ``options`` runs per record on NumPy values (picklable, e.g. a module-level function, for
    workers).
    """
    loader = open_loader(path, split_text(split), batch_size=batch_size, sampling=sampling,
                         seed=seed_of(seed, state), image_size=image_size, options=options,
                         partition=Partition.given(partition, Partition.from_torch),
                         read=read)
    if isinstance(loader, Examples):
        examples = TorchExamples(loader)
        if state is not None:
            examples.load_state_dict(dict(state))
        return examples
    return _resumed(TorchDataset(loader, (read or ReadOptions()).num_threads), state)


class TorchExamples(IterableDataset[dict[str, Any]]):
    """Single examples of one split as dicts of tensors (``batch_size=None``), in the order
    every loader reads them, for a DataLoader without worker processes (a DataLoader batches
    each worker's own examples, so workers would mix the order up); ``state_dict()`` counts
    the examples given."""

    def __init__(self, examples: Examples) -> None:
        self.examples = examples

    def __len__(self) -> int:
        return len(self.examples)

    @property
    def mix(self) -> MixPlan | None:
        """A :class:`~tfrecordkit.Mix`'s plan, if one is read."""
        return self.examples.mix

    def set_epoch(self, epoch: int) -> None:
        """Start ``epoch`` from its first example on the next iteration."""
        self.examples.set_epoch(epoch)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if get_worker_info() is not None:
            raise OptionError("single examples (batch_size=None) come in order from one "
                              "process: give the DataLoader num_workers=0, or give "
                              "load_torch_dataset a batch_size (workers then build whole "
                              "batches in turn)")
        for example in self.examples:
            yield to_tensors(example)

    def state_dict(self) -> dict[str, Any]:
        """Where iteration is, as JSON."""
        return self.examples.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` output."""
        self.examples.load_state_dict(state)
