"""One way to call a reader: one loader per framework, the sampling mode a value given to it
(``tk.InOrder``, ``tk.Shuffled``, ``tk.PK``, ``tk.Triplets``), how files are read one object
(``tk.ReadOptions``), how records become values another (``tk.DecodeOptions``). Every shared
option has the same name, default and type everywhere; what a reader cannot do is refused
naming the reader or the option that does it, never ignored."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit.errors import DatasetError, OptionError, StateError

SHARED = ("batch_size", "sampling", "seed", "image_size", "options", "partition", "state",
          "read")
RETIRED = ("iter_pk_batches", "iter_triplets", "load_torch_pk_dataset",
           "load_torch_triplet_dataset", "load_tf_pk_dataset", "load_tf_triplet_dataset")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("one_call") / "ds"
    schema = tk.Schema({"n": tk.Scalar("int64"), "label": tk.ClassLabel(list("abcdef"))})
    tk.write_dataset(({"n": i, "label": i % 6} for i in range(120)), path, schema,
                     shards=tk.ShardOptions(layout="per_class"), progress=False)
    return path


def _order(batches) -> list[int]:
    return np.concatenate([np.asarray(b["n"]) for b in batches]).tolist()


@pytest.mark.integration  # the tf.data and torch loaders import their frameworks
def test_the_loaders_share_one_signature_of_at_most_ten_parameters():
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    loaders = {name: inspect.signature(getattr(tk, name)).parameters
               for name in ("load_numpy_dataset", "load_torch_dataset", "load_tf_dataset")}
    for name, parameters in loaders.items():
        assert len(parameters) <= 11, (name, list(parameters))  # tf.data adds repeat
        keywords = [p for p in parameters.values() if p.kind is p.KEYWORD_ONLY]
        assert len(keywords) <= 9, name
        assert set(SHARED) <= set(parameters), name
    numpy = loaders["load_numpy_dataset"]
    for name, parameters in loaders.items():
        for option in SHARED:
            ours, theirs = parameters[option], numpy[option]
            assert ours.default == theirs.default, (name, option)
            if option != "state":  # tf.data's also takes a global step
                assert ours.annotation == theirs.annotation, (name, option)
    grain = inspect.signature(tk.load_grain_source).parameters
    assert {"seed", "image_size", "options", "read", "state"} <= set(grain) and len(grain) <= 7


def test_the_per_mode_functions_are_gone():
    for name in RETIRED:
        assert not hasattr(tk, name), name


def test_sampling_modes_of_the_numpy_loader(dataset):
    in_order = _order(tk.load_numpy_dataset(dataset, batch_size=16, sampling=tk.InOrder()))
    shuffled = _order(tk.load_numpy_dataset(dataset, batch_size=16, seed=3))
    assert sorted(in_order) == sorted(shuffled) == list(range(120)) and shuffled != in_order
    assert _order(tk.load_numpy_dataset(dataset, batch_size=16, seed=3)) == shuffled
    exact = _order(tk.load_numpy_dataset(dataset, batch_size=16, seed=3,
                                         sampling=tk.Shuffled(exact=True)))
    assert sorted(exact) == list(range(120)) and exact != shuffled
    dropped = tk.load_numpy_dataset(dataset, batch_size=16, sampling=tk.InOrder(drop_last=True))
    assert len(dropped) == 7 and all(len(b["n"]) == 16 for b in dropped)
    pk = tk.load_numpy_dataset(dataset, sampling=tk.PK(3, 2), seed=1)
    batch = next(iter(pk))
    assert len(batch["n"]) == 6 and len(set(batch["__class"].tolist())) == 3
    triplets = next(iter(tk.load_numpy_dataset(dataset, batch_size=5, sampling=tk.Triplets())))
    assert set(triplets) == {"anchor", "positive", "negative"}
    assert (triplets["anchor"]["label"] == triplets["positive"]["label"]).all()
    # with_labels=False leaves the label out of every part, as tf.data does (it was ignored).
    bare = next(iter(tk.load_numpy_dataset(dataset, batch_size=5,
                                           sampling=tk.Triplets(with_labels=False))))
    for part in ("anchor", "positive", "negative"):
        assert "label" not in bare[part] and (bare[part]["n"] == triplets[part]["n"]).all()


def test_batches_run_across_epochs_and_move_the_state(dataset):
    loader = tk.load_numpy_dataset(dataset, sampling=tk.PK(2, 2), seed=5)
    steps = len(loader)
    first = _order(loader.batches(steps + 2))  # one epoch and two steps of the next
    assert loader.state_dict()["epoch"] == 1 and loader.state_dict()["step"] == 2
    again = tk.load_numpy_dataset(dataset, sampling=tk.PK(2, 2), seed=5)
    assert _order(list(again) + list(again.batches(2))) == first
    resumed = tk.load_numpy_dataset(dataset, sampling=tk.PK(2, 2), seed=5,
                                    state=loader.state_dict())
    assert _order(resumed.batches(1)) == _order(loader.batches(1))


def test_no_seed_draws_one_and_a_state_brings_its_own(dataset):
    drawn = tk.load_numpy_dataset(dataset, batch_size=16, seed=None)
    assert isinstance(drawn.seed, int)
    it = iter(drawn)
    next(it)
    state = drawn.state_dict()
    resumed = tk.load_numpy_dataset(dataset, batch_size=16, seed=None, state=state)
    assert resumed.seed == drawn.seed
    assert _order([next(it)]) == _order([next(iter(resumed))])


@pytest.mark.parametrize(("call", "match"), [
    (lambda p: tk.load_numpy_dataset(p, batch_size=8, sampling=False), r"tk\.InOrder\(\)"),
    (lambda p: tk.load_numpy_dataset(p, batch_size=8, sampling="global"), "sampling must be"),
    (lambda p: tk.load_numpy_dataset(p, batch_size=8, sampling=tk.Shuffled(buffer=100)),
     r"tf\.data"),
    (lambda p: tk.load_numpy_dataset(p, batch_size=8, read=tk.ReadOptions(cache=True)),
     r"tf\.data"),
    (lambda p: tk.load_numpy_dataset(p, batch_size=8,
                                     options=tk.DecodeOptions(as_supervised=True)), "model.fit"),
    (lambda p: tk.load_numpy_dataset(p, batch_size=8, sampling=tk.PK(2, 2)), "leave batch_size"),
    (lambda p: tk.load_numpy_dataset(p, sampling=tk.Triplets()), r"Triplets\(\) needs batch_size"),
    (lambda p: tk.load_numpy_dataset(p, sampling=tk.PK(2, 2), options=tk.DecodeOptions(
        augment=lambda values, rng: values)), "crop and flip"),
    (lambda p: tk.load_numpy_dataset(p, batch_size=8, seed=-1), "seed must be"),
    (lambda p: tk.load_grain_source(p, options=tk.DecodeOptions(
        augment=lambda values, rng: values)), "grain"),
    (lambda p: tk.load_grain_source(p, read=tk.ReadOptions(num_threads=2)), "grain"),
])
def test_what_a_loader_cannot_do_is_refused_by_name(dataset, call, match):
    with pytest.raises(OptionError, match=match):
        call(dataset)


def test_the_values_check_themselves():
    with pytest.raises(OptionError, match="positive"):
        tk.PK(0, 4)
    with pytest.raises(OptionError, match="'classes' or 'examples'"):
        tk.PK(2, 2, epoch="steps")
    with pytest.raises(OptionError, match="no buffer"):
        tk.Shuffled(exact=True, buffer=10)
    with pytest.raises(OptionError, match="num_threads"):
        tk.ReadOptions(num_threads=0)
    with pytest.raises(OptionError, match=r"tk\.Schema"):
        tk.ReadOptions(schema={"x": "int64"})
    with pytest.raises(OptionError, match="decode=True"):
        tk.DecodeOptions(decode=False, augment=lambda values, rng: values)


def test_class_sampling_of_a_list_of_files_asks_for_a_dataset(dataset):
    files = sorted(str(p) for p in dataset.glob("*.tfrecord"))
    with pytest.raises(DatasetError, match="adopt"):
        tk.load_numpy_dataset(files, sampling=tk.PK(2, 2))


@pytest.mark.integration
def test_tf_data_takes_the_same_values_and_refuses_what_it_cannot_do(dataset):
    pytest.importorskip("tensorflow")
    shuffled = [int(v) for b in tk.load_tf_dataset(dataset, batch_size=16, seed=3)
                for v in b["n"].numpy()]
    again = [int(v) for b in tk.load_tf_dataset(dataset, batch_size=16) for v in b["n"].numpy()]
    assert sorted(shuffled) == list(range(120))
    assert [int(v) for b in tk.load_tf_dataset(dataset, batch_size=16, seed=3)
            for v in b["n"].numpy()] == shuffled  # a seed: the same order every run
    assert sorted(again) == list(range(120))  # seed 0 by default, as in every loader
    in_order = [int(v) for b in tk.load_tf_dataset(dataset, batch_size=16,
                                                   sampling=tk.InOrder())
                for v in b["n"].numpy()]
    assert in_order == _order(tk.load_numpy_dataset(dataset, batch_size=16,
                                                    sampling=tk.InOrder()))
    pk = tk.load_tf_dataset(dataset, sampling=tk.PK(3, 2), seed=1)
    numpy_pk = tk.load_numpy_dataset(dataset, sampling=tk.PK(3, 2), seed=1)
    assert pk.steps_per_epoch == len(numpy_pk)
    assert [b["n"].numpy().tolist() for b in pk] == [b["n"].tolist() for b in numpy_pk]
    exact = tk.load_tf_dataset(dataset, batch_size=16, sampling=tk.Shuffled(exact=True))
    assert [b["n"].numpy().tolist() for b in exact] == [b["n"].tolist() for b in
                                                        tk.load_numpy_dataset(
        dataset, batch_size=16, sampling=tk.Shuffled(exact=True))]
    for kwargs, match in [
            ({"read": tk.ReadOptions(num_threads=2)}, "AUTOTUNE"),
            ({"sampling": tk.Shuffled(buffer=32), "state": 3}, "tf.train.Checkpoint"),
            ({"sampling": tk.PK(2, 2), "batch_size": 8}, "leave batch_size"),
            ({"sampling": tk.PK(2, 2), "batch_size": None, "read": tk.ReadOptions(cache=True)},
             "by offset")]:
        with pytest.raises(OptionError, match=match):
            tk.load_tf_dataset(dataset, **{"batch_size": 16, **kwargs})


@pytest.mark.parametrize("saved", [-1, True, "3", 2.0])
def test_a_states_seed_is_checked_before_a_loader_without_one_runs_with_it(dataset, saved):
    state = tk.load_numpy_dataset(dataset, batch_size=16, seed=None).state_dict()
    with pytest.raises(tk.StateError) as caught:
        tk.load_numpy_dataset(dataset, batch_size=16, seed=None, state={**state, "seed": saved})
    assert caught.value.key == "seed"


@pytest.mark.integration
def test_tf_data_refuses_a_global_step_without_the_seed_it_ran_with(dataset):
    pytest.importorskip("tensorflow")
    with pytest.raises(OptionError, match="state_at"):
        tk.load_tf_dataset(dataset, sampling=tk.PK(2, 2), seed=None, state=3)
    ds = tk.load_tf_dataset(dataset, sampling=tk.PK(2, 2), seed=None)
    state = ds.state_at(1)  # holds the seed drawn: resumes the same batches
    again = tk.load_tf_dataset(dataset, sampling=tk.PK(2, 2), seed=None, state=state)
    assert [b["n"].numpy().tolist() for b in again] == [b["n"].numpy().tolist()
                                                         for b in ds.skip(1)]


def test_batches_read_no_step_past_the_last_asked_for(dataset):
    loader = tk.load_numpy_dataset(dataset, batch_size=8, sampling=tk.InOrder())
    started = []
    start = loader._start
    loader._start = lambda epoch, step, pool: started.append((epoch, step)) or start(
        epoch, step, pool)
    got = [b["n"].tolist() for b in loader.batches(len(loader) + 2)]  # an epoch and 2 steps
    assert started == [(0, s) for s in range(len(loader))] + [(1, 0), (1, 1)]
    assert got[:len(loader)] == got[len(loader):] + got[2:len(loader)]  # in order, twice
    assert loader.state_dict()["epoch"] == 1 and loader.state_dict()["step"] == 2


def test_every_reader_refuses_from_one_table_naming_itself(dataset):
    """The refusals come from one table: each names the reader and the option."""
    cases = [
        (lambda: tk.load_numpy_dataset(dataset, batch_size=8, read=tk.ReadOptions(cache=True)),
         "the NumPy and PyTorch loaders does not take ReadOptions(cache=True)"),
        (lambda: tk.load_grain_source(dataset, options=tk.DecodeOptions(as_supervised=True)),
         "grain's source does not take DecodeOptions(as_supervised=True)"),
        (lambda: tk.load_numpy_dataset(dataset, sampling=tk.Triplets(), batch_size=4,
                                       read=tk.ReadOptions(cache=True)),
         "P×K and triplet batches of the NumPy and PyTorch loaders does not take"),
    ]
    for call, message in cases:
        with pytest.raises(OptionError, match=re.escape(message)):
            call()


@pytest.mark.integration
def test_rays_reader_refuses_what_it_does_not_take(dataset):
    pytest.importorskip("ray")
    from tfrecordkit.ray import TFRecordKitDatasource

    for kwargs in ({"options": tk.DecodeOptions(augment=lambda values, rng: values)},
                   {"read": tk.ReadOptions(num_threads=2)}, {"read": tk.ReadOptions(cache=True)},
                   {"read": tk.ReadOptions(max_open_files=8)}):
        with pytest.raises(OptionError, match="Ray's read_dataset does not take"):
            TFRecordKitDatasource(dataset, **kwargs)


@pytest.mark.parametrize(("call", "new"), [
    (lambda p: tk.load_numpy_dataset(p, batch_size=2, shuffle=True), r"sampling=tk\.Shuffled"),
    (lambda p: tk.load_numpy_dataset(p, batch_size=2, storage_options={}),
     r"read=tk\.ReadOptions\(storage_options=\.\.\.\)"),
    (lambda p: tk.load_numpy_dataset(p, batch_size=2, features=["n"]),
     r"options=tk\.DecodeOptions\(features=\.\.\.\)"),
    (lambda p: tk.load_numpy_dataset(p, batch_size=2, rank=0), r"partition=tk\.Partition"),
    (lambda p: tk.load_grain_source(p, batch_size=2), "batch_fn=source.collate"),
    (lambda p: tk.load_numpy_dataset(p, ["train", "val"], batch_size=2),
     r"split 'train\+val': no split 'val'; the dataset has train \(120 records\)"),
])
def test_retired_keywords_and_a_list_of_splits_name_the_new_spelling(dataset, call, new):
    """Not Python's bare "unexpected keyword argument" or "unhashable type: 'list'"."""
    with pytest.raises(tk.TFRecordKitError, match=new):
        call(dataset)


