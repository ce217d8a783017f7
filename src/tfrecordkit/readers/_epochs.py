"""How every TF-free loader walks its epochs: a pass is the rest of the current epoch,
``batches(n)`` runs ``n`` steps across epochs, and neither reads or decodes a step past the
last one asked for. A loader brings ``iter_steps`` (its steps of an epoch, read ahead on a
thread pool), ``len()`` and its thread count."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import Executor
from typing import Any

from tfrecordkit.errors import OptionError
from tfrecordkit.readers._partition import Partition

__all__ = ["Epochs"]


class Epochs:
    """The epoch walk every TF-free loader shares (see the module)."""

    epoch: int
    step: int
    partition: Partition

    def __len__(self) -> int:
        raise NotImplementedError

    @property
    def pool_threads(self) -> int:
        raise NotImplementedError

    def iter_steps(self, epoch: int, steps: Iterable[int], pool: Executor
                   ) -> Iterator[tuple[int, dict[str, Any]]]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[dict[str, Any]]:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(self.pool_threads) as pool:
            yield from self._run(None, pool)

    def batches(self, steps: int | None = None) -> Iterator[dict[str, Any]]:
        """``steps`` batches (None: endless) from where the loader stands, across epochs;
        nothing is read or decoded past the last of them."""
        from concurrent.futures import ThreadPoolExecutor

        if steps is not None and steps < 0:
            raise OptionError(f"steps must be >= 0 or None; got {steps}")
        count = 0
        with ThreadPoolExecutor(self.pool_threads) as pool:  # one for every epoch
            while steps is None or count < steps:
                before = count
                for batch in self._run(None if steps is None else steps - count, pool):
                    count += 1
                    yield batch
                if count == before:  # this worker has no steps in an epoch: none will come
                    return

    def _run(self, limit: int | None, pool: Executor) -> Iterator[dict[str, Any]]:
        """The rest of this epoch (at most ``limit`` steps); a whole rest moves on to the
        next epoch."""
        todo = list(self.partition.steps(self.step, len(self)))
        whole = limit is None or limit >= len(todo)
        for step, batch in self.iter_steps(self.epoch, todo if whole else todo[:limit], pool):
            self.step = step + 1
            yield batch
        if whole:
            self.epoch, self.step = self.epoch + 1, 0
