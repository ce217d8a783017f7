"""P×K and triplet sampling, tested on invariants over many batches."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from scipy.stats import chisquare

import tfrecordkit as tk
from tfrecordkit import DatasetError, ShardOptions
from tfrecordkit.convert import write_dataset
from tfrecordkit.sampling import ClassIndex, PKSampler, TripletSampler
from tfrecordkit.schema import ClassLabel, Scalar, Schema


def synthetic_index(counts: list[int]) -> ClassIndex:
    """An index over fake locations: record r of the index sits at offset r."""
    total = sum(counts)
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return ClassIndex(files=("f",), classes=np.arange(len(counts)), starts=starts,
                      shard=np.zeros(total, np.int32), offset=np.arange(total),
                      length=np.ones(total, np.int64))


def class_of(index: ClassIndex, positions: np.ndarray) -> np.ndarray:
    return np.searchsorted(index.starts, positions, side="right") - 1


def test_every_batch_has_p_distinct_classes_times_k():
    counts = [int(c) for c in np.random.default_rng(0).integers(6, 30, 37)]
    index = synthetic_index(counts)
    sampler = PKSampler(index, 5, 4, seed=1)
    seen = Counter()
    for _ in range(1000):
        batch = sampler.next_batch()
        classes = class_of(index, batch)
        assert len(batch) == 20
        assert len(set(classes[::4])) == 5
        assert all((classes[i * 4 : (i + 1) * 4] == classes[i * 4]).all() for i in range(5))
        assert len(set(batch.tolist())) == 20  # no record twice: every class has >= K
        seen.update(classes[::4].tolist())
    # Class frequencies are balanced (rounds visit every class equally).
    assert chisquare(list(seen.values())).pvalue > 0.01
    assert len(seen) == 37


def test_rounds_use_every_class_before_repeating():
    index = synthetic_index([5] * 12)
    sampler = PKSampler(index, 4, 2, seed=3)
    round_classes = [c for _ in range(3) for c in class_of(index, sampler.next_batch())[::2]]
    assert sorted(round_classes) == list(range(12))
    orders = [tuple(class_of(index, sampler.next_batch())[::2]) for _ in range(30)]
    assert len(set(orders)) > 20  # which classes meet keeps changing


def test_examples_of_a_class_cycle_through_all_records():
    index = synthetic_index([6, 6, 6])
    sampler = PKSampler(index, 1, 3, seed=0)
    drawn = Counter()
    for _ in range(60):
        drawn.update(sampler.next_batch().tolist())
    assert set(drawn) == set(range(18))
    assert max(drawn.values()) - min(drawn.values()) <= 2


def test_small_classes_are_sampled_with_replacement_or_excluded(caplog):
    index = synthetic_index([2, 10, 10, 10])
    with caplog.at_level("WARNING"):
        sampler = PKSampler(index, 2, 4, seed=0)
    assert "1 classes have fewer than K=4" in caplog.text
    assert sampler.small_classes.count == 1
    for _ in range(200):
        batch = sampler.next_batch()
        classes = class_of(index, batch)
        for c in set(classes[::4].tolist()):
            rows = batch[classes == c]
            assert len(rows) == 4
            if c != 0:
                assert len(set(rows.tolist())) == 4
    excluded = PKSampler(index, 2, 4, seed=0, exclude_small=True)
    assert excluded.num_classes == 3
    assert 0 not in {int(c) for _ in range(50) for c in class_of(index, excluded.next_batch())}


def test_same_seed_same_batches_and_resume_continues_identically():
    index = synthetic_index([7] * 20)
    a, b, c = (PKSampler(index, 3, 2, seed=s) for s in (5, 5, 6))
    first = [a.next_batch().tolist() for _ in range(50)]
    assert first == [b.next_batch().tolist() for _ in range(50)]
    assert first != [c.next_batch().tolist() for _ in range(50)]
    state = json.loads(json.dumps(a.state_dict()))  # the state is JSON
    expected = [a.next_batch().tolist() for _ in range(40)]
    resumed = PKSampler(index, 3, 2, seed=5)
    resumed.load_state_dict(state)
    assert [resumed.next_batch().tolist() for _ in range(40)] == expected
    with pytest.raises(ValueError, match="seed"):
        PKSampler(index, 3, 2, seed=999).load_state_dict(state)
    with pytest.raises(ValueError, match="examples_per_class"):
        PKSampler(index, 3, 3, seed=5).load_state_dict(state)


def test_any_step_is_a_pure_function_of_seed_epoch_and_step():
    index = synthetic_index([int(c) for c in np.random.default_rng(2).integers(1, 12, 23)])
    walked = PKSampler(index, 4, 3, seed=8)
    steps = walked.steps_per_epoch
    sequence = [walked.next_batch().tolist() for _ in range(3 * steps + 2)]
    fresh = PKSampler(index, 4, 3, seed=8)
    for t in [0, 1, steps - 1, steps, 2 * steps + 1, 3 * steps + 1]:
        epoch, step = divmod(t, steps)
        assert fresh.batch(epoch, step).tolist() == sequence[t]
    # Ranks build their own share of the same step without talking to each other.
    ranks = [PKSampler(index, 2, 3, seed=8, rank=r, world_size=2) for r in range(2)]
    assert np.concatenate([r.batch(1, 2) for r in ranks]).tolist() == fresh.batch(1, 2).tolist()


def test_workers_get_different_classes_and_cover_each_round():
    index = synthetic_index([5] * 24)
    workers = [PKSampler(index, 3, 2, seed=7, rank=r, world_size=2) for r in range(2)]
    assert workers[0].steps_per_epoch == 4
    covered = []
    for _ in range(4):  # one round: 24 classes / (3 classes x 2 workers)
        step = [set(class_of(index, w.next_batch()).tolist()) for w in workers]
        assert not step[0] & step[1]
        covered += [*step[0], *step[1]]
    assert sorted(covered) == list(range(24))


def test_steps_per_epoch_by_classes_or_examples():
    index = synthetic_index([10] * 30)
    assert PKSampler(index, 4, 5, epoch="classes").steps_per_epoch == 8
    assert PKSampler(index, 4, 5, epoch="examples").steps_per_epoch == 15


def test_too_few_classes_is_an_error():
    with pytest.raises(DatasetError, match="only 3 classes are eligible"):
        PKSampler(synthetic_index([5, 5, 5]), 4, 2)


def test_triplets_are_valid_and_use_every_anchor_once():
    counts = [1, 3, 5, 8, 2]
    index = synthetic_index(counts)
    sampler = TripletSampler(index, seed=0)
    for _ in range(20):
        triplets = sampler.epoch_triplets()
        anchors, positives, negatives = triplets.T
        assert sorted(anchors.tolist()) == list(range(1, sum(counts)))  # class 0 has 1 record
        assert (class_of(index, anchors) == class_of(index, positives)).all()
        assert (anchors != positives).all()
        assert (class_of(index, anchors) != class_of(index, negatives)).all()
    workers = [TripletSampler(index, seed=3, rank=r, world_size=2) for r in range(2)]
    halves = [w.epoch_triplets()[:, 0].tolist() for w in workers]
    assert sorted(halves[0] + halves[1]) == list(range(1, sum(counts)))


@pytest.fixture(scope="module")
def class_dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("pk") / "ds"
    schema = Schema({"x": Scalar("int64"), "label": ClassLabel([f"c{i}" for i in range(12)])})
    rows = [{"x": i, "label": i % 12} for i in range(12 * 6)]
    write_dataset(rows, path, schema, shards=ShardOptions(layout="per_class"))
    mixed = path.parent / "mixed"
    write_dataset(rows, mixed, schema, shards=ShardOptions(num_shards=3))
    return path, mixed


@pytest.mark.parametrize("layout", ["per_class", "mixed"])
def test_numpy_pk_batches_from_a_dataset(class_dataset, layout):
    path = class_dataset[0] if layout == "per_class" else class_dataset[1]
    loader = tk.load_numpy_dataset(path, sampling=tk.PK(3, 2), seed=0)
    assert len(loader) == 4  # steps per epoch
    for batch in loader.batches(40):
        labels = batch["label"]
        assert (batch["x"] % 12 == labels).all()  # the records really are of those classes
        assert len(set(labels.tolist())) == 3 and (np.bincount(labels)[labels] == 2).all()
    state_run = tk.load_numpy_dataset(path, sampling=tk.PK(3, 2), seed=0)
    list(state_run.batches(5))
    follow = [b["x"].tolist() for b in tk.load_numpy_dataset(path, sampling=tk.PK(3, 2), seed=0,
                                                             state=state_run.state_dict()).batches(3)]
    straight = [b["x"].tolist() for b in tk.load_numpy_dataset(
        path, sampling=tk.PK(3, 2), seed=0).batches(8)][5:]
    assert follow == straight


def test_numpy_triplets(class_dataset):
    path, _ = class_dataset
    seen = []
    for batch in tk.load_numpy_dataset(path, batch_size=10, sampling=tk.Triplets(), seed=1):
        a, p, n = (batch[r] for r in ("anchor", "positive", "negative"))
        assert (a["label"] == p["label"]).all() and (a["x"] != p["x"]).all()
        assert (a["label"] != n["label"]).all()
        assert (a["x"] % 12 == a["label"]).all()
        seen += a["x"].tolist()
    assert sorted(seen) == list(range(72))


@pytest.mark.slow
def test_ten_thousand_classes_with_bounded_open_files(tmp_path):
    schema = Schema({"x": Scalar("int64"), "label": ClassLabel([str(i) for i in range(10_000)])})
    rows = ({"x": i, "label": i % 10_000} for i in range(50_000))
    write_dataset(rows, tmp_path / "ds", schema, shards=ShardOptions(layout="per_class"))
    loader = tk.load_numpy_dataset(tmp_path / "ds", sampling=tk.PK(32, 4), seed=0,
                                   read=tk.ReadOptions(max_open_files=16))
    classes = Counter()
    for batch in loader.batches(400):
        assert (batch["x"] % 10_000 == batch["label"]).all()
        classes.update(set(batch["label"].tolist()))
    assert loader.fetcher.peak_open_files == 16
    # 12,800 draws: round 1 (313 steps, its short last step filled by 16 classes drawn a
    # second time) and most of round 2.
    assert len(classes) == 10_000 and max(classes.values()) <= 3
    assert sum(v == 3 for v in classes.values()) <= 16


def test_fetcher_detects_corruption(class_dataset, tmp_path):
    import shutil

    from tfrecordkit import CorruptRecordError
    from tfrecordkit.store import RecordFetcher

    path = tmp_path / "ds"
    shutil.copytree(class_dataset[0], path)
    index = ClassIndex.from_dataset(path)
    target = path / index.files[0].split("/")[-1]
    data = bytearray(target.read_bytes())
    data[int(index.offset[0]) + 14] ^= 0xFF
    target.write_bytes(bytes(data))
    with RecordFetcher(index) as fetcher:
        assert len(fetcher.fetch(np.arange(1, 3))) == 2
        with pytest.raises(CorruptRecordError, match="data crc"):
            fetcher.fetch(np.array([0]))


def test_triplet_ranks_cover_every_anchor_once_in_every_epoch():
    # Regression: one generator carried state across epochs, and ranks drew different amounts
    # from it, so from the second epoch on their anchor orders diverged (duplicates, misses).
    index = synthetic_index([1, 3, 5, 8, 3])
    samplers = [TripletSampler(index, seed=3, rank=r, world_size=2) for r in range(2)]
    anchors = np.flatnonzero(index.counts[class_of(index, np.arange(20))] >= 2)
    orders = []
    for _ in range(5):
        parts = [s.epoch_triplets()[:, 0] for s in samplers]
        together = np.concatenate(parts)
        assert sorted(together.tolist()) == anchors.tolist()  # each anchor exactly once
        orders.append(tuple(together.tolist()))
    assert len(set(orders)) > 1  # epochs differ


def test_triplet_state_is_json_and_resumes_exactly():
    import json

    index = synthetic_index([4, 6, 2, 9])
    first = TripletSampler(index, seed=5)
    first.epoch_triplets()
    state = json.loads(json.dumps(first.state_dict()))
    resumed = TripletSampler(index, seed=5)
    resumed.load_state_dict(state)
    assert np.array_equal(first.epoch_triplets(), resumed.epoch_triplets())
    with pytest.raises(ValueError, match="seed"):
        TripletSampler(index, seed=6).load_state_dict(state)


def test_triplet_loader_ranks_take_equal_steps_and_resume_exactly(class_dataset):
    from tfrecordkit.readers._partition import Partition
    from tfrecordkit.readers.numpy_data import TripletLoader

    path = class_dataset[0]
    single = TripletLoader(path, batch_size=5, seed=2)
    anchors = single.sampler.total_anchors
    # batch_size is the global batch: each of the 3 ranks takes 5 triplets a step.
    ranks = [TripletLoader(path, batch_size=15, seed=2, partition=Partition(r, 3))
             for r in range(3)]
    assert len({len(r) for r in ranks}) == 1  # no rank waits for another at the end
    seen = []
    for r in ranks:
        batches = list(r)
        assert len(batches) == len(r) and len(batches[0]["anchor"]["__id"]) == 5
        for b in batches:
            assert (b["anchor"]["label"] == b["positive"]["label"]).all()
            assert (b["anchor"]["label"] != b["negative"]["label"]).all()
            assert (b["anchor"]["x"] % 12 == b["anchor"]["label"]).all()
            seen += b["anchor"]["__id"].tolist()
    assert set(seen) == set(np.concatenate([b["anchor"]["__id"] for b in single]).tolist())
    assert len(seen) - len(set(seen)) <= 2 and len(set(seen)) == anchors  # wrap-around only
    # JSON state mid-epoch continues exactly.
    run = TripletLoader(path, batch_size=5, seed=2)
    it = iter(run)
    head = [next(it)["anchor"]["__id"].tolist() for _ in range(3)]
    state = json.loads(json.dumps(run.state_dict()))
    rest = [b["anchor"]["__id"].tolist() for b in tk.load_numpy_dataset(path, batch_size=5,
                                                                        sampling=tk.Triplets(),
                                                                        seed=2, state=state)]
    whole = [b["anchor"]["__id"].tolist() for b in tk.load_numpy_dataset(path, batch_size=5,
                                                                         sampling=tk.Triplets(),
                                                                         seed=2)]
    assert head + rest == whole
