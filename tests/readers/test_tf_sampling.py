"""P×K and triplet datasets in tf.data, and the batch-hard triplet loss."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit import ShardOptions
from tfrecordkit.convert import write_dataset
from tfrecordkit.schema import ClassLabel, Scalar, Schema

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
tf_data = pytest.importorskip("tfrecordkit.readers.tf_data")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("tfpk") / "ds"
    schema = Schema({"x": Scalar("int64"), "label": ClassLabel([f"c{i}" for i in range(16)])})
    write_dataset([{"x": i, "label": i % 16} for i in range(16 * 5)], path, schema,
                  shards=ShardOptions(layout="per_class"))
    return path


def test_pk_batches_in_tf_data(dataset):
    ds = tf_data.load_tf_dataset(dataset, sampling=tk.PK(4, 3), seed=2, repeat=True)
    for batch in ds.take(300):
        labels = batch["label"].numpy()
        assert (batch["x"].numpy() % 16 == labels).all()
        assert len(set(labels.tolist())) == 4
        assert all((labels[i * 3 : i * 3 + 3] == labels[i * 3]).all() for i in range(4))
        assert len(set(batch["x"].numpy().tolist())) == 12
    once = tf_data.load_tf_dataset(dataset, sampling=tk.PK(4, 3))
    assert len(once) == 4 and len(list(once)) == 4


def test_pk_workers_with_input_context_get_disjoint_classes(dataset):
    steps = []
    for worker in range(2):
        context = tf.distribute.InputContext(2, worker, 2)
        ds = tf_data.load_tf_dataset(dataset, sampling=tk.PK(4, 2), seed=5,
                                     partition=tk.Partition.from_input_context(context))
        steps.append([set(b["label"].numpy().tolist()) for b in ds])
    assert len(steps[0]) == len(steps[1]) == 2
    covered = set()
    for mine, theirs in zip(*steps, strict=True):
        assert not mine & theirs
        covered |= mine | theirs
    assert covered == set(range(16))


def test_triplet_dataset(dataset):
    ds = tf_data.load_tf_dataset(dataset, batch_size=8, sampling=tk.Triplets(), seed=0)
    anchors = []
    for batch in ds:
        a, p, n = (batch[r] for r in ("anchor", "positive", "negative"))
        assert (a["label"].numpy() == p["label"].numpy()).all()
        assert (a["x"].numpy() != p["x"].numpy()).all()
        assert (a["label"].numpy() != n["label"].numpy()).all()
        anchors += a["x"].numpy().tolist()
    assert sorted(anchors) == list(range(80))


def test_batch_hard_loss_is_nan_safe_with_finite_gradients():
    loss = tf_data.batch_hard_triplet_loss(margin=0.5)
    for labels, embeddings in [
        ([0, 1, 2, 3], tf.random.normal([4, 3])),         # no positive pair at all
        ([0, 0, 1, 1], tf.zeros([4, 3])),                  # all embeddings identical
        ([0, 0, 0, 0], tf.random.normal([4, 3])),          # no negative
    ]:
        variable = tf.Variable(embeddings)
        with tf.GradientTape() as tape:
            value = loss(tf.constant(labels), variable)
        grad = tape.gradient(value, variable)
        assert np.isfinite(value.numpy())
        assert grad is None or np.isfinite(grad.numpy()).all()
    separated = tf.constant([[0.0, 0], [0, 0.1], [5, 5], [5, 5.1]])
    assert float(loss(tf.constant([0, 0, 1, 1]), separated)) == 0.0
    mixed = tf.constant([[0.0, 0], [5, 5], [0, 0.1], [5, 5.1]])
    assert float(loss(tf.constant([0, 0, 1, 1]), mixed)) > 5


@pytest.mark.slow
def test_triplet_example_trains(tmp_path):
    sys.path.insert(0, str(Path(__file__).parents[2] / "examples"))
    try:
        from triplet_digits import main
    finally:
        sys.path.pop(0)
    losses = main(str(tmp_path), epochs=4)
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]


def _labels(batches):
    return [b["label"].numpy().tolist() for b in batches]


def test_pk_iterators_checkpoint_and_resume_exactly(dataset, tmp_path):
    """The tutorial's failure: tf.train.Checkpoint of a P×K iterator raised 'PyFunc is
    stateful'. Now it saves and restores, and a JSON state resumes a new pipeline."""
    ds = tf_data.load_tf_dataset(dataset, sampling=tk.PK(4, 3), seed=7, repeat=True)
    reference = _labels(ds.take(12))
    iterator = iter(ds)
    first = [next(iterator)["label"].numpy().tolist() for _ in range(5)]
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    saved = checkpoint.save(str(tmp_path / "ckpt"))
    after = [next(iterator)["label"].numpy().tolist() for _ in range(3)]
    checkpoint.restore(saved)
    again = [next(iterator)["label"].numpy().tolist() for _ in range(3)]
    assert first + after == reference[:8] and again == after
    state = ds.state_at(5)
    assert state["epoch"] * ds.steps_per_epoch + state["step"] == 5
    resumed = tf_data.load_tf_dataset(dataset, sampling=tk.PK(4, 3), seed=7, repeat=True,
                                      state=state)
    assert _labels(resumed.take(7)) == reference[5:12]
    with pytest.raises(ValueError, match="seed"):
        tf_data.load_tf_dataset(dataset, sampling=tk.PK(4, 3), seed=8, state=state)


