"""Datasets that grow: ``append`` against the oracle of converting everything at once (split
membership and class names per input), inputs already there left out, a changed file under a
known key refused, a killed append at several points, states from before refused, equal
records found within and across splits."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecordkit as tk
from tests.datasets import digits_folder
from tests.wire import KEYS, field, map_entry
from tfrecordkit import DatasetError, SchemaError, SourceError, StateError
from tfrecordkit.cli import main
from tfrecordkit.store import (
    content_digest,
    find_duplicates,
    load_manifest,
    verify_paths,
)

SPLIT = {"train": 0.7, "val": 0.2, "test": 0.1}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """The whole folder, and last week's part of it: no class 3, 8 or 9 (so the grown
    dataset numbers them differently from a conversion of everything), every third file
    missing from the others."""
    root = tmp_path_factory.mktemp("grow")
    digits_folder(root / "full", limit_per_class=24)
    for path in (root / "full").rglob("*.png"):
        if path.parent.name not in ("3", "8", "9") and int(path.stem) % 3:
            (root / "old" / path.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, root / "old" / path.parent.name / path.name)
    return root / "full", root / "old"


def placed(dataset: Path) -> dict[str, tuple[str, str]]:
    """Each record's input -> (its split, its class name), read back."""
    manifest = load_manifest(dataset)
    out: dict[str, tuple[str, str]] = {}
    for split in manifest.splits:
        for batch in tk.load_numpy_dataset(dataset, split=split, batch_size=16,
                                           sampling=tk.InOrder(),
                                           options=tk.DecodeOptions(provenance=True)):
            for source, label in zip(batch["__source"], batch["label"], strict=True):
                key = source.decode() if isinstance(source, bytes) else str(source)
                assert key not in out, f"{key} read twice"
                out[key] = (split, manifest.class_names[int(label)])
    return out


@pytest.mark.parametrize(("layout", "seed"), [("mixed", 0), ("mixed", 11), ("per_class", 3)])
def test_convert_then_append_places_every_input_as_converting_everything(folders, tmp_path,
                                                                         layout, seed):
    full, old = folders
    options = tk.ShardOptions(layout=layout, seed=seed, shard_size=8192)
    everything = tk.convert(full, tmp_path / "all", split=SPLIT, shards=options, workers=1)
    tk.convert(old, tmp_path / "grown", split=SPLIT, shards=options, workers=1)
    before = placed(tmp_path / "grown")
    result = tk.append(tmp_path / "grown", full, workers=1)

    assert result.added == everything.records - len(before) and result.present == len(before)
    assert result.part == 1
    grown = placed(tmp_path / "grown")
    assert grown == placed(tmp_path / "all")
    assert {k: grown[k] for k in before} == before  # nothing moved
    manifest = load_manifest(tmp_path / "grown")
    # Ids never renumbered: the old ones first, the new classes after, in the source's order.
    assert manifest.class_names == ("0", "1", "2", "4", "5", "6", "7", "3", "8", "9")
    assert all(s.file.startswith(("train-", "val-", "test-"))
               for split in manifest.splits.values() for s in split.shards)
    new = [s for split in manifest.splits.values() for s in split.shards if "-a0001x" in s.file]
    assert sum(s.records for s in new) == result.added
    if layout == "per_class":
        assert all(s.class_id is not None and f"c{s.class_id:05d}" in s.file for s in new)
    assert verify_paths([str(tmp_path / "grown")]).ok

    again = tk.append(tmp_path / "grown", full, workers=1)  # everything is there now
    assert again.added == 0 and again.present == everything.records
    assert placed(tmp_path / "grown") == grown


def test_a_known_key_with_other_content_is_refused_naming_both(folders, tmp_path):
    full, old = folders
    tk.convert(old, tmp_path / "ds", split=SPLIT, workers=1)
    before = (tmp_path / "ds" / "dataset.json").read_bytes()
    changed = tmp_path / "changed"
    shutil.copytree(old, changed)
    victim = sorted((changed / "1").iterdir())[0]
    shutil.copy(sorted((full / "2").iterdir())[0], victim)  # IMG_0001.JPG, a new photo
    with pytest.raises(SourceError) as err:
        tk.append(tmp_path / "ds", changed, workers=1)
    message = str(err.value)
    assert f"1/{victim.name}" in message and "already in the dataset with other content" in message
    assert ".tfrecord record " in message and "\n" not in message
    assert (tmp_path / "ds" / "dataset.json").read_bytes() == before
    assert not [p for p in os.listdir(tmp_path / "ds") if "-a0001x" in p]

    skipped = tk.append(tmp_path / "ds", changed, workers=1, on_error="skip")
    assert skipped.added == 0 and skipped.manifest.skipped_count == 1
    assert skipped.manifest.skipped[0]["input"].endswith(f"1/{victim.name}")