@pytest.mark.integration  # the tf.data and torch loaders import their frameworks
def test_the_image_size_keyword_composes_with_a_crop_in_every_reader(tmp_path):
    """``image_size=`` joins the options before they are checked: a crop or flip given in
    ``DecodeOptions`` takes the keyword's size in every reader (it was refused)."""
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from tests.datasets import digits_folder
    from tfrecordkit.readers.torch_data import load_torch_dataset

    digits_folder(tmp_path / "digits", limit_per_class=2)
    tk.convert(tmp_path / "digits", tmp_path / "ds", workers=1)
    options = tk.DecodeOptions(crop="random", flip=True)
    loaders = {
        "numpy": lambda **k: next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=4,
                                                             **k)))["image"],
        "torch": lambda **k: next(iter(load_torch_dataset(tmp_path / "ds", batch_size=4,
                                                          **k)))["image"].numpy(),
        "tf.data": lambda **k: next(iter(tk.load_tf_dataset(tmp_path / "ds", batch_size=4,
                                                            **k)))["image"].numpy(),
        "grain": lambda **k: tk.load_grain_source(tmp_path / "ds", **k)[0]["image"][None],
    }
    for reader, first in loaders.items():
        assert first(image_size=24, options=options).shape[1:3] == (24, 24), reader
        with pytest.raises(OptionError, match="give image_size"):
            first(options=options)


