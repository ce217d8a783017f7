"""A DataLoader given a batch_size over datasets that already batch is refused on its first
batch with the fix (batch_size=None), in the main process and in workers, for every batching
torch dataset; batch_size=None and copies of batches work as before."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import tfrecordkit as tk

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("collate") / "ds"
    schema = tk.Schema({"x": tk.Tensor((3,), "float32"), "label": tk.ClassLabel(["a", "b"])})
    rows = [{"x": np.full(3, i, np.float32), "label": i % 2} for i in range(64)]
    tk.write_dataset(rows, path, schema, shards=tk.ShardOptions(layout="per_class"),
                     progress=False)
    return path


def _datasets(path):
    return {
        "plain": tk.load_torch_dataset(path, batch_size=8),
        "pk": tk.load_torch_dataset(path, sampling=tk.PK(2, 2)),
        "triplets": tk.load_torch_dataset(path, batch_size=4, sampling=tk.Triplets()),
    }


# Every kind yields the same batch class, refused by one collate hook: one case in a worker
# (a DataLoader whose worker raised waits 5 s a worker at shutdown, torch's status interval).
@pytest.mark.parametrize(("kind", "workers"), [("plain", 0), ("pk", 0), ("triplets", 0),
                                               ("plain", 1)])
def test_a_dataloader_batch_size_is_refused_naming_the_fix(dataset, kind, workers):
    ds = _datasets(dataset)[kind]
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=workers)
    with pytest.raises(Exception, match=r"batch_size=None") as caught:
        next(iter(loader))
    if workers == 0:
        assert isinstance(caught.value, tk.OptionError)


@pytest.mark.slow  # ~5 s: DataLoader workers start
def test_batch_size_none_and_copies_still_work(dataset):
    ds = _datasets(dataset)["plain"]
    batches = list(torch.utils.data.DataLoader(ds, batch_size=None))
    assert batches[0]["x"].shape == (8, 3)
    assert copy.copy(batches[0])["x"] is batches[0]["x"]
    assert dict(batches[0]).keys() == batches[0].keys()
