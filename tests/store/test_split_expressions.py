"""Split expressions: ``"train+val"``, ``"train[:10%]"``, ``"train[-1000:]"`` and lists of them,
with TFDS's ``ReadInstruction`` arithmetic (checked against TFDS itself on drawn slices), read
by every reader, ``open_split`` and P×K, in a stable order that shuffles, partitions and
resumes like a split's; a bad expression is one line naming it and the splits there are."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecordkit as tk
from tfrecordkit.errors import DatasetError, OptionError
from tfrecordkit.store import SplitPart, resolve_split

COUNTS = {"train": 71, "val": 29}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("expr") / "ds"
    schema = tk.Schema({"n": tk.Scalar("int64"), "label": tk.ClassLabel(list("abc"))})
    tk.write_dataset(({"n": i, "label": i % 3} for i in range(100)), path, schema,
                     split={"train": 0.71, "val": 0.29}, stratify=False,
                     shards=tk.ShardOptions(num_shards=3), progress=False)
    manifest = tk.load_manifest(path)
    assert {s: manifest.num_records(s) for s in manifest.splits} == COUNTS
    return path


def _stored(path, split: str) -> list[int]:
    """A whole split's values in stored order."""
    return [int(v) for b in tk.load_numpy_dataset(path, split, batch_size=1000,
                                                   sampling=tk.InOrder()) for v in b["n"]]


# -- TFDS's arithmetic -------------------------------------------------------------------


def _tfds_parts(expression: str, counts: dict[str, int]) -> list[tuple[str, int, int]]:
    splits = pytest.importorskip("tensorflow_datasets.core.splits")
    infos = {name: splits.SplitInfo(name=name, shard_lengths=[n], num_bytes=0)
             for name, n in counts.items()}
    parts = splits.AbstractSplit.from_spec(expression).to_absolute(infos)
    return [(p.splitname, p.from_ or 0, counts[p.splitname] if p.to is None else p.to)
            for p in parts]


def _ours(expression: str, counts: dict[str, int]) -> list[tuple[str, int, int]]:
    return [(p.split, p.start, p.stop) for p in resolve_split(expression, counts)]


_bound = st.one_of(st.none(), st.integers(-130, 130).map(str),
                   st.floats(-100, 100, allow_nan=False).map(lambda f: f"{f:.3g}%"),
                   st.integers(-100, 100).map(lambda i: f"{i}%"))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["train", "val"]), _bound, _bound), min_size=1,
                max_size=3),
       st.integers(0, 120), st.integers(1, 250))
def test_slices_resolve_as_tfds_resolves_them(pieces, train, val):
    """Percent bounds rounded half to even, negative bounds from the end, a bound past the
    split an error, ``train+train`` twice: what TFDS's ``ReadInstruction`` gives (TFDS
    reads ``from > to`` as nothing, as here)."""
    counts = {"train": train, "val": val}
    texts = []
    for name, a, b in pieces:
        if a is None and b is None:
            texts.append(name)
        elif a is not None and b is not None and a.endswith("%") != b.endswith("%"):
            texts.append(f"{name}[{a}:{b.rstrip('%')}%]" if a.endswith("%") else name)
        else:
            texts.append(f"{name}[{a or ''}:{b or ''}]")
    expression = "+".join(texts)
    try:
        want = _tfds_parts(expression, counts)
    except ValueError:
        with pytest.raises(DatasetError, match=re.escape(f"split {expression!r}")):
            _ours(expression, counts)
        return
    got = _ours(expression, counts)
    assert [(s, a, max(a, b)) for s, a, b in want] == got


@pytest.mark.parametrize(("expression", "parts"), [
    ("train", [("train", 0, 71)]),
    ("train+val", [("train", 0, 71), ("val", 0, 29)]),
    ("train[:10%]", [("train", 0, 7)]),  # 7.1 rounds to 7
    ("val[:50%]", [("val", 0, 14)]),  # 14.5 rounds half to even: 14
    ("train[-10:]", [("train", 61, 71)]),
    ("train[10%:20%] + val", [("train", 7, 14), ("val", 0, 29)]),
    ("train+train", [("train", 0, 71), ("train", 0, 71)]),
    ("all", [("train", 0, 71), ("val", 0, 29)]),
])
def test_written_cases_match_tfds(expression, parts):
    assert _ours(expression, COUNTS) == parts == [
        (s, a, max(a, b)) for s, a, b in _tfds_parts(expression, COUNTS)]


@pytest.mark.parametrize(("expression", "says"), [
    ("train+test", r"split 'train\+test': no split 'test'; the dataset has train \(71 "
                   r"records\), val \(29 records\)"),
    ("train[:200]", r"split 'train\[:200\]': \[:200\] reaches past 'train', which holds 71"),
    ("train[-72:]", "reaches past 'train'"),
    ("train[a:b]", r"\[a:b\] is not a slice"),
    ("train[5]", r"\[5\] is not a slice"),
    ("train[1.5:3]", "'1.5' is not a record position"),
    ("train val", "cannot read 'train val'"),
    ("train[:%]", r"\[:%\] has a % with no number before it"),  # a typo for [:10%]
    ("train[%:50%]", "has a % with no number"),
])
def test_a_bad_expression_is_one_line_naming_it(expression, says):
    with pytest.raises(DatasetError, match=says) as caught:
        resolve_split(expression, COUNTS)
    assert "\n" not in str(caught.value)


def test_a_list_is_the_union_and_an_empty_one_is_refused():
    assert resolve_split(["train[:2]", "val"], COUNTS) == (SplitPart("train", 0, 2),
                                                           SplitPart("val", 0, 29))
    with pytest.raises(DatasetError, match="give a split's name"):
        resolve_split([], COUNTS)