@pytest.mark.integration  # the tf.data and torch loaders import their frameworks
def test_batch_size_is_the_global_batch_in_every_reader(dataset):
    """``batch_size=8`` with two ranks: each rank's batches hold 4, in every reader and mode
    that takes a batch size; a batch that does not divide is refused alike."""
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from tfrecordkit.readers.torch_data import load_torch_dataset

    half = tk.Partition(0, 2)
    for sampling in (tk.InOrder(), tk.Shuffled(), tk.Triplets()):
        first = {
            "numpy": next(iter(tk.load_numpy_dataset(dataset, batch_size=8, sampling=sampling,
                                                     partition=half))),
            "torch": next(iter(load_torch_dataset(dataset, batch_size=8, sampling=sampling,
                                                  partition=half))),
            "tf.data": next(iter(tk.load_tf_dataset(dataset, batch_size=8, sampling=sampling,
                                                    partition=half))),
        }
        for reader, batch in first.items():
            part = batch["anchor"] if isinstance(sampling, tk.Triplets) else batch
            assert len(part["n"]) == 4, (reader, sampling)
        for load in (tk.load_numpy_dataset, load_torch_dataset, tk.load_tf_dataset):
            with pytest.raises(OptionError, match="global batch_size 9 must divide evenly"):
                load(dataset, batch_size=9, sampling=sampling, partition=half)


