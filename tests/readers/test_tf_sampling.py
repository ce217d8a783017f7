"""P×K and triplet datasets in tf.data, and the batch-hard triplet loss."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

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
                  layout="per_class")
    return path


def test_pk_batches_in_tf_data(dataset):
    ds = tf_data.load_tf_pk_dataset(dataset, classes_per_batch=4, examples_per_class=3,
                                    seed=2, repeat=True)
    for batch in ds.take(300):
        labels = batch["label"].numpy()
        assert (batch["x"].numpy() % 16 == labels).all()
        assert len(set(labels.tolist())) == 4
        assert all((labels[i * 3 : i * 3 + 3] == labels[i * 3]).all() for i in range(4))
        assert len(set(batch["x"].numpy().tolist())) == 12
    once = tf_data.load_tf_pk_dataset(dataset, classes_per_batch=4, examples_per_class=3)
    assert len(once) == 4 and len(list(once)) == 4


def test_pk_workers_with_input_context_get_disjoint_classes(dataset):
    steps = []
    for worker in range(2):
        context = tf.distribute.InputContext(2, worker, 2)
        ds = tf_data.load_tf_pk_dataset(dataset, classes_per_batch=4, examples_per_class=2,
                                        seed=5, input_context=context)
        steps.append([set(b["label"].numpy().tolist()) for b in ds])
    assert len(steps[0]) == len(steps[1]) == 2
    covered = set()
    for mine, theirs in zip(*steps, strict=True):
        assert not mine & theirs
        covered |= mine | theirs
    assert covered == set(range(16))


def test_triplet_dataset(dataset):
    ds = tf_data.load_tf_triplet_dataset(dataset, batch_size=8, seed=0)
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