def test_classes_by_name_subset_superset_and_a_table(tmp_path):
    rows = [{"text": f"t{i}", "label": name} for i, name in enumerate("ab" * 5)]
    schema = tk.Schema({"text": tk.Text(), "label": tk.ClassLabel(["a", "b"])})
    tk.write_dataset(rows, tmp_path / "ds", schema)
    table = tmp_path / "more.csv"
    table.write_text("text,label\n" + "".join(f"n{i},{c}\n" for i, c in enumerate("bcb")))
    with pytest.raises(SourceError, match=r"key '1' is already in the dataset.*Table\(key="):
        tk.append(tmp_path / "ds", tk.Table(table, provenance=False), workers=1)  # rows 1..3
    result = tk.append(tmp_path / "ds", tk.Table(table, provenance=False, key="text"),
                       workers=1)
    assert result.manifest.class_names == ("a", "b", "c")
    got = sorted((str(t), int(label)) for batch in tk.load_numpy_dataset(
        tmp_path / "ds", batch_size=4, sampling=tk.InOrder())
        for t, label in zip(batch["text"], batch["label"], strict=True))
    assert ("n0", 1) in got and ("n1", 2) in got and ("t0", 0) in got and len(got) == 13


def test_a_table_keyed_by_a_column_splits_as_converting_everything(tmp_path):
    header = "id,text,label\n"
    rows = [f"r{i:03d},x{i},{'ab'[i % 2]}\n" for i in range(60)]
    (tmp_path / "old.csv").write_text(header + "".join(rows[::2]))
    (tmp_path / "all.csv").write_text(header + "".join(rows))  # rows inserted between
    (tmp_path / "new.csv").write_text(header + "".join(rows[1::2]))
    options = {"split": {"train": 0.5, "val": 0.5}, "workers": 1}
    tk.convert(tk.Table(tmp_path / "all.csv", key="id"), tmp_path / "all", **options)
    tk.convert(tk.Table(tmp_path / "old.csv", key="id"), tmp_path / "grown", **options)
    tk.append(tmp_path / "grown", tk.Table(tmp_path / "new.csv", key="id"), workers=1)

    def by_id(dataset):
        out = {}
        for split in ("train", "val"):
            for batch in tk.load_numpy_dataset(dataset, split=split, batch_size=8,
                                               sampling=tk.InOrder()):
                out.update({str(i): split for i in batch["id"]})
        return out

    everything = by_id(tmp_path / "all")
    assert by_id(tmp_path / "grown") == everything and len(everything) == 60
    # Keyed by row number instead, the same rows land elsewhere once rows are inserted.
    tk.convert(tk.Table(tmp_path / "old.csv"), tmp_path / "by_row", **options)
    tk.convert(tk.Table(tmp_path / "all.csv"), tmp_path / "all_by_row", **options)
    all_by_row = by_id(tmp_path / "all_by_row")
    moved = {k for k, v in by_id(tmp_path / "by_row").items() if all_by_row[k] != v}
    assert moved  # why key= exists

    (tmp_path / "dup.csv").write_text(header + rows[0] + rows[0])
    with pytest.raises(SourceError, match=r"dup.csv:2.*row 1's key too"):
        tk.convert(tk.Table(tmp_path / "dup.csv", key="id"), tmp_path / "dup", workers=1)


def test_bad_appends_are_one_line_and_change_nothing(folders, tmp_path):
    full, old = folders
    tk.convert(old, tmp_path / "ds", workers=1)
    before = (tmp_path / "ds" / "dataset.json").read_bytes()
    table = tmp_path / "t.csv"
    table.write_text("text,label\nhello,1\n")
    with pytest.raises(SchemaError, match="only") as err:
        tk.append(tmp_path / "ds", table, workers=1)
    assert "\n" not in str(err.value)
    from tfrecordkit.store._lock import OutputLock  # held as another writer would hold it

    holder = OutputLock(tmp_path / "ds")
    holder.acquire()
    try:
        with pytest.raises(DatasetError, match="another conversion is writing here"):
            tk.append(tmp_path / "ds", full, workers=1)
    finally:
        holder.release()
    assert (tmp_path / "ds" / "dataset.json").read_bytes() == before
    with pytest.raises(DatasetError, match=r"no dataset\.json"):
        tk.append(tmp_path / "nothing", full, workers=1)
    assert not (tmp_path / "nothing").exists()  # nor made, nor left locked