@pytest.mark.integration  # the tf.data loader imports TensorFlow
def test_state_is_taken_by_every_entry_point_or_refused_from_one_table(dataset):
    """tf.data in order and shuffled resumes from a global step or from the NumPy loader's
    state (the same batches as the NumPy loader from there); tf.data's own shuffle buffer,
    grain and Ray refuse ``state=``, each naming why."""
    pytest.importorskip("tensorflow")
    for sampling in (tk.InOrder(), tk.Shuffled(), tk.Shuffled(exact=True)):
        numpy_loader = tk.load_numpy_dataset(dataset, batch_size=16, sampling=sampling,
                                             seed=5)
        batches = iter(numpy_loader)
        for _ in range(3):
            next(batches)
        state = numpy_loader.state_dict()
        rest = [b["n"].tolist() for b in batches]
        for saved in (state, 3):
            resumed = tk.load_tf_dataset(dataset, batch_size=16, sampling=sampling, seed=5,
                                         state=saved)
            assert [b["n"].numpy().tolist() for b in resumed] == rest, sampling
            assert resumed.steps_per_epoch == len(numpy_loader)
        with pytest.raises(tk.StateError, match="batch_size"):
            tk.load_tf_dataset(dataset, batch_size=8, sampling=sampling, seed=5, state=state)
    with pytest.raises(OptionError, match=r"tf.data does not take Shuffled\(buffer=\) with "
                                          "state="):
        tk.load_tf_dataset(dataset, batch_size=16, sampling=tk.Shuffled(buffer=8), state=3)
    with pytest.raises(OptionError, match="grain's source does not take state=: grain and "
                                          "Ray keep their own iteration"):
        tk.load_grain_source(dataset, state=state)
    pytest.importorskip("ray")
    from tfrecordkit.ray import read_dataset

    with pytest.raises(OptionError, match="Ray's read_dataset does not take state="):
        read_dataset(dataset, state=state)


