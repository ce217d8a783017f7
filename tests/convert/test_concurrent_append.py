"""Two appends at once never lose a record: each attempt's shards have names of their own, the
lock is taken before the manifest is read, and the manifest is replaced only if it is still
the one read. Either both appends land, or one is refused and the other's records are all
there."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

import tfrecordkit as tk
from tests.racing import Appender, copy_dataset, image_folder, stored_keys
from tfrecordkit.store import verify_paths


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("race")
    base = image_folder(root / "base", "base", 20, seed=0)
    a = image_folder(root / "a", "a", 40, seed=1)
    b = image_folder(root / "b", "b", 40, seed=2)
    tk.convert(root / "base", root / "dataset", split={"train": 0.8, "val": 0.2}, workers=1)
    return root, {"base": base, "a": a, "b": b}


def check_outcome(dataset: str, keys: dict[str, set[str]], results: dict[str, dict]) -> str:
    """Every record of the appends that landed, each once, and none of a refused one's."""
    stored = stored_keys(dataset)
    assert len(stored) == len(set(stored)), "a record stored twice"
    landed = {name for name, result in results.items() if "added" in result}
    for name, result in results.items():
        if name not in landed:
            assert "another conversion is writing here" in result["refused"] or \
                "another writer replaced it" in result["refused"], result
    expected = set(keys["base"]).union(*(keys[name] for name in landed))
    assert {s.rsplit("/", 2)[-2] + "/" + s.rsplit("/", 1)[-1] for s in stored} == expected
    assert landed, "both appends refused"
    assert verify_paths([dataset]).ok
    return "both" if len(landed) == 2 else "one"


@pytest.mark.integration
def test_two_processes_appending_at_many_offsets_lose_nothing(inputs, tmp_path):
    root, keys = inputs
    first, second = Appender(), Appender()
    outcomes: Counter[str] = Counter()
    try:
        for i, delay in enumerate([0.0, 0.02, 0.05, 0.1, 0.15, 0.25, 0.4, 0.8]):
            dataset = copy_dataset(root / "dataset", tmp_path / f"ds{i}")
            first.start(dataset, root / "a", 0.0)
            second.start(dataset, root / "b", delay)
            results = {"a": first.result(), "b": second.result()}
            outcomes[check_outcome(dataset, keys, results)] += 1
    finally:
        first.close()
        second.close()
    assert outcomes["one"] + outcomes["both"] == 8


def test_two_threads_appending_at_once_lose_nothing(inputs, tmp_path):
    root, keys = inputs
    dataset = copy_dataset(root / "dataset", tmp_path / "ds")
    results: dict[str, dict] = {}
    start = threading.Barrier(2)

    def run(name: str) -> None:
        start.wait()
        try:
            results[name] = {"added": tk.append(dataset, root / name, workers=1).added}
        except tk.DatasetError as err:
            results[name] = {"refused": str(err)}

    threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    check_outcome(dataset, keys, results)


def test_an_append_whose_manifest_was_replaced_meanwhile_is_refused_and_removes_its_shards(
        inputs, tmp_path, monkeypatch):
    """A writer that ignored the lock (another tool, an older release) replaced the manifest
    while this append ran: the append is refused, its own shards removed, the other's kept."""
    root, keys = inputs
    dataset = copy_dataset(root / "dataset", tmp_path / "ds")
    other = copy_dataset(root / "dataset", tmp_path / "other")
    tk.append(other, root / "b", workers=1)
    from tfrecordkit.engines import _driver

    finalize = _driver._finalize

    def replaced_first(*args, **kwargs):
        # The other writer's commit lands between this append's shards and its manifest.
        for name in (tmp_path / "other").iterdir():
            if "-a0001x" in name.name:
                (tmp_path / "ds" / name.name).write_bytes(name.read_bytes())
        (tmp_path / "ds" / "dataset.json").write_bytes(
            (tmp_path / "other" / "dataset.json").read_bytes())
        return finalize(*args, **kwargs)

    monkeypatch.setattr(_driver, "_finalize", replaced_first)
    before = sorted(p.name for p in (tmp_path / "ds").iterdir())
    with pytest.raises(tk.DatasetError, match="another writer replaced it"):
        tk.append(dataset, root / "a", workers=1)
    monkeypatch.undo()
    theirs = {p.name for p in (tmp_path / "other").iterdir() if "-a0001x" in p.name}
    after = {p.name for p in (tmp_path / "ds").iterdir()}
    assert theirs and after == {*before, *theirs}  # its own shards gone, theirs kept
    check_outcome(dataset, keys, {"b": {"added": 40}, "a": {"refused": "another writer "
                                                            "replaced it"}})


def test_an_append_that_read_the_manifest_before_another_finished_loses_nothing(
        inputs, tmp_path, monkeypatch):
    """The interleaving that lost records: B reads the manifest, A appends and finishes, then
    B writes. B now holds the lock from before its read, so A is refused while B runs."""
    root, keys = inputs
    dataset = copy_dataset(root / "dataset", tmp_path / "ds")
    from tfrecordkit.job import AppendTarget

    load = AppendTarget.load.__func__
    a_done = threading.Event()
    results: dict[str, dict] = {}

    def paused(cls, *args, **kwargs):
        target = load(cls, *args, **kwargs)
        if threading.current_thread().name == "b":
            a_thread.start()
            assert a_done.wait(60)
        return target

    def run(name: str) -> None:
        try:
            results[name] = {"added": tk.append(dataset, root / name, workers=1).added}
        except tk.DatasetError as err:
            results[name] = {"refused": str(err)}
        if name == "a":
            a_done.set()

    monkeypatch.setattr(AppendTarget, "load", classmethod(paused))
    a_thread = threading.Thread(target=run, args=("a",), name="a")
    b_thread = threading.Thread(target=run, args=("b",), name="b")
    b_thread.start()
    b_thread.join()
    a_thread.join()
    assert check_outcome(dataset, keys, results) == "one"
    assert "another conversion is writing here" in results["a"]["refused"]