KILL = """
import os, signal, sys
import tfrecordkit as tk
from tfrecordkit.store import _shard, _manifest
point = sys.argv[3]
finish, write = _shard._ShardFile.finish, _manifest.Manifest.write
def die(*a, **k):
    os.kill(os.getpid(), signal.SIGKILL)
if point == "first shard":
    def finish_then_die(self, *a, **k):
        info = finish(self, *a, **k)
        die()
    _shard._ShardFile.finish = finish_then_die
elif point == "before manifest":
    _manifest.Manifest.write = die
elif point == "after manifest":
    def write_then_die(self, *a, **k):
        write(self, *a, **k)
        die()
    _manifest.Manifest.write = write_then_die
tk.append(sys.argv[1], sys.argv[2], workers=1)
"""


@pytest.mark.parametrize("point", ["first shard", "before manifest", "after manifest"])
def test_a_killed_append_leaves_the_dataset_readable_and_running_it_again_finishes(
        folders, tmp_path, point):
    full, old = folders
    options = tk.ShardOptions(shard_size=4096)
    tk.convert(old, tmp_path / "ds", split=SPLIT, shards=options, workers=1)
    tk.convert(full, tmp_path / "all", split=SPLIT, shards=options, workers=1)
    before = placed(tmp_path / "ds")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", KILL, str(tmp_path / "ds"), str(full), point],
                          env=env, capture_output=True, timeout=300, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    now = placed(tmp_path / "ds")  # every record once: the old ones, or all of them
    assert now == before if point != "after manifest" else now == placed(tmp_path / "all")
    assert verify_paths([str(tmp_path / "ds")]).ok
    result = tk.append(tmp_path / "ds", full, workers=1)  # again: finishes, duplicates nothing
    assert placed(tmp_path / "ds") == placed(tmp_path / "all")
    assert result.added == len(placed(tmp_path / "all")) - len(now)
    assert result.records == len(placed(tmp_path / "all"))
    listed = {f for s in result.manifest.splits.values() for shard in s.shards
              for f in (shard.file, shard.index, shard.digests)}
    leftovers = [f for f in os.listdir(tmp_path / "ds") if ".tfrecord" in f and f not in listed]
    assert leftovers == []


def test_a_state_from_before_an_append_is_refused(folders, tmp_path):
    full, old = folders
    tk.convert(old, tmp_path / "ds", workers=1)
    loader = tk.load_numpy_dataset(tmp_path / "ds", batch_size=8, seed=1)
    iterator = iter(loader)
    next(iterator)
    state = loader.state_dict()
    pk = tk.load_numpy_dataset(tmp_path / "ds", sampling=tk.PK(2, 2), seed=1)
    pk_state = pk.state_dict()
    tk.append(tmp_path / "ds", full, workers=1)
    for make, saved in ((lambda: tk.load_numpy_dataset(tmp_path / "ds", batch_size=8, seed=1),
                         state),
                        (lambda: tk.load_numpy_dataset(tmp_path / "ds", sampling=tk.PK(2, 2),
                                                       seed=1), pk_state)):
        with pytest.raises(StateError, match="the dataset changed since the state was saved"):
            make().load_state_dict(saved)


