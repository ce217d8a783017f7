"""Resume states are checked as a whole: a state either resumes exactly or is refused with one
line naming the key (a StateError), never rounded (2.7 -> 2), coerced ("3" -> 3, True -> 1),
stored and ignored, or failed with a KeyError / TypeError / OverflowError."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecordkit as tk
from tfrecordkit.errors import StateError, TFRecordKitError
from tfrecordkit.readers import RECORD_ID


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("states") / "ds"
    schema = tk.Schema({"x": tk.Scalar("int64"), "label": tk.ClassLabel(["a", "b", "c"])})
    tk.write_dataset([{"x": i, "label": i % 3} for i in range(60)], path, schema,
                     shards=tk.ShardOptions(layout="per_class"))
    return path


def _loader(dataset):
    return tk.load_numpy_dataset(dataset, batch_size=4, seed=3)


def _valid_state(dataset):
    loader = _loader(dataset)
    it = iter(loader)
    next(it), next(it)
    return loader.state_dict()


def _one_line(err: BaseException) -> str:
    message = str(err)
    assert "\n" not in message and isinstance(err, TFRecordKitError | ValueError)
    return message


@pytest.mark.parametrize(("key", "value"), [
    ("step", 2.7), ("step", True), ("step", "3"), ("step", None), ("step", -1),
    ("step", 10**6), ("epoch", 2**70), ("epoch", 1.0), ("seed", True), ("seed", "3"),
    ("batch_size", 4.0), ("shuffle", "global"), ("drop_last", 1), ("fingerprint", None),
])
def test_a_bad_value_is_refused_naming_its_key(dataset, key, value):
    state = {**_valid_state(dataset), key: value}
    with pytest.raises(StateError) as caught:
        _loader(dataset).load_state_dict(state)
    assert caught.value.key == key and repr(key) in _one_line(caught.value)


@pytest.mark.parametrize("key", ["epoch", "step", "seed", "fingerprint"])
def test_a_missing_key_is_refused_naming_it(dataset, key):
    state = _valid_state(dataset)
    del state[key]
    with pytest.raises(StateError, match=f"'{key}'.*missing"):
        _loader(dataset).load_state_dict(state)


@pytest.mark.parametrize("state", [None, [], "epoch=0", 3])
def test_a_state_that_is_not_a_dict_is_refused(dataset, state):
    with pytest.raises(StateError, match="must be a dict"):
        _loader(dataset).load_state_dict(state)


def test_pk_states_are_checked_alike(dataset):
    batches = tk.load_numpy_dataset(dataset, sampling=tk.PK(2, 2), seed=1)
    stream = batches.batches()
    next(stream)
    good = batches.state_dict()
    for key, value in [("step", 3.9), ("step", "1"), ("classes_per_batch", 2.0),
                       ("epoch", 2**70), ("seed", None)]:
        with pytest.raises(StateError) as caught:
            tk.load_numpy_dataset(dataset, sampling=tk.PK(2, 2), seed=1,
                                  state={**good, key: value})
        assert caught.value.key == key, (key, value)
    resumed = tk.load_numpy_dataset(dataset, sampling=tk.PK(2, 2), seed=1,
                                    state=json.loads(json.dumps(good)))
    assert next(resumed.batches())[RECORD_ID].tolist() == next(stream)[RECORD_ID].tolist()


def test_worker_states_are_checked_and_never_ignored(dataset):
    pytest.importorskip("torch")
    ds = tk.load_torch_dataset(dataset, batch_size=4, seed=3)
    base = ds.state_dict()
    with pytest.raises(StateError, match="worker"):
        tk.load_torch_dataset(dataset, batch_size=4, seed=3).load_state_dict(
            {**base, "step": 7, "worker": 7, "num_workers": 2})
    with pytest.raises(StateError, match=r"'step'.*never takes"):
        tk.load_torch_dataset(dataset, batch_size=4, seed=3).load_state_dict(
            {**base, "step": 4, "worker": 1, "num_workers": 2})
    # Worker 1 of 2's state, iterated without workers: refused, not restarted at step 0.
    saved = tk.load_torch_dataset(dataset, batch_size=4, seed=3)
    saved.load_state_dict({**base, "step": 3, "worker": 1, "num_workers": 2})
    with pytest.raises(StateError, match="num_workers=2"):
        next(iter(saved))


def test_a_good_state_resumes_exactly(dataset):
    state = json.loads(json.dumps(_valid_state(dataset)))
    resumed = _loader(dataset)
    resumed.load_state_dict(state)
    whole = [b[RECORD_ID].tolist() for b in _loader(dataset)]
    assert [b[RECORD_ID].tolist() for b in resumed] == whole[2:]


JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**80, 2**80),
                        st.floats(allow_nan=True), st.text(max_size=5),
                        st.lists(st.integers(), max_size=2))


@given(st.data())
def test_any_mutated_state_resumes_exactly_or_is_refused(dataset, data):
    good = _valid_state(dataset)
    state = dict(good)
    key = data.draw(st.sampled_from([*sorted(good), "worker", "num_workers", "extra"]))
    if data.draw(st.booleans()) and key in state:
        del state[key]
    else:
        state[key] = data.draw(JSON_VALUES)
    loader = _loader(dataset)
    try:
        loader.load_state_dict(state)
    except StateError as err:
        _one_line(err)
        return
    # Accepted: exactly the position it names (integers, never rounded), same settings.
    assert type(state["epoch"]) is int and type(state["step"]) is int
    assert (loader.epoch, loader.step) == (state["epoch"], state["step"])
    # A state without its split is one saved before states named it: checked by its
    # fingerprint alone, so accepted.
    same = [k for k in good if k not in ("epoch", "step") and (k != "split" or k in state)]
    assert {k: state[k] for k in same} == {k: good[k] for k in same}
