"""``tk.Mix``: several datasets read as one, each position of an epoch drawn from a source by
weight. Checked against each source read alone (every value, class names joined by name),
across readers (NumPy, PyTorch with and without workers, tf.data, grain), across resumes and
worker counts, and on the draw's statistics; every bad input refused in one line."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tfrecordkit as tk
from tests.datasets import MIXED_SCHEMA, mixed_row
from tfrecordkit.errors import DatasetError, OptionError, StateError
from tfrecordkit.sampling import MixOrder
from tfrecordkit.sampling._mix import MIX_CHUNK

NAMES_B = ["c", "d", "a"]  # the second source's classes: "c" and "a" shared, in another order


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("mix")
    rng = np.random.default_rng(0)
    a, b = root / "a", root / "b"
    tk.write_dataset((mixed_row(i, rng) for i in range(37)), a, MIXED_SCHEMA, progress=False)
    schema_b = tk.Schema({**MIXED_SCHEMA, "label": tk.ClassLabel(NAMES_B)})
    tk.write_dataset((mixed_row(i, rng) for i in range(90)), b, schema_b,
                     split={"train": 0.8, "val": 0.2}, progress=False)
    return a, b


def _mix(sources, **kw):
    a, b = sources
    return tk.Mix([a, (b, "train+val")], **kw)


def _equal(x, y, where=""):
    if isinstance(x, dict):
        assert set(x) == set(y), where
        for key in x:
            _equal(x[key], y[key], f"{where}/{key}")
    elif isinstance(x, list | tuple):
        assert len(x) == len(y), where
        for i, (u, v) in enumerate(zip(x, y, strict=True)):
            _equal(u, v, f"{where}[{i}]")
    else:
        u = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
        v = np.asarray(y.numpy() if hasattr(y, "numpy") else y)
        assert u.dtype == v.dtype and u.shape == v.shape, (where, u.dtype, v.dtype)
        assert np.array_equal(u, v), where


def test_every_record_is_its_sources_record_under_the_joined_class_names(sources):
    a, b = sources
    mix = _mix(sources, weights=[1, 3])
    examples = tk.load_numpy_dataset(mix, batch_size=None, seed=3)
    joined = ["a", "b", "c", "d"]
    assert examples.loader.decoder.schema.class_names("label") == joined
    alone = [tk.load_grain_source(a), tk.load_grain_source(b, "train+val")]
    names = [["a", "b", "c"], NAMES_B]
    seen = set()
    for example in examples:
        record = int(example["__id"])
        source = 0 if record < len(alone[0]) else 1
        expected = dict(alone[source][record - (0 if source == 0 else len(alone[0]))])
        assert joined[example["label"]] == names[source][expected.pop("label")]
        _equal({k: v for k, v in example.items() if k not in ("label", "__id")},
               {k: v for k, v in expected.items() if k != "__id"})
        seen.add(record)
    assert len(seen) > 60  # both sources read, records repeat only by draw
    batches = list(tk.load_numpy_dataset(mix, batch_size=16, seed=3))  # the same epoch
    ids = np.concatenate([b["__id"] for b in batches])
    labels = np.concatenate([b["label"] for b in batches])
    examples.set_epoch(0)
    assert ids.tolist() == [int(e["__id"]) for e in examples]
    examples.set_epoch(0)
    assert labels.tolist() == [int(e["label"]) for e in examples]


def _order(mix_sizes, weights, seed=0, epoch=0, records=None, mode="block"):
    sizes = tuple(mix_sizes)
    total = sum(w for w in weights)
    return MixOrder(sizes, tuple(w / total for w in weights), seed, epoch,
                    records or sum(sizes), mode)


def test_proportions_hold_in_every_window_of_100_batches():
    weights, batch = (0.7, 0.2, 0.1), 32
    order = _order((5_000, 300, 40), weights, seed=11, records=60 * 100 * batch)
    sources, _ = order.ids(np.arange(order.records))
    window = 100 * batch
    for start in range(0, order.records, window):
        counts = np.bincount(sources[start : start + window], minlength=3)
        for j, p in enumerate(weights):
            sigma = math.sqrt(window * p * (1 - p))
            assert abs(counts[j] - window * p) < 4.5 * sigma, (start, j, counts)
    assert np.array_equal(order.counts(), np.bincount(sources, minlength=3))


def test_a_source_that_runs_out_starts_again_reshuffled_and_weight_zero_is_never_read():
    order = _order((50, 1000, 70), (3, 1, 0), seed=5, records=1600)
    sources, ids = order.ids(np.arange(order.records))
    assert not (sources == 2).any()
    small = ids[sources == 0]
    rounds = [small[k : k + 50] for k in range(0, len(small) - 49, 50)]
    assert len(rounds) >= 15
    for taken in rounds:  # every pass reads each record once
        assert sorted(taken.tolist()) == list(range(50))
    assert len({tuple(r.tolist()) for r in rounds}) == len(rounds)  # each pass its own order


def test_any_position_is_found_alone_across_chunks():
    order = _order((3_000, 90_000), (1, 1), seed=2, records=3 * MIX_CHUNK + 17)
    everything = order.ids(np.arange(order.records))
    picked = np.random.default_rng(0).choice(order.records, 500, replace=False)
    fresh = _order((3_000, 90_000), (1, 1), seed=2, records=3 * MIX_CHUNK + 17)
    found = fresh.ids(picked[::-1])
    assert np.array_equal(found[0], everything[0][picked[::-1]])
    assert np.array_equal(found[1], everything[1][picked[::-1]])
    other = _order((3_000, 90_000), (1, 1), seed=2, epoch=1, records=3 * MIX_CHUNK + 17)
    assert not np.array_equal(other.ids(np.arange(1000))[1], everything[1][:1000])


def test_an_epoch_is_epoch_records_positions_and_resumes_exactly(sources):
    mix = _mix(sources, weights=[2, 1], epoch_records=100)
    loader = tk.load_numpy_dataset(mix, batch_size=16, seed=7)
    assert len(loader) == 7  # ceil(100 / 16); the last batch holds 4
    whole = list(loader.batches(10))
    assert len(whole[6]["__id"]) == 4
    again = tk.load_numpy_dataset(mix, batch_size=16, seed=7)
    list(again.batches(4))
    state = again.state_dict()
    resumed = tk.load_numpy_dataset(mix, batch_size=16, seed=7, state=state)
    for x, y in zip(whole[4:], resumed.batches(6), strict=True):
        _equal(x, y)
    with pytest.raises(StateError, match="fingerprint"):  # another mix's state
        tk.load_numpy_dataset(_mix(sources, weights=[1, 1], epoch_records=100), batch_size=16,
                              seed=7, state=state)
    counts = loader.mix.counts(7, 0)
    assert sum(counts.values()) == 100 and list(counts) == [str(sources[0]) + "[train]",
                                                           str(sources[1]) + "[train+val]"]


@pytest.mark.integration
@pytest.mark.parametrize("sampling", [tk.Shuffled(), tk.InOrder(), tk.Shuffled(exact=True)])
def test_mixed_batches_are_the_same_in_every_reader(sources, sampling):
    pytest.importorskip("tensorflow")
    torch = pytest.importorskip("torch")
    from tests.readers.test_readers_agree import assert_same, plain

    def same(x, y):
        assert_same(plain(x), plain(y), "batch")

    mix = _mix(sources, weights=[1, 2])
    options = tk.DecodeOptions(features=["raw", "label", "text", "t", "png", "f"])
    for partition in (None, tk.Partition(1, 2)):
        kw = dict(batch_size=16, seed=4, sampling=sampling, options=options,
                  partition=partition)
        expected = list(tk.load_numpy_dataset(mix, **kw).batches(20))
        tf_batches = list(tk.load_tf_dataset(mix, repeat=True, **kw).take(20))
        for x, y in zip(expected, tf_batches, strict=True):
            same(x, y)
        ds = tk.load_torch_dataset(mix, **kw)
        workers = 0 if partition is None else 2
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
        got = list(loader)
        assert len(got) == len(tk.load_numpy_dataset(mix, **kw))
        for x, y in zip(expected, got, strict=False):
            same(x, y)
    if isinstance(sampling, tk.Shuffled) and not sampling.exact:  # grain reads the default
        source = tk.load_grain_source(mix, seed=4, options=options)
        single = tk.load_numpy_dataset(mix, batch_size=None, seed=4, options=options)
        single.set_epoch(1)
        for key, example in zip(source.order(seed=4, epoch=1), single, strict=True):
            same(example, source[int(key)])


@pytest.mark.integration
def test_a_state_resumes_with_another_worker_count(sources):
    torch = pytest.importorskip("torch")
    mix = _mix(sources, weights=[1, 1])
    expected = list(tk.load_numpy_dataset(mix, batch_size=8, seed=9).batches(16))
    numpy_loader = tk.load_numpy_dataset(mix, batch_size=8, seed=9)
    list(numpy_loader.batches(5))
    ds = tk.load_torch_dataset(mix, batch_size=8, seed=9, state=numpy_loader.state_dict())
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
    from tests.readers.test_readers_agree import assert_same, plain

    got = list(loader)
    for x, y in zip(expected[5:], got, strict=False):
        assert_same(plain(x), plain(y), "batch")
    assert len(got) == len(numpy_loader) - 5


def test_bad_mixes_are_refused_in_one_line(sources, tmp_path):
    a, b = sources
    cases = [
        (lambda: tk.Mix([a, b], weights=[1, -1]), OptionError, "must be a finite number"),
        (lambda: tk.Mix([a, b], weights=[0, 0]), OptionError, "sum to 0"),
        (lambda: tk.Mix([a, b], weights=[1]), OptionError, "1 weights for 2 sources"),
        (lambda: tk.Mix([a, b], weights=[1, float("nan")]), OptionError, "finite"),
        (lambda: tk.Mix(a), OptionError, "list of datasets"),
        (lambda: tk.Mix([]), OptionError, "at least one source"),
        (lambda: tk.Mix([a, 3]), OptionError, "a dataset path or"),
        (lambda: tk.Mix([a], epoch_records=0), OptionError, "epoch_records"),
        (lambda: tk.load_numpy_dataset(tk.Mix([a, (b, "test")]), batch_size=4),
         DatasetError, r"Mix source .*b: split 'test': no split 'test'"),
        (lambda: tk.load_numpy_dataset(tk.Mix([a, b]), sampling=tk.PK(2, 2)), OptionError,
         "samples one dataset's classes"),
        (lambda: tk.export(tk.Mix([a, b]), tmp_path / "out", to="parquet"), OptionError,
         "read by load_numpy_dataset"),
    ]
    for make, error, text in cases:
        with pytest.raises(error, match=text) as caught:
            make()
        assert "\n" not in str(caught.value)


def test_sources_must_hold_the_features_read_alike(sources, tmp_path):
    a, _ = sources
    other = tmp_path / "other"
    schema = tk.Schema({**MIXED_SCHEMA, "f": tk.Scalar("float64", float32_storage=True)})
    rng = np.random.default_rng(1)
    tk.write_dataset((mixed_row(i, rng) for i in range(5)), other, schema, progress=False)
    with pytest.raises(DatasetError, match="feature 'f' differs"):
        tk.load_numpy_dataset(tk.Mix([a, other]), batch_size=4)
    # Reading only the features both hold alike is fine.
    loader = tk.load_numpy_dataset(tk.Mix([a, other]), batch_size=4,
                                   options=tk.DecodeOptions(features=["raw", "label"]))
    assert len(next(iter(loader))["label"]) == 4
    fewer = tmp_path / "fewer"
    tk.write_dataset(({"raw": np.zeros((2, 2, 3), np.uint8)} for _ in range(3)), fewer,
                     tk.Schema({"raw": tk.Image("raw", channels=3)}), progress=False)
    with pytest.raises(DatasetError, match="has feature"):
        tk.load_numpy_dataset(tk.Mix([a, fewer]), batch_size=4)
    compressed = tmp_path / "gz"
    tk.write_dataset((mixed_row(i, rng) for i in range(5)), compressed, MIXED_SCHEMA,
                     shards=tk.ShardOptions(compression="gzip"), progress=False)
    with pytest.raises(DatasetError, match="compressed"):
        tk.load_numpy_dataset(tk.Mix([a, compressed]), batch_size=4)


@pytest.mark.integration
def test_tf_data_refuses_a_buffer_shuffle_of_a_mix(sources):
    pytest.importorskip("tensorflow")
    with pytest.raises(OptionError, match="leave buffer= out"):
        tk.load_tf_dataset(_mix(sources), batch_size=4, sampling=tk.Shuffled(buffer=100))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 5)), min_size=1, max_size=4),
       st.integers(0, 2**63 - 1), st.integers(0, 1000), st.integers(1, 400),
       st.sampled_from(["block", "global", False]), st.data())
def test_any_mix_reads_whole_passes_of_each_source(parts, seed, epoch, records, mode, data):
    sizes = [n for n, _ in parts]
    weights = [w if n else 0 for n, w in parts]
    assume(sum(weights) > 0)
    order = _order(sizes, weights, seed=seed, epoch=epoch, records=records, mode=mode)
    sources, ids = order.ids(np.arange(records))
    assert np.array_equal(np.bincount(sources, minlength=len(sizes)), order.counts())
    for j, n in enumerate(sizes):
        mine = ids[sources == j]
        assert weights[j] or not len(mine)
        for k in range(0, len(mine), max(n, 1)):  # each pass a permutation (the last: part)
            taken = mine[k : k + n].tolist()
            assert len(set(taken)) == len(taken) and all(0 <= i < n for i in taken)
    picked = data.draw(st.lists(st.integers(0, records - 1), max_size=20))
    again = _order(sizes, weights, seed=seed, epoch=epoch, records=records, mode=mode)
    found = again.ids(np.array(picked, np.int64))
    assert found[0].tolist() == sources[picked].tolist()
    assert found[1].tolist() == ids[picked].tolist()


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.lists(st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 10**20), st.booleans(),
    st.text(max_size=3), st.none()), max_size=4), st.text(max_size=5)),
    st.one_of(st.none(), st.integers(-3, 10**6), st.floats(), st.booleans()))
def test_any_weights_and_epoch_make_a_mix_or_one_line_refusing_it(weights, epoch_records):
    refused: OptionError | None = None
    try:
        mix = tk.Mix(["a", ("b", "train[:5]")], weights=weights, epoch_records=epoch_records)
    except OptionError as err:
        refused = err
    if refused is not None:
        assert "\n" not in str(refused) and str(refused).startswith("Mix")
    else:
        assert mix.weights is None or (len(mix.weights) == 2 and sum(mix.weights) > 0)


def test_a_source_naming_a_split_twice_reads_it_twice(sources):
    a, b = sources
    loader = tk.load_numpy_dataset(tk.Mix([a, (b, "val+val")], weights=[1, 1]),
                                   batch_size=None, seed=2)
    plan = loader.loader.plan
    val = tk.load_grain_source(b, "val")
    assert sum(plan.counts) == len(loader.loader.records) == 37 + 2 * len(val)
    assert len(plan.classes) == len(plan.files) == len(plan.counts)
    for example in loader:
        record = int(example["__id"])
        if record >= 37:
            expected = val[(record - 37) % len(val)]
            assert np.array_equal(example["fixed"], expected["fixed"])


@pytest.mark.parametrize("written", ["gzip", "files_by_glob"])
def test_compressed_sources_and_files_someone_else_wrote_mix_alike(tmp_path, written):
    """Sources that are gzip datasets, or bare TFRecord files read by glob (schema inferred,
    no manifest): each mixed example is its source's record read alone."""
    rng = np.random.default_rng(3)
    schema = tk.Schema({"n": tk.Scalar("int64"), "v": tk.Tensor((3,), "float32")})
    paths = []
    for name, count in (("x", 23), ("y", 41)):
        rows = [{"n": int(rng.integers(1 << 40)), "v": rng.normal(size=3).astype(np.float32)}
                for _ in range(count)]
        out = tmp_path / name
        if written == "gzip":
            tk.write_dataset(rows, out, schema, shards=tk.ShardOptions(compression="gzip"),
                             progress=False)
            paths.append(out)
        else:
            out.mkdir()
            with tk.RecordWriter(out / "part-0.tfrecord") as writer:
                for row in rows:
                    writer.write(schema.encode(row))
            paths.append(str(out / "*.tfrecord"))
    mix = tk.Mix(paths, weights=[1, 1])
    alone = [tk.load_grain_source(p) for p in paths]
    examples = tk.load_numpy_dataset(mix, batch_size=None, seed=5)
    seen = 0
    for example in examples:
        record = int(example["__id"])
        source, local = (0, record) if record < 23 else (1, record - 23)
        expected = alone[source][local]
        assert example["n"] == expected["n"] and np.array_equal(example["v"], expected["v"])
        seen += 1
    assert seen == 64


