"""Which part of the work one process does: its rank's share of every global batch, and, for
data-loading workers inside a rank, which steps. Built at the edge from what the framework
says (TF's InputContext, torch's worker info and process group, ``jax.process_index``)."""

from __future__ import annotations

import numbers
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tfrecordkit.errors import OptionError

__all__ = ["Partition"]


@dataclass(frozen=True)
class Partition:
    """Which share of the data this process reads: every reader's ``partition=``.

    Rank ``rank`` of ``world_size`` reads records ``[rank * B/W, (rank + 1) * B/W)`` of each
    global batch of ``B``; worker ``worker`` of that rank's ``num_workers`` loading workers
    builds steps ``start + worker``, ``start + worker + num_workers``, ... so that taking the
    workers' batches in turn (as torch's DataLoader does) gives the steps in order."""

    rank: int = 0
    world_size: int = 1
    worker: int = 0
    num_workers: int = 1

    def __post_init__(self) -> None:
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise OptionError(f"rank must be in 0..world_size-1; got rank={self.rank}, "
                             f"world_size={self.world_size}")
        if self.num_workers < 1 or not 0 <= self.worker < self.num_workers:
            raise OptionError(f"worker must be in 0..num_workers-1; got worker={self.worker}, "
                             f"num_workers={self.num_workers}")

    def per_rank(self, batch_size: int) -> int:
        """This rank's share of a global batch of ``batch_size`` (what every reader's
        ``batch_size`` is).

        Raises:
            OptionError: ``batch_size`` is not positive or does not divide evenly between
                the ranks.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
            raise OptionError(f"batch_size must be a whole number (an int); got "
                              f"{type(batch_size).__name__} {batch_size!r:.40}")
        if batch_size < 1:
            raise OptionError(f"batch_size must be positive; got {batch_size!r}")
        if batch_size % self.world_size:
            raise OptionError(f"the global batch_size {batch_size} must divide evenly between "
                              f"{self.world_size} ranks")
        return int(batch_size) // self.world_size

    def steps(self, start: int, stop: int) -> range:
        """The global steps in ``[start, stop)`` this worker builds."""
        return range(start + self.worker, stop, self.num_workers)

    def with_worker(self, worker: int, num_workers: int) -> Partition:
        """The same rank, as loading worker ``worker`` of ``num_workers``."""
        return Partition(self.rank, self.world_size, worker, num_workers)

    @classmethod
    def from_input_context(cls, context: Any) -> Partition:
        """From a ``tf.distribute.InputContext``: one input pipeline per rank."""
        return cls(int(context.input_pipeline_id), int(context.num_input_pipelines))

    @classmethod
    def from_torch(cls) -> Partition:
        """From ``torch.distributed``'s process group when it is initialised, else one rank."""
        # A process group exists only once torch.distributed was imported: no import here.
        dist = sys.modules.get("torch.distributed")
        if dist is not None and dist.is_available() and dist.is_initialized():
            return cls(dist.get_rank(), dist.get_world_size())
        return cls()

    @classmethod
    def given(cls, partition: Any, default: Callable[[], Partition] | None = None) -> Partition:
        """``partition`` checked to be one (None: ``default()``, else one rank).

        Raises:
            OptionError: it is something else (e.g. an ``InputContext`` given as it is).
        """
        if partition is None:
            return default() if default is not None else cls()
        if not isinstance(partition, Partition):
            raise OptionError(f"partition= takes a tfrecordkit.Partition (Partition(rank, "
                              "world_size), Partition.from_torch() or "
                              "Partition.from_input_context(ctx)); got "
                              f"{type(partition).__name__}")
        return partition