def test_a_numpy_integer_is_a_batch_size(dataset):
    """``batch_size=np.int64(8)`` (a value from a config or an array) is a batch size, as
    before the global-batch rule took it; 0 and True are not."""
    loader = tk.load_numpy_dataset(dataset, batch_size=np.int64(8), sampling=tk.InOrder(),
                                   partition=tk.Partition(0, 2))
    assert len(next(iter(loader))["n"]) == 4
    with pytest.raises(OptionError, match="batch_size must be positive"):
        tk.load_numpy_dataset(dataset, batch_size=0)
    for bad in (True, "16", 16.0):  # a type mistake is named as one, not as a sign
        with pytest.raises(OptionError, match="must be a whole number") as err:
            tk.load_numpy_dataset(dataset, batch_size=bad)
        assert type(bad).__name__ in str(err.value)


@pytest.mark.integration  # the tf.data and torch loaders import their frameworks
def test_each_rank_reads_the_same_records_in_every_reader(dataset):
    """For each rank of two, every reader gives the same batches of the same record ids over
    an epoch (a global batch of 16 split 8 + 8, the last step wrapped around and marked by
    ``__valid``), in order, shuffled, exactly shuffled and by class; and the ranks together
    read every record once."""
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from tfrecordkit.readers.torch_data import load_torch_dataset

    def ids(batches) -> list[list[int]]:
        return [np.asarray(b["__id"]).tolist() for b in batches]

    for sampling in (tk.InOrder(), tk.Shuffled(), tk.Shuffled(exact=True), tk.PK(3, 2)):
        size = None if isinstance(sampling, tk.PK) else 16
        real = []
        for rank in range(2):
            kwargs = {"batch_size": size, "sampling": sampling, "seed": 7,
                      "partition": tk.Partition(rank, 2)}
            got = {"numpy": ids(tk.load_numpy_dataset(dataset, **kwargs)),
                   "torch": ids(load_torch_dataset(dataset, **kwargs)),
                   "tf.data": ids(tk.load_tf_dataset(dataset, **kwargs))}
            assert got["numpy"] == got["torch"] == got["tf.data"], (sampling, rank)
            if size is not None:
                valid = [np.asarray(b["__valid"]).tolist()
                         for b in tk.load_tf_dataset(dataset, **kwargs)]
                real += [i for row, ok in zip(got["tf.data"], valid, strict=True)
                         for i, keep in zip(row, ok, strict=True) if keep]
        if size is not None:
            assert sorted(real) == list(range(120)), sampling


