"""``shuffle`` means the same in every reader: ``True`` is the reader's own default shuffle
(the NumPy and PyTorch loaders' ``"block"``; tf.data's file and buffer shuffle, which takes
``"block"`` too), ``False`` the stored order; what a reader cannot do is refused naming the
reader that can."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit.errors import OptionError


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("words") / "ds"
    tk.write_dataset(({"n": i} for i in range(200)), path, tk.Schema({"n": tk.Scalar("int64")}),
                     shards=tk.ShardOptions(num_shards=4), progress=False)
    return path


def _order(loader) -> list[int]:
    return np.concatenate([b["n"] for b in loader]).tolist()


def test_true_is_the_numpy_loaders_default_shuffle(dataset):
    default = _order(tk.load_numpy_dataset(dataset, batch_size=16, seed=3))
    assert _order(tk.load_numpy_dataset(dataset, batch_size=16, seed=3, shuffle=True)) == default
    assert default != sorted(default) and sorted(default) == list(range(200))
    stored = _order(tk.load_numpy_dataset(dataset, batch_size=16, shuffle=False))
    assert sorted(stored) == list(range(200))


def test_a_buffer_size_is_refused_by_the_numpy_loader_naming_tf_data(dataset):
    with pytest.raises(OptionError, match=r"tf\.data"):
        tk.load_numpy_dataset(dataset, batch_size=16, shuffle=1000)


@pytest.mark.integration
def test_tf_data_takes_block_and_refuses_global(dataset):
    pytest.importorskip("tensorflow")
    block = [int(v) for b in tk.load_tf_dataset(dataset, batch_size=16, seed=3, shuffle="block")
             for v in b["n"].numpy()]
    default = [int(v) for b in tk.load_tf_dataset(dataset, batch_size=16, seed=3)
               for v in b["n"].numpy()]
    assert block == default and sorted(block) == list(range(200))
    with pytest.raises(OptionError, match="NumPy and PyTorch"):
        tk.load_tf_dataset(dataset, batch_size=16, shuffle="global")