def test_equal_records_are_found_within_and_across_splits(folders, tmp_path, capsys):
    _, old = folders
    tk.convert(old, tmp_path / "ds", split=SPLIT, workers=1)
    extra = tmp_path / "extra"
    originals = sorted((old / "1").iterdir())[:2]
    (extra / "1").mkdir(parents=True)
    for i, path in enumerate(originals):
        shutil.copy(path, extra / "1" / f"copy{i}.png")  # same pixels, another name
    tk.append(tmp_path / "ds", extra, split="test", workers=1)
    found = find_duplicates(str(tmp_path / "ds"))
    assert found.group_count == 2 and found.extra_records == 2
    placed_old = placed(tmp_path / "ds")
    across = sum(placed_old[f"1/{p.name}"][0] != "test" for p in originals)
    assert found.across_count == across
    assert all(len(group) == 2 for group in found.groups)
    # Each record named by the input it came from (its __source), so the copies can be found.
    named = sorted(sorted(m["source"].rsplit("/", 2)[-2] + "/" + m["source"].rsplit("/", 1)[-1]
                          for m in group) for group in found.groups)
    assert named == sorted(sorted([f"1/{p.name}", f"1/copy{i}.png"])
                           for i, p in enumerate(originals))
    assert all(m["source"] in line for group, line in zip(found.groups, found.lines(),
                                                          strict=False) for m in group)

    # The same groups from the records themselves (no digests: adopted or older datasets).
    manifest = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    for split in manifest["splits"].values():
        for shard in split["shards"]:
            shard.pop("digests")
    (tmp_path / "ds" / "dataset.json").write_text(json.dumps(manifest))
    again = find_duplicates(str(tmp_path / "ds"))
    assert again.groups == found.groups and len(again.computed) > 0

    assert main(["verify", str(tmp_path / "ds"), "--duplicates", "--json", "-q"]) == 0
    report = json.loads(capsys.readouterr().out)["duplicates"][str(tmp_path / "ds")]
    assert report["groups"] == 2 and report["across_splits"] == across


def test_verify_finds_a_digests_sidecar_that_is_not_its_shards(folders, tmp_path):
    _, old = folders
    tk.convert(old, tmp_path / "ds", split=SPLIT, workers=1)
    manifest = load_manifest(tmp_path / "ds")
    train, val = manifest.split("train").shards[0], manifest.split("val").shards[0]
    data = bytearray((tmp_path / "ds" / train.digests).read_bytes())
    data[8] ^= 1  # record 0's content digest
    (tmp_path / "ds" / train.digests).write_bytes(bytes(data))
    problems = list(verify_paths([str(tmp_path / "ds")]).problems)
    assert any(train.digests in p and "record 0's content digest differs" in p
               for p in problems)
    (tmp_path / "ds" / val.digests).write_bytes(b"\0" * 5)
    problems = list(verify_paths([str(tmp_path / "ds")]).problems)
    assert any(val.digests in p and "not this shard's digests" in p for p in problems)