@pytest.mark.integration  # the tf.data and torch loaders import their frameworks
def test_single_examples_resume_alike_and_need_one_rank(dataset):
    """``batch_size=None`` in every loader: single examples whose ``state_dict()`` counts
    examples; any loader's state (or tf.data's example count) resumes every other; several
    ranks are refused alike."""
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from tfrecordkit.readers.torch_data import load_torch_dataset

    numpy_examples = tk.load_numpy_dataset(dataset, seed=2)
    assert len(numpy_examples) == 120
    walk = iter(numpy_examples)
    head = [int(next(walk)["n"]) for _ in range(37)]
    state = numpy_examples.state_dict()
    rest = [int(e["n"]) for e in walk]
    assert sorted(head + rest) == list(range(120)) and state["step"] == 37
    for saved in (state, 37):
        resumed = tk.load_tf_dataset(dataset, seed=2, state=saved)
        assert [int(e["n"]) for e in resumed] == rest
    torch_examples = load_torch_dataset(dataset, seed=2, state=state)
    assert [int(e["n"]) for e in torch_examples] == rest
    assert tk.load_numpy_dataset(dataset, seed=2, state=state).state_dict()["step"] == 37
    again = [int(e["n"]) for e in numpy_examples]  # the next epoch: another order
    assert sorted(again) == list(range(120)) and again != head + rest
    for load in (tk.load_numpy_dataset, load_torch_dataset, tk.load_tf_dataset):
        with pytest.raises(OptionError, match="batch_size=None gives single examples"):
            load(dataset, partition=tk.Partition(0, 2))
    with pytest.raises(tk.StateError, match="batch_size"):
        tk.load_numpy_dataset(dataset, batch_size=8, seed=2, state=state)


@pytest.mark.integration  # the tf.data loader imports TensorFlow
def test_large_records_in_order_read_as_every_reader_reads_them(tmp_path):
    """In order on one rank, records of 20 KB come through TensorFlow's own sequential reader
    (no Python call per step): the same batches, ids and ``__valid`` as the NumPy loader,
    with and without ``drop_last``, epoch after epoch."""
    pytest.importorskip("tensorflow")
    schema = tk.Schema({"blob": tk.Tensor((20_000,), "uint8"), "n": tk.Scalar("int64")})
    rng = np.random.default_rng(0)
    tk.write_dataset(({"blob": rng.integers(0, 255, 20_000, dtype=np.uint8), "n": i}
                      for i in range(45)), tmp_path / "ds", schema,
                     shards=tk.ShardOptions(num_shards=3), progress=False)
    for sampling in (tk.InOrder(), tk.InOrder(drop_last=True)):
        want = [{k: np.asarray(v).tolist() for k, v in b.items()}
                for b in tk.load_numpy_dataset(tmp_path / "ds", batch_size=16,
                                               sampling=sampling)]
        ds = tk.load_tf_dataset(tmp_path / "ds", batch_size=16, sampling=sampling)
        for _ in range(2):  # each iteration an epoch
            got = [{k: v.numpy().tolist() for k, v in b.items()} for b in ds]
            assert got == want, sampling
        assert len(ds) == len(want)


@pytest.mark.parametrize("sampling", [tk.Shuffled(), tk.PK(2, 3), tk.Triplets()])
def test_a_state_of_another_split_expression_is_refused_naming_both(dataset, sampling):
    batch = 6 if not isinstance(sampling, tk.PK) else None
    loader = tk.load_numpy_dataset(dataset, "train[:50%]", batch_size=batch, sampling=sampling)
    next(iter(loader))
    state = loader.state_dict()
    assert state["split"] == "train[:50%]"
    other = tk.load_numpy_dataset(dataset, "train[50%:]", batch_size=batch, sampling=sampling)
    with pytest.raises(StateError, match=r"saved reading split 'train\[:50%\]'; this loader "
                                         r"reads 'train\[50%:\]'") as err:
        other.load_state_dict(state)
    assert "\n" not in str(err.value)
    old = {k: v for k, v in state.items() if k != "split"}  # a state from before: by its hash
    with pytest.raises(StateError, match="fingerprint"):
        other.load_state_dict(old)
    tk.load_numpy_dataset(dataset, "train[:50%]", batch_size=batch,
                          sampling=sampling).load_state_dict(old)