def test_each_iteration_of_a_finite_pk_dataset_is_the_next_epoch(dataset):
    """Iterating again (as Keras ``fit(epochs=...)`` does) gives the next epoch's batches, as
    the repeated dataset does; resumed mid-epoch, the first iteration is the rest of it."""
    ds = tf_data.load_tf_dataset(dataset, sampling=tk.PK(4, 3), seed=1)
    steps = ds.steps_per_epoch
    endless = _labels(tf_data.load_tf_dataset(dataset, sampling=tk.PK(4, 3), seed=1,
                                              repeat=True).take(3 * steps))
    assert len(ds) == steps
    assert _labels(ds) + _labels(ds) == endless[: 2 * steps]
    assert _labels(ds) != _labels(ds)  # epochs 2 and 3 differ
    resumed = tf_data.load_tf_dataset(dataset, sampling=tk.PK(4, 3), seed=1, state=steps + 1)
    assert _labels(resumed) + _labels(resumed) == endless[steps + 1 :]


def test_triplets_have_the_other_loaders_options_and_resume(dataset, tmp_path):
    def add_one(example):
        return {**example, "x": example["x"] + 1000}

    ds = tf_data.load_tf_dataset(dataset, batch_size=8, sampling=tk.Triplets(), seed=3,
                                 options=tk.DecodeOptions(augment=add_one))
    batch = next(iter(ds))
    assert (batch["anchor"]["x"].numpy() >= 1000).all()
    (anchor, positive, negative), label = next(iter(tf_data.load_tf_dataset(dataset, batch_size=8,
                                                                            sampling=tk.Triplets(),
                                                                            seed=3,
                                                                            options=tk.DecodeOptions(as_supervised=True))))
    assert anchor.shape == positive.shape == negative.shape == (8,)
    assert (anchor.numpy() % 16 == label.numpy()).all()
    assert (positive.numpy() % 16 == label.numpy()).all()
    assert (negative.numpy() % 16 != label.numpy()).all()
    endless = tf_data.load_tf_dataset(dataset, batch_size=8, sampling=tk.Triplets(), seed=3,
                                      repeat=True)
    reference = [b["anchor"]["x"].numpy().tolist() for b in endless.take(15)]
    assert len({x for b in reference[:10] for x in b}) == 80  # epoch 0: every anchor once
    iterator = iter(endless)
    for _ in range(4):
        next(iterator)
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    saved = checkpoint.save(str(tmp_path / "ckpt"))
    after = [next(iterator)["anchor"]["x"].numpy().tolist() for _ in range(8)]
    checkpoint.restore(saved)
    assert [next(iterator)["anchor"]["x"].numpy().tolist() for _ in range(8)] == after
    assert after == reference[4:12]
    resumed = tf_data.load_tf_dataset(dataset, batch_size=8, sampling=tk.Triplets(), seed=3,
                                      repeat=True, state=endless.state_at(4))
    assert [b["anchor"]["x"].numpy().tolist() for b in resumed.take(3)] == reference[4:7]


@pytest.mark.parametrize(("batch", "world"), [(8, 1), (6, 1), (6, 2)])
def test_a_triplet_step_is_a_batch_in_tf_data_as_in_numpy(dataset, batch, world):
    """One meaning of a step: tf.data's steps_per_epoch, its batches (the last one the rest
    of the epoch, never taking the next epoch's triplets), an integer state, state_at and a
    NumPy loader's state all count batches, as the NumPy loader does."""
    for rank in range(world):
        partition = tk.Partition(rank, world)
        numpy_loader = tk.load_numpy_dataset(dataset, batch_size=batch, sampling=tk.Triplets(),
                                             seed=3, partition=partition)
        steps = len(numpy_loader)
        want = [b["anchor"]["x"].tolist() for b in numpy_loader]
        want += [b["anchor"]["x"].tolist() for b in numpy_loader]  # epoch 1
        ds = tf_data.load_tf_dataset(dataset, batch_size=batch, sampling=tk.Triplets(),
                                     seed=3, partition=partition)
        assert ds.steps_per_epoch == steps
        got = [b["anchor"]["x"].numpy().tolist() for b in ds]
        got += [b["anchor"]["x"].numpy().tolist() for b in ds]
        assert got == want
        endless = tf_data.load_tf_dataset(dataset, batch_size=batch, sampling=tk.Triplets(),
                                          seed=3, partition=partition, repeat=True)
        assert [b["anchor"]["x"].numpy().tolist() for b in endless.take(2 * steps)] == want
        fresh = tk.load_numpy_dataset(dataset, batch_size=batch, sampling=tk.Triplets(),
                                      seed=3, partition=partition)
        it = iter(fresh)
        for _ in range(3):
            next(it)
        for state in (3, ds.state_at(3), fresh.state_dict()):
            resumed = tf_data.load_tf_dataset(dataset, batch_size=batch,
                                              sampling=tk.Triplets(), seed=3,
                                              partition=partition, state=state)
            assert [b["anchor"]["x"].numpy().tolist() for b in resumed] == want[3:steps]