@pytest.mark.parametrize(("weights", "want"), [
    ([np.float32(0.25), np.float64(0.75)], [0.25, 0.75]), ([1e308, 1e308], [0.5, 0.5]),
    ([np.int64(3), 1], [0.75, 0.25]), ([10**400, 10**400], None)])
def test_numpy_and_huge_weights_mix_by_their_ratio(weights, want):
    from tfrecordkit.sampling import mix_weights

    if want is None:
        with pytest.raises(OptionError, match="too large for a float") as err:
            mix_weights(weights, [10, 10], ["a", "b"])
        assert "\n" not in str(err.value)
        return
    fractions = mix_weights(weights, [10, 10], ["a", "b"])
    assert np.allclose(fractions, want) and abs(sum(fractions) - 1) < 1e-12


def test_a_source_given_twice_is_counted_twice(sources):
    a, _ = sources
    loader = tk.load_numpy_dataset(tk.Mix([a, a], weights=[1, 1]), batch_size=None, seed=2)
    counts = loader.mix.counts(7, 0)
    assert len(counts) == 2 and sum(counts.values()) == loader.mix.records


@pytest.fixture(scope="module")
def detection_exports(tmp_path_factory):
    """Three detection datasets of one taxonomy: ``a`` (cat, dog), ``b`` the same categories
    in the other order, ``c`` one category more (owl); each object's category is written as
    its name, so a reader's label names can be checked against what was written."""
    root = tmp_path_factory.mktemp("detection")
    made = {}
    for tag, names in (("a", ["cat", "dog"]), ("b", ["dog", "cat"]),
                       ("c", ["cat", "dog", "owl"])):
        rng = np.random.default_rng(len(made))
        rows = []
        for k in range(12):
            n = int(rng.integers(0, 4))
            labels = [names[int(i)] for i in rng.integers(0, len(names), n)]
            rows.append({"image/object": {"boxes": [[0.1, 0.1, 0.5, 0.6]] * n,
                                          "labels": labels},
                         "name": f"{tag}{k}", "written": ",".join(labels)})
        schema = tk.Schema({"image/object": tk.Boxes(names), "name": tk.Text(),
                            "written": tk.Text()})
        tk.write_dataset(rows, root / tag, schema, progress=False)
        made[tag] = root / tag
    return made


