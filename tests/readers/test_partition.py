"""One object says which share of the data a process reads, in every reader: built from
explicit ranks, torch.distributed or a tf.distribute InputContext; anything else is refused
naming what to give."""

from __future__ import annotations

import inspect

import pytest

import tfrecordkit as tk
from tfrecordkit.errors import OptionError

READERS = ["load_numpy_dataset", "load_torch_dataset", "load_tf_dataset"]


@pytest.mark.integration  # the tf.data readers import TensorFlow
@pytest.mark.parametrize("name", READERS)
def test_every_reader_takes_a_partition_and_a_state_and_no_other_spelling(name):
    if name.startswith("load_torch"):
        pytest.importorskip("torch")
    if name.startswith("load_tf"):
        pytest.importorskip("tensorflow")
    parameters = inspect.signature(getattr(tk, name)).parameters
    assert "partition" in parameters and "state" in parameters
    assert not {"rank", "world_size", "input_context", "start"} & set(parameters)


def test_explicit_ranks_are_checked():
    assert tk.Partition(1, 4).rank == 1
    with pytest.raises(OptionError, match="rank must be in"):
        tk.Partition(4, 4)


def test_something_other_than_a_partition_is_refused_with_the_fix():
    class InputContext:  # what tf.distribute hands a dataset_fn, given as it is
        input_pipeline_id, num_input_pipelines = 0, 2

    with pytest.raises(OptionError, match="from_input_context"):
        tk.Partition.given(InputContext())
    assert tk.Partition.from_input_context(InputContext()) == tk.Partition(0, 2)
    assert tk.Partition.given(None) == tk.Partition()


def test_torch_without_a_process_group_is_one_rank():
    pytest.importorskip("torch")
    assert tk.Partition.from_torch() == tk.Partition()