def test_the_cli_appends_and_says_what_it_left_out(folders, tmp_path, capsys):
    full, old = folders
    assert main(["convert", str(old), str(tmp_path / "ds"), "-q", "--split",
                 "train=0.8,val=0.2"]) == 0
    capsys.readouterr()
    assert main(["append", str(tmp_path / "ds"), str(full), "-q", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    old_count = sum(1 for _ in old.rglob("*.png"))
    assert out["appended"] == {"records": out["records"] - old_count,
                               "already_present": old_count, "part": 1}
    assert main(["append", str(tmp_path / "ds"), str(full), "-q"]) == 0
    assert "appended 0 records" in capsys.readouterr().out


@st.composite
def entries_and_source(draw):
    keys = draw(st.lists(KEYS.filter(lambda k: k != "__source"), max_size=5, unique=True))
    entries = [field(1, 2, draw(map_entry(key, False))[0]) for key in keys]
    source = field(1, 2, draw(map_entry("__source", False))[0])
    return entries, source, draw(st.integers(0, len(entries)))


@settings(max_examples=300, deadline=None)
@given(entries_and_source())
def test_the_content_digest_leaves_out_provenance_wherever_it_is(drawn):
    """Arbitrary valid Example encodings (any entry order, packed or not): the digest is the
    same with and without a ``__source`` entry, wherever it is; other entries count."""
    entries, source, at = drawn
    plain = field(1, 2, b"".join(entries))
    sourced = field(1, 2, b"".join([*entries[:at], source, *entries[at:]]))
    assert content_digest(plain) == content_digest(sourced)
    if entries:
        assert content_digest(field(1, 2, b"".join(entries[1:]))) != content_digest(plain)


def test_records_as_numpy_arrays_match_after_append(folders, tmp_path):
    """Pixels read from appended shards are the files' pixels."""
    full, old = folders
    tk.convert(old, tmp_path / "ds", workers=1)
    tk.append(tmp_path / "ds", full, workers=1)
    from PIL import Image

    seen = 0
    for batch in tk.load_numpy_dataset(tmp_path / "ds", batch_size=32, sampling=tk.InOrder(),
                                       options=tk.DecodeOptions(provenance=True)):
        for image, source in zip(batch["image"], batch["__source"], strict=True):
            name = source.decode() if isinstance(source, bytes) else str(source)
            want = np.asarray(Image.open(full / name))
            assert np.array_equal(image[..., 0], want)
            seen += 1
    assert seen == sum(1 for _ in full.rglob("*.png"))


def test_the_guides_growing_a_dataset_block_runs_as_written(tmp_path, monkeypatch):
    """docs/guide.md's "Growing a dataset" code, run in a folder holding what it names."""
    import re

    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    section = guide[guide.index("## Growing a dataset"):]
    block = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)
    monkeypatch.chdir(tmp_path)
    digits_folder(tmp_path / "all", limit_per_class=10)
    for path in (tmp_path / "all").rglob("*.png"):  # last week's folder: 8 classes
        if path.parent.name not in ("8", "9") and int(path.stem) % 2:
            (tmp_path / "photos" / path.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, tmp_path / "photos" / path.parent.name / path.name)
    code = block.split("# This week")
    (tmp_path / "labels.csv").write_text("id,text,label\n" + "".join(
        f"r{i},t{i},{'ab'[i % 2]}\n" for i in range(20)))
    (tmp_path / "labels_week2.csv").write_text("id,text,label\n" + "".join(
        f"r{i},t{i},{'abc'[i % 3]}\n" for i in range(20, 30)))
    namespace: dict = {}
    exec(compile(code[0], "guide (growing, before)", "exec"), namespace)
    shutil.rmtree(tmp_path / "photos")
    shutil.copytree(tmp_path / "all", tmp_path / "photos")  # the folder, a week later
    exec(compile("# This week" + code[1], "guide (growing)", "exec"), namespace)
    assert namespace["result"].added == 100 - namespace["result"].present
    assert load_manifest(tmp_path / "labels_ds").class_names == ("a", "b", "c")
    # Nothing was stored twice: the inputs already there were left out, not appended again.
    assert namespace["found"].group_count == 0 and namespace["found"].records == 100


def test_records_keyed_by_a_feature_append_as_writing_everything_at_once(tmp_path):
    """Python records keyed by an id feature: writing them all, and writing some then
    appending the rest, put every record in the same split; repeated ids are refused."""
    schema = tk.Schema({"id": tk.Text(), "x": tk.Scalar("float32"),
                        "label": tk.ClassLabel(["a", "b", "c"])})
    rows = [{"id": f"u{i:03d}", "x": i / 4, "label": "abc"[i % 3]} for i in range(90)]
    split = {"train": 0.6, "val": 0.4}
    tk.write_dataset(rows, tmp_path / "all", schema, key="id", split=split, workers=1)
    tk.write_dataset(rows[::2], tmp_path / "grown", schema, key="id", split=split, workers=1)
    result = tk.append(tmp_path / "grown", tk.Records(rows[1::2], schema, key="id"),
                       workers=1)
    assert result.added == 45 and result.present == 0

    def splits(path):
        return {str(i): name for name in ("train", "val")
                for b in tk.load_numpy_dataset(path, split=name, batch_size=10,
                                               sampling=tk.InOrder()) for i in b["id"]}

    assert splits(tmp_path / "grown") == splits(tmp_path / "all") and len(splits(
        tmp_path / "all")) == 90
    again = tk.append(tmp_path / "grown", tk.Records(rows, schema, key="id"), workers=1)
    assert again.added == 0 and again.present == 90
    with pytest.raises(SourceError, match=r"key 'u000' .* is record 0's too"):
        tk.write_dataset([rows[0], rows[0]], tmp_path / "dup", schema, key="id", workers=1)
    with pytest.raises(SourceError, match="key 'nope' is not a feature"):
        tk.Records(rows, schema, key="nope")


def test_an_append_keeps_what_the_schema_says_of_the_old_records(tmp_path):
    """The dataset's images vary in size and format; the appended ones all agree. The new
    manifest still says what holds for every record (no size or format pinned by the new
    ones alone), and every record reads; a dataset whose images all had one size grows to a
    variable size with images of another, as converting everything at once describes it."""
    from PIL import Image as Pil

    def image(path, size, fmt):
        path.parent.mkdir(parents=True, exist_ok=True)
        Pil.new("RGB", size, (size[0], 0, 0)).save(path, fmt)

    for i in range(6):
        image(tmp_path / "mixed" / "a" / f"{i}.png", (8 + 4 * (i % 2), 8), "PNG")
        image(tmp_path / "mixed" / "b" / f"{i}.jpg", (8, 8), "JPEG")
        image(tmp_path / "same" / "a" / f"new{i}.png", (10, 10), "PNG")
    tk.convert(tmp_path / "mixed", tmp_path / "ds", workers=1)
    before = load_manifest(tmp_path / "ds").schema["image"]
    assert before.size is None and before.encoding == "auto"
    tk.append(tmp_path / "ds", tmp_path / "same", workers=1)
    assert load_manifest(tmp_path / "ds").schema["image"] == before
    shapes = {tuple(v) for b in tk.load_numpy_dataset(tmp_path / "ds", batch_size=6,
                                                      sampling=tk.InOrder())
              for v in b["image"]["lengths"].tolist()}
    assert shapes == {(8, 8), (8, 12), (10, 10)}

    for i in range(3):
        image(tmp_path / "fixed" / "a" / f"{i}.png", (8, 8), "PNG")
    tk.convert(tmp_path / "fixed", tmp_path / "fixed_ds", workers=1)
    assert load_manifest(tmp_path / "fixed_ds").schema["image"].size == (8, 8)
    tk.append(tmp_path / "fixed_ds", tmp_path / "same", workers=1)
    shutil.copytree(tmp_path / "same" / "a", tmp_path / "fixed" / "a", dirs_exist_ok=True)
    tk.convert(tmp_path / "fixed", tmp_path / "at_once", workers=1)
    assert (load_manifest(tmp_path / "fixed_ds").schema["image"]
            == load_manifest(tmp_path / "at_once").schema["image"])
    assert load_manifest(tmp_path / "fixed_ds").schema["image"].size is None
    shapes = sorted(tuple(v) for b in tk.load_numpy_dataset(
        tmp_path / "fixed_ds", batch_size=4, sampling=tk.InOrder())
        for v in b["image"]["lengths"].tolist())
    assert shapes == [(8, 8)] * 3 + [(10, 10)] * 6


@settings(max_examples=200, deadline=None)
@given(entries_and_source(), st.binary(min_size=0, max_size=20_000), st.booleans())
def test_batch_digests_equal_each_records_digest(drawn, big, source_last):
    """frame_ids (a batch's entries located at once) gives each record the digest
    content_digest gives it alone: arbitrary entry orders, records past the tail window
    (a large value before or after the provenance), with and without provenance."""
    from tfrecordkit.format import frame_record
    from tfrecordkit.store import frame_ids

    entries, source, at = drawn
    large = field(1, 2, field(1, 2, b"big") + field(2, 2, field(1, 2, field(1, 2, big))))
    body = [large, *entries]
    body.insert(len(body) if source_last else min(at, len(body)), source)
    records = [field(1, 2, b"".join(body)), field(1, 2, b"".join([large, *entries]))]
    frames = [frame_record(r) for r in records]
    lengths = [len(f) for f in frames]
    ids = frame_ids(["a", "b"], b"".join(frames), np.cumsum([0, *lengths[:-1]]), lengths)
    assert ids["content"].tolist() == [content_digest(r) for r in records]
    assert ids["content"][0] == ids["content"][1]  # provenance left out, wherever it is


def test_every_append_keeps_the_inputs_skipped_before(folders, tmp_path):
    """dataset.json's ``skipped`` was replaced by each append's own list (45 skipped, then 0
    after a clean append): it is the union, each append's entries marked with its number."""
    full, old = folders
    broken = tmp_path / "broken"
    shutil.copytree(old, broken)
    (broken / "1" / "bad.png").write_bytes(b"not a png")
    first = tk.convert(broken, tmp_path / "ds", split=SPLIT, workers=1, on_error="skip")
    assert first.manifest.skipped_count == 1
    clean = tk.append(tmp_path / "ds", full, workers=1)
    assert clean.manifest.skipped_count == 1
    assert clean.manifest.skipped[0]["input"].endswith("1/bad.png")
    more = tmp_path / "more"
    (more / "2").mkdir(parents=True)
    (more / "2" / "worse.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    grown = tk.append(tmp_path / "ds", more, workers=1, on_error="skip")
    manifest = load_manifest(tmp_path / "ds")
    assert grown.manifest.skipped_count == manifest.skipped_count == 2
    assert [s["input"].rsplit("/", 2)[-2:] for s in manifest.skipped] == [["1", "bad.png"],
                                                                          ["2", "worse.png"]]
    assert "append" not in manifest.skipped[0] and manifest.skipped[1]["append"] == "2"