def _label_names(batch, names):
    labels = batch["image/object"]["labels"]
    values, lengths = np.asarray(labels["values"]), np.asarray(labels["lengths"])[:, 0]
    return [",".join(names[int(i)] for i in values[k, :lengths[k]])
            for k in range(len(lengths))]


def _texts(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in np.asarray(values)]


@pytest.mark.integration
def test_a_mix_joins_box_categories_by_name_in_every_reader(detection_exports):
    """Two exports of one taxonomy in another order, and one with a category more, mix:
    the joined names are the first's then each new one, and every box's label is its
    written category's joined id, in NumPy, tf.data and grain (padding stays 0)."""
    pytest.importorskip("tensorflow")
    mix = tk.Mix([detection_exports[t] for t in "abc"], weights=[1, 1, 1])
    loader = tk.load_numpy_dataset(mix, batch_size=8, seed=3, sampling=tk.InOrder())
    names = loader.plan.schema["image/object"].names
    assert names == ("cat", "dog", "owl")
    seen = 0
    for batch in loader:
        assert _label_names(batch, names) == _texts(batch["written"])
        labels = batch["image/object"]["labels"]
        pad = np.arange(labels["values"].shape[1]) >= labels["lengths"][:, :1]
        assert (labels["values"][pad] == 0).all()
        seen += len(batch["written"])
    assert seen == 36
    for batch in tk.load_tf_dataset(mix, batch_size=8, seed=3, sampling=tk.InOrder()):
        plain = {k: (v.numpy() if hasattr(v, "numpy") else
                     {p: {q: w.numpy() for q, w in x.items()} for p, x in v.items()})
                 for k, v in batch.items()}
        assert _label_names(plain, names) == _texts(plain["written"])
    source = tk.load_grain_source(mix, seed=3)
    for key in range(len(source)):
        example = source[key]
        batch = source.collate([example])
        assert _label_names(batch, names) == _texts(batch["written"])