# -- reading an expression ------------------------------------------------------------------


@pytest.mark.integration  # the tf.data and torch loaders import their frameworks
def test_every_reader_reads_the_parts_in_order(dataset):
    """In order, an expression reads its parts one after another, each in its split's stored
    order: the NumPy, PyTorch, tf.data and grain readers and ``open_split`` alike."""
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from tfrecordkit.readers.torch_data import load_torch_dataset

    train, val = _stored(dataset, "train"), _stored(dataset, "val")
    expression = "train[10%:20%]+val[-5:]+train[:3]"
    want = train[7:14] + val[-5:] + train[:3]
    kwargs = {"batch_size": 4, "sampling": tk.InOrder()}
    for name, batches in [
            ("numpy", tk.load_numpy_dataset(dataset, expression, **kwargs)),
            ("torch", load_torch_dataset(dataset, expression, **kwargs)),
            ("tf.data", tk.load_tf_dataset(dataset, expression, **kwargs))]:
        assert [int(v) for b in batches for v in np.asarray(b["n"])] == want, name
    source = tk.load_grain_source(dataset, expression)
    assert [int(source[i]["n"]) for i in range(len(source))] == want
    records = tk.open_split(dataset, expression)
    schema = tk.load_manifest(dataset).schema
    assert [schema.decode(records[i])["n"] for i in range(len(records))] == want
    assert _stored(dataset, ["train", "val"]) == _stored(dataset, "train+val") == train + val
    assert _stored(dataset, "train+train") == train + train  # read twice, as TFDS does


@pytest.mark.integration  # tf.data imports TensorFlow
def test_an_expression_shuffles_partitions_and_resumes_like_a_split(dataset):
    """Shuffled, every record of the expression once an epoch (twice for a split named
    twice); two ranks share it; a state resumes it exactly and is refused by another
    expression (its fingerprint differs)."""
    pytest.importorskip("tensorflow")
    expression = "train[:50%]+val"
    want = sorted(_stored(dataset, expression))
    loader = tk.load_numpy_dataset(dataset, expression, batch_size=8, seed=3)
    assert sorted(int(v) for b in loader for v in b["n"]) == want
    ranks = [v for r in range(2) for b in tk.load_tf_dataset(
        dataset, expression, batch_size=8, seed=3, partition=tk.Partition(r, 2))
        for v, ok in zip(b["n"].numpy().tolist(), b["__valid"].numpy(), strict=True) if ok]
    assert sorted(ranks) == want
    walk = iter(loader)
    for _ in range(2):
        next(walk)
    state = loader.state_dict()
    rest = [b["n"].tolist() for b in walk]
    resumed = tk.load_tf_dataset(dataset, expression, batch_size=8, seed=3, state=state)
    assert [b["n"].numpy().tolist() for b in resumed] == rest
    with pytest.raises(tk.StateError, match=r"saved reading split 'train\[:50%\]\+val'"):
        tk.load_numpy_dataset(dataset, "train[:40%]+val", batch_size=8, seed=3, state=state)
    with pytest.raises(OptionError, match=r"Shuffled\(buffer=n\) reads whole files"):
        tk.load_tf_dataset(dataset, expression, batch_size=8,
                           sampling=tk.Shuffled(buffer=16))


def test_pk_batches_draw_from_the_expressions_records(dataset):
    """P×K over a slice: every record drawn is one of the slice's, under its own label."""
    expression = "train[:30%]"
    allowed = set(_stored(dataset, expression))
    for batch in tk.load_numpy_dataset(dataset, expression, sampling=tk.PK(3, 2), seed=1):
        assert set(batch["n"].tolist()) <= allowed
        assert (batch["n"] % 3 == batch["label"]).all()


def test_show_report_and_the_cli_take_an_expression(dataset, tmp_path, capsys):
    """``tfrecordkit show`` and ``report`` sample an expression's records; a bad one is the
    one-line error, exit status 1."""
    from tfrecordkit.cli import main

    assert main(["show", str(dataset), "--split", "val[-4:]+train[:2]", "-n", "6",
                 "--out", str(tmp_path / "g.png"), "--json"]) == 0
    assert (tmp_path / "g.png").stat().st_size > 0
    assert main(["report", str(dataset), "--split", "train[:10%]",
                 "--out", str(tmp_path / "r.html")]) == 0
    capsys.readouterr()
    assert main(["show", str(dataset), "--split", "val[-40:]", "--out",
                 str(tmp_path / "h.png")]) == 1  # the dataset cannot be read as asked
    assert "split 'val[-40:]': [-40:] reaches past 'val', which holds 29 records" in (
        capsys.readouterr().err)


def test_a_split_taken_twice_is_located_once(dataset, monkeypatch):
    """Two slices of one split, or a split named twice: its shards and indexes are read once."""
    import tfrecordkit.store._split as split_module

    calls = []
    real = split_module.shard_paths
    monkeypatch.setattr(split_module, "shard_paths",
                        lambda path, manifest, split, **kw: calls.append(split) or real(
                            path, manifest, split, **kw))
    records = tk.open_split(dataset, "train[:5]+train[-5:]+train")
    assert len(records) == 5 + 5 + 71 and calls == ["train"]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="trainval[]:%+-_.0123456789 e", max_size=30) | st.text(max_size=20))
def test_any_text_is_parts_or_one_clear_error(text):
    """Untrusted expressions (a CLI argument, a config value): parts within the splits, or a
    DatasetError naming the expression; never another exception."""
    try:
        parts = resolve_split(text, COUNTS)
    except DatasetError as err:
        problem = str(err)
    else:
        problem = ""
    if problem:
        assert "split" in problem and "\n" not in problem
        return
    for part in parts:
        assert 0 <= part.start <= part.stop <= COUNTS[part.split]
