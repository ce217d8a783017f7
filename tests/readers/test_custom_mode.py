"""A sampling mode defined here and nowhere else (records in reverse stored order), read by the
NumPy, PyTorch and tf.data loaders with no edit to the library: a mode carries its own
batch-size rule, NumPy loader and tf.data builder (``tk.readers.SamplingMode``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import MIXED_SCHEMA, mixed_row
from tfrecordkit.readers import SamplingMode
from tfrecordkit.readers.numpy_data import Loader


@dataclass(frozen=True)
class Reversed:
    """Every record once per epoch, last stored first."""

    drop_last: bool = False
    numpy_loader: ClassVar[str] = "tests.readers.test_custom_mode:reversed_loader"
    tf_dataset: ClassVar[str] = "tfrecordkit.readers.tf_data:steps_dataset"

    def batch_size_for(self, batch_size: int | None) -> int | None:
        if batch_size is None:
            raise tk.OptionError("Reversed() needs batch_size")
        return batch_size


class ReversedLoader(Loader):
    """The stored order's loader, each step's records counted from the end."""

    def step_ids(self, epoch: int, step: int) -> tuple[np.ndarray, np.ndarray]:
        ids, valid = super().step_ids(epoch, step)
        return self.epoch_records - 1 - ids, valid


def reversed_loader(sampling: Reversed, path: Any, split: str, *, batch_size: int,
                    seed: int, options: Any, partition: Any, read: Any) -> ReversedLoader:
    return ReversedLoader(path, split, batch_size=batch_size, sampling=tk.InOrder(
        drop_last=sampling.drop_last), seed=seed, partition=partition, options=options,
        read=read)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("custom") / "ds"
    rows = [mixed_row(i, np.random.default_rng(i)) for i in range(37)]
    tk.write_dataset(rows, path, MIXED_SCHEMA, shards=tk.ShardOptions(num_shards=3,
                                                                       shuffle=False),
                     progress=False)
    return path


def _ids(batches) -> list[int]:
    return [int(i) for b in batches for i in np.asarray(b["__id"]).reshape(-1)]


def test_a_mode_defined_in_a_test_is_read_by_every_loader(dataset):
    assert isinstance(Reversed(), SamplingMode)
    options = tk.DecodeOptions(features=("label",))
    kw = {"batch_size": 8, "sampling": Reversed(), "options": options, "seed": 0}
    numpy = list(tk.load_numpy_dataset(dataset, **kw))
    assert _ids(numpy) == list(range(36, -1, -1))
    stored = [int(v) for b in tk.load_numpy_dataset(dataset, batch_size=8,
                                                    sampling=tk.InOrder(), options=options)
              for v in b["label"]]
    assert [int(v) for b in numpy for v in b["label"]] == stored[::-1]
    torch = pytest.importorskip("torch")
    from tfrecordkit.readers.torch_data import load_torch_dataset

    loader = torch.utils.data.DataLoader(load_torch_dataset(dataset, **kw), batch_size=None)
    assert _ids(list(loader)) == _ids(numpy)
    with pytest.raises(tk.OptionError, match="Reversed\\(\\) needs batch_size"):
        tk.load_numpy_dataset(dataset, sampling=Reversed())


@pytest.mark.integration
def test_tf_data_reads_the_mode_through_its_own_builder(dataset):
    pytest.importorskip("tensorflow")
    kw = {"batch_size": 8, "sampling": Reversed(), "seed": 0,
          "options": tk.DecodeOptions(features=("label",))}
    want = list(tk.load_numpy_dataset(dataset, **kw))
    got = list(tk.load_tf_dataset(dataset, **kw))
    assert _ids(got) == _ids(want)
    for a, b in zip(want, got, strict=True):
        assert (np.asarray(a["label"]) == b["label"].numpy()).all()
