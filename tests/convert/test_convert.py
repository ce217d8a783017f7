"""Conversion into a dataset directory: determinism, layouts, splits, errors, kill safety."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.datasets import digits_folder
from tfrecordkit import (
    DatasetError,
    OptionError,
    RecordReader,
    ShardOptions,
    SourceError,
)
from tfrecordkit.convert import convert, open_source, write_dataset
from tfrecordkit.schema import ClassLabel, Scalar, Schema, Tensor, Text
from tfrecordkit.sources import ImageFolder
from tfrecordkit.store import load_manifest

SCHEMA = Schema({"x": Tensor((3,), "float32"), "n": Scalar("int64"), "label": ClassLabel(
    ["a", "b", "c"])})


def records(count: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.normal(size=3).astype(np.float32), "n": i, "label": int(i % 3)}
            for i in range(count)]


def read_dataset(path: Path, split: str = "train") -> list[dict]:
    manifest = load_manifest(path)
    out = []
    for shard in manifest.split(split).shards:
        out.extend(manifest.schema.decode(r) for r in RecordReader(path / shard.file))
    return out


def shard_bytes(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if ".tfrecord" in p.name}


def test_records_round_trip_and_multiset_is_kept(tmp_path):
    data = records(500)
    result = write_dataset(data, tmp_path / "ds", SCHEMA, shards=ShardOptions(num_shards=4))
    assert result.records == 500
    back = read_dataset(tmp_path / "ds")
    assert sorted(r["n"] for r in back) == list(range(500))
    by_n = {r["n"]: r for r in back}
    for record in data:
        assert np.array_equal(by_n[record["n"]]["x"], record["x"])
        assert by_n[record["n"]]["label"] == record["label"]
    order = [r["n"] for r in back]
    assert order != sorted(order), "records are shuffled at write time"


@pytest.fixture
def real_workers(monkeypatch):
    """Use worker processes even for these small inputs (small jobs normally run inline)."""
    from tfrecordkit.engines import local

    monkeypatch.setattr(local, "_SMALL_JOB", 1)


def test_same_inputs_and_seed_give_byte_identical_shards(tmp_path, real_workers):
    write_dataset(records(300), tmp_path / "a", SCHEMA, shards=ShardOptions(num_shards=3, seed=7))
    write_dataset(records(300), tmp_path / "b", SCHEMA,
                  shards=ShardOptions(num_shards=3, seed=7), workers=2)
    write_dataset(records(300), tmp_path / "c", SCHEMA, shards=ShardOptions(num_shards=3, seed=8))
    assert shard_bytes(tmp_path / "a") == shard_bytes(tmp_path / "b")
    assert shard_bytes(tmp_path / "a") != shard_bytes(tmp_path / "c")


def test_shard_count_follows_target_size(tmp_path):
    result = write_dataset(records(1000), tmp_path / "ds", SCHEMA,
                           shards=ShardOptions(shard_size=10_000))
    split = result.manifest.split("train")
    # Uncompressed, a shard's file bytes are its framed records: the count is exact.
    assert len(split.shards) == -(-split.bytes // 10_000)
    assert len(split.shards) > 1
    sizes = [s.records for s in split.shards]
    assert max(sizes) - min(sizes) <= 1  # records spread evenly
    assert split.shards[0].file == f"train-00000-of-{len(sizes):05d}.tfrecord"


def test_split_ratios_are_seeded_and_complete(tmp_path):
    result = write_dataset(records(1000), tmp_path / "ds", SCHEMA,
                           split={"train": 0.8, "val": 0.2}, shards=ShardOptions(seed=1))
    counts = {k: v.records for k, v in result.manifest.splits.items()}
    assert sum(counts.values()) == 1000
    assert 740 < counts["train"] < 860
    train = {r["n"] for r in read_dataset(tmp_path / "ds", "train")}
    val = {r["n"] for r in read_dataset(tmp_path / "ds", "val")}
    assert not train & val and len(train | val) == 1000


def test_explicit_splits(tmp_path):
    result = write_dataset({"train": records(30), "test": records(10)}, tmp_path / "ds", SCHEMA)
    assert {k: v.records for k, v in result.manifest.splits.items()} == {"train": 30, "test": 10}


def test_per_class_layout(tmp_path):
    result = write_dataset(records(90), tmp_path / "ds", SCHEMA,
                           shards=ShardOptions(layout="per_class", seed=3))
    manifest = result.manifest
    assert manifest.layout == "per_class" and manifest.label_feature == "label"
    split = manifest.split("train")
    assert split.class_counts == {"0": 30, "1": 30, "2": 30}
    for shard in split.shards:
        assert shard.file.startswith(f"train-c{shard.class_id:05d}-")
        labels = {manifest.schema.decode(r)["label"] for r in RecordReader(tmp_path / "ds" /
                                                                           shard.file)}
        assert labels == {shard.class_id}
        assert shard.class_counts == {str(shard.class_id): shard.records}


def test_manifest_describes_everything(tmp_path):
    result = write_dataset(records(50), tmp_path / "ds", SCHEMA,
                           shards=ShardOptions(compression="gzip"))
    raw = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    assert raw["format"] == "tfrecordkit-dataset" and raw["compression"] == "gzip"
    assert Schema.from_json(raw["schema"]) == SCHEMA
    shard = raw["splits"]["train"]["shards"][0]
    assert shard["file"].endswith(".tfrecord.gz")
    # Compressed shards: an index of decompressed offsets and restart points (version 6).
    assert shard["index"] == shard["file"] + ".index"
    assert shard["restarts"] == shard["file"] + ".restarts"
    assert raw["format_version"] == 6
    assert shard["records"] == 50 and shard["bytes"] == (tmp_path / "ds" / shard["file"]).stat(
    ).st_size
    assert raw["created_by"]["tool"] == "tfrecordkit" and raw["created_by"]["seed"] == 0
    assert result.manifest.split("train").class_counts == {"0": 17, "1": 17, "2": 16}


def test_uncompressed_shards_carry_an_index(tmp_path):
    write_dataset(records(40), tmp_path / "ds", SCHEMA, shards=ShardOptions(num_shards=2))
    manifest = load_manifest(tmp_path / "ds")
    for shard in manifest.split("train").shards:
        with RecordReader(tmp_path / "ds" / shard.file) as reader:
            assert reader.num_records() == shard.records
            assert reader.read(shard.records - 1) == list(reader)[-1]


def test_existing_dataset_needs_overwrite(tmp_path):
    write_dataset(records(10), tmp_path / "ds", SCHEMA)
    with pytest.raises(DatasetError, match="already holds a dataset"):
        write_dataset(records(10), tmp_path / "ds", SCHEMA)
    write_dataset(records(20), tmp_path / "ds", SCHEMA, overwrite=True,
                  shards=ShardOptions(num_shards=2))
    assert load_manifest(tmp_path / "ds").num_records("train") == 20
    assert len([p for p in (tmp_path / "ds").iterdir() if p.suffix == ".tfrecord"]) == 2


def test_bad_record_raises_one_line_naming_the_input(tmp_path):
    data = [*records(5), {"x": [1.0, 2.0], "n": 1, "label": 0}]
    with pytest.raises(SourceError) as info:
        write_dataset(data, tmp_path / "ds", SCHEMA)
    assert str(info.value).startswith("record 5: ")
    assert "shape (2,) does not fit (3,)" in str(info.value)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "ds" / "dataset.json").exists()
    assert not (tmp_path / "ds" / ".tfrecordkit-staging").exists()


def test_skip_lists_bad_inputs_in_the_manifest(tmp_path):
    data = [*records(5), {"x": [1.0], "n": 1, "label": 0}, {"x": [1, 2, 3], "n": 2,
                                                             "label": "zebra"}]
    result = write_dataset(data, tmp_path / "ds", SCHEMA, on_error="skip")
    assert result.records == 5
    assert result.manifest.skipped_count == 2
    reasons = [s["reason"] for s in result.manifest.skipped]
    assert "does not fit" in reasons[0] and "unknown class 'zebra'" in reasons[1]
    assert "skipped 2 input(s)" in result.summary()


def test_image_folder_pixels_round_trip(tmp_path, real_workers):
    pixels = digits_folder(tmp_path / "digits", limit_per_class=20)
    result = convert(ImageFolder(tmp_path / "digits"), tmp_path / "ds", workers=2,
                     split={"train": 0.75, "val": 0.25})
    assert result.records == len(pixels) == 200
    manifest = result.manifest
    assert manifest.class_names == tuple(str(i) for i in range(10))
    seen = 0
    for split in ("train", "val"):
        for record in read_dataset(tmp_path / "ds", split):
            seen += 1
            image = record["image"][:, :, 0]
            label = record["label"]
            matches = [p for p, px in pixels.items() if np.array_equal(px, image)]
            assert matches and any(Path(p).parent.name == str(label) for p in matches)
    assert seen == 200


def test_image_folder_errors_and_skips(tmp_path, real_workers):
    digits_folder(tmp_path / "digits", limit_per_class=3)
    jpeg = next((tmp_path / "digits" / "4").iterdir())
    truncated = tmp_path / "digits" / "4" / "broken.png"
    truncated.write_bytes(jpeg.read_bytes()[:80])
    (tmp_path / "digits" / "5" / "notes.txt").write_text("ignored: not an image")
    with pytest.raises(SourceError, match=r"broken\.png: truncated PNG \(chunk b'IDAT' at "
                                          r"byte 33 runs past the end\); "
                                          r"on_error=\"skip\" \(--on-error skip\) skips"):
        convert(ImageFolder(tmp_path / "digits"), tmp_path / "ds", workers=1)
    (tmp_path / "digits" / "6" / "garbage.jpg").write_bytes(b"not an image at all")
    result = convert(ImageFolder(tmp_path / "digits"), tmp_path / "ds", workers=2,
                     on_error="skip")
    assert result.records == 30
    skipped = {Path(s["input"]).name: s["reason"] for s in result.manifest.skipped}
    assert skipped["broken.png"] == "truncated PNG (chunk b'IDAT' at byte 33 runs past the end)"
    assert skipped["garbage.jpg"].startswith("unreadable image: not a known image format")


def test_text_source_names_bad_lines(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_bytes(b"first line\nsecond \xff line\nthird\n")
    with pytest.raises(SourceError, match=r"lines\.txt:2: not valid UTF-8"):
        convert(open_source(str(path)), tmp_path / "ds")
    result = convert(open_source(str(path)), tmp_path / "ds", on_error="skip",
                     shards=ShardOptions(shuffle=False))
    assert [r["text"] for r in read_dataset(tmp_path / "ds")] == ["first line", "third"]
    assert result.manifest.skipped_count == 1


def test_numpy_source(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "arrays.npz"
    np.savez(path, features=rng.normal(size=(40, 4, 2)).astype(np.float32),
             label=rng.integers(0, 5, 40), weight=rng.random(40))
    source = open_source(str(path))
    schema = source.schema()
    assert isinstance(schema["label"], ClassLabel) and isinstance(schema["weight"], Scalar)
    convert(source, tmp_path / "ds", shards=ShardOptions(shuffle=False))
    back = read_dataset(tmp_path / "ds")
    with np.load(path) as npz:
        assert np.array_equal(np.stack([r["features"] for r in back]), npz["features"])
        assert [r["label"] for r in back] == npz["label"].tolist()


def die_after_spill(monkeypatch):
    """Make the next conversion spill to disk (no records held in memory) and die while
    writing shards, leaving its staging folder as a SIGKILL would (no cleanup runs)."""
    from tfrecordkit.store import ShardedWriter
    from tfrecordkit.store._writer import HOLD_ENV

    monkeypatch.setenv(HOLD_ENV, "0")

    def die(self, *args):
        raise KeyboardInterrupt

    monkeypatch.setattr(ShardedWriter, "_write_mixed_split", die)
    monkeypatch.setattr(ShardedWriter, "abort", lambda self: None)


def test_a_killed_run_resumes_from_its_completed_spill(tmp_path, monkeypatch):
    from tfrecordkit.sources import TextLines

    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join(f"line {i}" for i in range(60)))
    fresh = convert(TextLines(lines), tmp_path / "fresh", shards=ShardOptions(num_shards=2))
    assert not fresh.resumed
    die_after_spill(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        convert(TextLines(lines), tmp_path / "ds", shards=ShardOptions(num_shards=2))
    assert not (tmp_path / "ds" / "dataset.json").exists()
    assert (tmp_path / "ds" / ".tfrecordkit-staging" / "spill" / "done.json").exists()
    monkeypatch.undo()
    loads = Counter()
    original_load = TextLines.load

    def counting_load(self, item):
        loads["n"] += 1
        return original_load(self, item)

    monkeypatch.setattr(TextLines, "load", counting_load)
    result = convert(TextLines(lines), tmp_path / "ds", shards=ShardOptions(num_shards=2))
    assert result.resumed and loads["n"] == 0  # the source was not read again
    assert shard_bytes(tmp_path / "ds") == shard_bytes(tmp_path / "fresh")
    assert not (tmp_path / "ds" / ".tfrecordkit-staging").exists()


def test_a_resumed_image_conversion_writes_the_manifest_of_an_uninterrupted_one(
        tmp_path, monkeypatch):
    """The spill keeps what the images turned out to be (format, channels, size): the
    resumed run's manifest pins the schema as the uninterrupted run's does; a spill kept
    without them (an older one) is not resumed but converted again, to the same result."""
    digits_folder(tmp_path / "digits", limit_per_class=6)
    options = {"shards": ShardOptions(num_shards=2), "workers": 1}
    fresh = convert(ImageFolder(tmp_path / "digits"), tmp_path / "fresh", **options)
    assert fresh.manifest.schema["image"].encoding == "png"  # described by the images
    for keep_observations in (True, False):
        out = tmp_path / f"ds_{keep_observations}"
        die_after_spill(monkeypatch)
        with pytest.raises(KeyboardInterrupt):
            convert(ImageFolder(tmp_path / "digits"), out, **options)
        monkeypatch.undo()
        done = out / ".tfrecordkit-staging" / "spill" / "done.json"
        if not keep_observations:
            summary = json.loads(done.read_text())
            del summary["observed"]
            done.write_text(json.dumps(summary))
        result = convert(ImageFolder(tmp_path / "digits"), out, **options)
        assert result.resumed is keep_observations
        assert load_manifest(out).schema == load_manifest(tmp_path / "fresh").schema
        assert shard_bytes(out) == shard_bytes(tmp_path / "fresh")


def test_a_killed_run_is_not_resumed_with_other_image_options(tmp_path, monkeypatch):
    """The spill of a conversion killed with images kept as they are is not taken up by a
    run asking for them resized: that run converts again, as an uninterrupted one would."""
    digits_folder(tmp_path / "digits", limit_per_class=6)
    options = {"shards": ShardOptions(num_shards=2), "workers": 1}
    fresh = convert(ImageFolder(tmp_path / "digits", resize=(4, 4)), tmp_path / "fresh",
                    **options)
    die_after_spill(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        convert(ImageFolder(tmp_path / "digits"), tmp_path / "ds", **options)
    monkeypatch.undo()
    result = convert(ImageFolder(tmp_path / "digits", resize=(4, 4)), tmp_path / "ds",
                     overwrite=True, **options)
    assert not result.resumed
    assert shard_bytes(tmp_path / "ds") == shard_bytes(fresh.path)


@pytest.mark.parametrize("from_file", [False, True], ids=["bucket in memory", "bucket read"])
def test_a_resumed_spill_cut_short_is_refused_naming_its_file(tmp_path, monkeypatch,
                                                              from_file):
    """The spill's index is a claim: a data file shorter than it lists (a full disk, a
    copy cut short) stops the resumed run with the file's name, before any shard is
    written, whether the bucket is read whole or run by run."""
    from tfrecordkit.sources import TextLines
    from tfrecordkit.store import _writer

    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join(f"line {i}" for i in range(60)))
    die_after_spill(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        convert(TextLines(lines), tmp_path / "ds", shards=ShardOptions(num_shards=2))
    monkeypatch.undo()
    data = sorted((tmp_path / "ds" / ".tfrecordkit-staging" / "spill").rglob("*.data"))
    assert data
    with open(data[-1], "r+b") as f:
        f.truncate(max(0, data[-1].stat().st_size - 3))
    if from_file:
        monkeypatch.setattr(_writer, "_BUCKET_IN_MEMORY", 0)
    with pytest.raises(DatasetError, match=rf"{data[-1].name}: the spill holds \d+ bytes "
                                           r"where its index lists \d+"):
        convert(TextLines(lines), tmp_path / "ds", shards=ShardOptions(num_shards=2))
    assert not (tmp_path / "ds" / "dataset.json").exists()
    assert not list((tmp_path / "ds").glob("*.tfrecord"))


def test_in_memory_records_never_resume_someone_elses_spill(tmp_path, monkeypatch):
    die_after_spill(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        write_dataset(records(30, seed=1), tmp_path / "ds", SCHEMA)
    monkeypatch.undo()
    other = records(40, seed=2)
    result = write_dataset(other, tmp_path / "ds", SCHEMA)
    assert not result.resumed
    back = sorted(read_dataset(tmp_path / "ds"), key=lambda r: r["n"])
    assert len(back) == 40
    assert all(np.array_equal(r["x"], o["x"]) for r, o in zip(back, other, strict=True))


# 10,000 records of 1 KB: 10 MB through the spill, or 10 shards streamed (20,000 proved no more)
KILL_SCRIPT = """
import os
import sys
import numpy as np
from tfrecordkit.convert import write_dataset
from tfrecordkit.schema import Schema, Tensor, Scalar
from tfrecordkit.store import ShardOptions
schema = Schema({"x": Tensor((256,), "float32"), "n": Scalar("int64")})
rng = np.random.default_rng(0)


def records():
    for i in range(10000):
        if i == 5000:
            print("half", flush=True)  # the test may kill here: surely mid-conversion
        yield {"x": rng.normal(size=256).astype(np.float32), "n": i}


if sys.argv[2] == "spill":
    os.environ["TFRECORDKIT_SHUFFLE_MEMORY"] = "0"  # spilled to disk, not held in memory
layout = {"spill": {"num_shards": 8},  # shuffled through the spill
          "stream": {"shuffle": False, "shard_size": 1 << 20}}[sys.argv[2]]  # one pass
print("writing", flush=True)  # imports took a varying time; the conversion starts now
write_dataset(records(), sys.argv[1], schema, overwrite=True, shards=ShardOptions(**layout))
print("done", flush=True)
"""


def check_dataset_is_whole_or_absent(path: Path) -> bool:
    """True if a manifest exists (then every listed shard must be complete)."""
    if not (path / "dataset.json").exists():
        return False
    manifest = load_manifest(path)
    total = 0
    for shard in manifest.split("train").shards:
        got = manifest.schema.decode_batch(list(RecordReader(path / shard.file)))["n"]
        assert len(got) == shard.records
        total += len(got)
    assert total == manifest.num_records("train") == 10000
    return True


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["spill", "stream"])
def test_sigkill_at_random_moments_never_leaves_a_partial_dataset(tmp_path, mode):
    out = tmp_path / "ds"
    rng = random.Random(1234)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-c", KILL_SCRIPT, str(out), mode]

    def start() -> subprocess.Popen:
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True)
        assert proc.stdout.readline().strip() == "writing"
        return proc

    full = subprocess.run(command, env=env, check=True, capture_output=True, text=True, timeout=300)
    assert "done" in full.stdout
    proc = start()  # over a whole dataset: how long the conversion itself takes
    started = time.perf_counter()
    assert "done" in proc.communicate(timeout=300)[0]
    duration = time.perf_counter() - started
    outcomes = Counter()
    for attempt in range(6):
        proc = start()
        if attempt == 0:
            assert proc.stdout.readline().strip() == "half"  # half the records are written
        else:
            time.sleep(rng.uniform(0.0, duration))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        proc.stdout.close()
        outcomes[check_dataset_is_whole_or_absent(out)] += 1
        # Running again finishes the job (resuming a completed spill, or from scratch).
        subprocess.run(command, env=env, check=True, capture_output=True, timeout=300)
        assert check_dataset_is_whole_or_absent(out)
    assert outcomes[False] >= 1, f"no kill landed mid-conversion: {outcomes}"


def test_generator_source_writes_every_record(tmp_path):
    # Memory staying flat is measured in bench/convert.py (peak RSS at 1x and 10x).
    produced = Counter()

    def stream():
        for i in range(2000):
            produced["n"] += 1
            yield {"s": f"line {i}"}

    write_dataset(stream(), tmp_path / "ds", Schema({"s": Text()}))
    assert produced["n"] == 2000
    assert load_manifest(tmp_path / "ds").num_records("train") == 2000


UNGUARDED = """
import sys
import numpy as np
import tensorflow  # spawned workers, then: each would re-run this script without the guard
from PIL import Image
from tfrecordkit.convert import convert
from tfrecordkit.sources import ImageFolder
root = sys.argv[1]
convert(ImageFolder(root + "/src", channels=3), root + "/ds", workers=2, progress=False)
print("done")
"""


@pytest.mark.integration
@pytest.mark.slow
def test_a_script_without_a_main_guard_that_imported_tensorflow_does_not_hang(tmp_path):
    digits_folder(tmp_path / "src", limit_per_class=60)  # 600 items: enough for workers
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED)
    result = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "done"
    assert "freeze_support" not in result.stderr
    assert load_manifest(tmp_path / "ds").num_records("train") == 600


@pytest.mark.integration
def test_without_shuffle_records_stream_into_shards_in_input_order(tmp_path):
    """One pass: shards of at most shard_size bytes (one record at least), input order."""
    tf = pytest.importorskip("tensorflow")
    rows = records(3000)
    rows[1234]["x"] = np.zeros(3, np.float32)
    schema = Schema({**SCHEMA, "blob": Scalar("string")})
    for i, row in enumerate(rows):
        row["blob"] = bytes(9000 if i == 1500 else i % 50)  # one record past shard_size
    result = write_dataset(rows, tmp_path / "ds", schema,
                           shards=ShardOptions(shuffle=False, shard_size=8192),
                           split={"train": 0.7, "val": 0.3})
    manifest = result.manifest
    for split in ("train", "val"):
        shards = manifest.split(split).shards
        assert len(shards) > 5
        for shard in shards:
            path = tmp_path / "ds" / shard.file
            assert shard.bytes == path.stat().st_size
            assert shard.bytes <= 8192 or shard.records == 1
            assert sum(1 for _ in tf.data.TFRecordDataset(str(path))) == shard.records
            lines = (tmp_path / "ds" / shard.index).read_text().split()
            assert len(lines) == 2 * shard.records
        back = [r["n"] for r in read_dataset(tmp_path / "ds", split)]
        assert back == sorted(back)  # input order
    got = sorted(r["n"] for s in ("train", "val") for r in read_dataset(tmp_path / "ds", s))
    assert got == list(range(3000))
    assert sum(manifest.split(s).records for s in ("train", "val")) == 3000


def test_a_failing_streamed_conversion_leaves_no_manifest_and_no_shards(tmp_path):
    rows = records(2000)
    rows[1700]["n"] = "not a number"
    with pytest.raises(SourceError, match="'n'"):
        write_dataset(rows, tmp_path / "ds", SCHEMA,
                      shards=ShardOptions(shuffle=False, shard_size=4096))
    assert sorted(p.name for p in (tmp_path / "ds").iterdir()) == []
    result = write_dataset(records(2000), tmp_path / "ds", SCHEMA,
                           shards=ShardOptions(shuffle=False, shard_size=4096))
    assert [r["n"] for r in read_dataset(tmp_path / "ds")] == list(range(2000))
    assert result.manifest.num_records("train") == 2000


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
@pytest.mark.parametrize("layout", ["mixed", "per_class"])
def test_buckets_read_from_disk_or_memory_give_the_same_shards(tmp_path, monkeypatch, layout,
                                                               compiled):
    """Large spill buckets are read run by run from the file (one compiled call a run, or a
    pread a record without the codec); small ones whole. Frames are gathered in runs of a
    few MiB; tiny runs must give the same bytes."""
    from tfrecordkit.store import _writer

    monkeypatch.setenv(_writer.HOLD_ENV, "0")
    options = {"shards": ShardOptions(layout=layout, shard_size=3000), "workers": 1}
    write_dataset(records(1500), tmp_path / "a", SCHEMA, **options)
    if not compiled:
        monkeypatch.setattr(_writer, "compiled_codec", lambda: None)
    monkeypatch.setattr(_writer, "_BUCKET_IN_MEMORY", 0)
    monkeypatch.setattr(_writer, "_GATHER", 100)
    write_dataset(records(1500), tmp_path / "b", SCHEMA, **options)
    assert shard_bytes(tmp_path / "a") == shard_bytes(tmp_path / "b")
    assert len(shard_bytes(tmp_path / "a")) > 10


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_a_spill_file_ending_inside_a_run_is_named(tmp_path, monkeypatch, compiled):
    """A large bucket read run by run: a data file shorter than a run's spans (shrunk after
    the check before writing) stops with the file's name and the offset, in one line."""
    import re

    from tfrecordkit.errors import DatasetError
    from tfrecordkit.store import _writer

    if not compiled:
        monkeypatch.setattr(_writer, "compiled_codec", lambda: None)
    path = tmp_path / "007.data"
    path.write_bytes(bytes(range(100)))
    fd = os.open(path, os.O_RDONLY)
    try:
        out = np.empty(70, np.uint8)
        spans = (np.array([0, 60], np.int64), np.array([50, 20], np.int64))
        assert bytes(_writer._read_spans(_writer._OpenSpill(fd, path), *spans, out)) == (
            bytes(range(50)) + bytes(range(60, 80)))
        with pytest.raises(DatasetError, match=re.escape(
                f"{path}: the spill file ends inside the record at byte 90;")) as caught:
            _writer._read_spans(_writer._OpenSpill(fd, path), np.array([0, 90], np.int64),
                                np.array([50, 20], np.int64), out)
        assert "\n" not in str(caught.value)
    finally:
        os.close(fd)


@pytest.mark.parametrize("options", [
    ShardOptions(shard_size=3000), ShardOptions(layout="per_class", shard_size=3000),
    ShardOptions(num_shards=3, shuffle=False), ShardOptions(min_shards=4, seed=5)],
    ids=["shuffled", "per_class", "fixed_count", "min_shards"])
def test_records_held_in_memory_spilled_midway_or_spilled_give_the_same_shards(
        tmp_path, monkeypatch, options):
    """Records are held in memory up to TFRECORDKIT_SHUFFLE_MEMORY bytes, then spilled:
    held all along, spilled from the first record or spilled once the budget is passed
    midway (with several splits), the shards are byte for byte the same."""
    from tfrecordkit.store import _writer

    def write(name, budget):
        monkeypatch.setenv(_writer.HOLD_ENV, str(budget))
        write_dataset(records(1200), tmp_path / name, SCHEMA, shards=options,
                      split={"train": 0.7, "val": 0.3}, workers=1)
        return shard_bytes(tmp_path / name)

    spilled = write("spilled", 0)
    assert len(spilled) > 4
    assert write("held", 1 << 30) == spilled
    assert write("midway", 20_000) == spilled
    assert not (tmp_path / "held" / ".tfrecordkit-staging").exists()


def test_the_memory_budget_is_a_number_of_bytes(monkeypatch):
    from tfrecordkit.store._writer import HOLD_ENV, hold_budget

    monkeypatch.setenv(HOLD_ENV, "12345")
    assert hold_budget() == 12345
    monkeypatch.setenv(HOLD_ENV, "lots")
    with pytest.raises(OptionError, match="TFRECORDKIT_SHUFFLE_MEMORY='lots'"):
        hold_budget()
    monkeypatch.delenv(HOLD_ENV)
    assert 0 < hold_budget() <= 256 << 20


@pytest.mark.parametrize("layout", ["mixed", "per_class"])
def test_the_writer_fed_record_by_record_writes_what_convert_writes(tmp_path, layout):
    from tfrecordkit.store import ShardedWriter

    rows = records(300)
    write_dataset(rows, tmp_path / "a", SCHEMA, shards=ShardOptions(layout=layout, shard_size=3000))
    options = ShardOptions(layout=layout, shard_size=3000)
    with ShardedWriter(tmp_path / "b", SCHEMA, options, label_feature="label") as writer:
        for i, row in enumerate(rows):
            writer.add(str(i), SCHEMA.encode(row), label=row["label"])
        writer.finish()
    assert shard_bytes(tmp_path / "b") == shard_bytes(tmp_path / "a")
    assert len(shard_bytes(tmp_path / "a")) > 4


def test_refining_an_open_image_keeps_its_other_settings(tmp_path):
    """Pinning an image's format at conversion must not drop dims=False: the manifest would
    then describe keys the records lack (found by reading such a dataset on Ray)."""
    from tests.datasets import encode_image, photos
    from tfrecordkit import load_numpy_dataset
    from tfrecordkit.schema import Image

    image = photos()["astronaut"]
    done = write_dataset([{"image": encode_image(image, "PNG")}] * 3, tmp_path / "ds",
                         Schema({"image": Image(dims=False)}))
    assert done.manifest.schema["image"] == Image("png", channels=3, dims=False,
                                                  size=image.shape[:2])
    batch = next(iter(load_numpy_dataset(tmp_path / "ds", batch_size=3)))
    assert all(np.array_equal(pixels, image) for pixels in batch["image"])


def test_encoded_image_bytes_give_the_records_schema_encode_gives(tmp_path):
    """Conversion reads an image's header once and hands the dims to the encoder: the
    stored records equal Schema.encode of the records as given, for JPEG and PNG of every
    channel count, a palette PNG (no usable header: Pillow is asked) and dims-less images."""
    import io

    from PIL import Image as PILImage

    from tests.datasets import encode_image, photos
    from tfrecordkit.format import read_records
    from tfrecordkit.schema import Image

    colour, grey = photos()["coffee"], photos()["camera"]
    palette = io.BytesIO()
    PILImage.fromarray(colour[:20, :20]).convert("P").save(palette, format="PNG")
    rgba = np.dstack([colour[:12, :12], np.full((12, 12), 200, np.uint8)])
    images = [encode_image(colour[:30, :20], "JPEG"), encode_image(grey[:10, :14], "JPEG"),
              encode_image(rgba, "PNG"), encode_image(grey[:9, :9], "PNG"),
              palette.getvalue()]
    for dims in (True, False):
        schema = Schema({"image": Image(dims=dims), "n": Scalar("int64")})
        rows = [{"image": data, "n": i} for i, data in enumerate(images)]
        out = tmp_path / f"ds{dims}"
        write_dataset(rows, out, schema, shards=ShardOptions(shuffle=False, num_shards=1))
        stored = list(read_records(sorted(str(p) for p in out.glob("*.tfrecord"))))
        assert stored == [schema.encode(row) for row in rows]


def test_write_dataset_options_are_converts_keywords():
    import inspect
    import typing

    from tfrecordkit.convert import ConvertOptions, convert

    keywords = [name for name, p in inspect.signature(convert).parameters.items()
                if p.kind is p.KEYWORD_ONLY and name != "schema"]
    assert list(typing.get_type_hints(ConvertOptions)) == keywords


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_image_dicts_holding_any_bytes_like_write_what_bytes_write(tmp_path, kind):
    import io

    from PIL import Image as PILImage

    from tfrecordkit.schema import Image

    data = []
    for shade in range(5):
        buffer = io.BytesIO()
        PILImage.new("RGB", (8 + shade, 8), (shade * 40, 0, 0)).save(buffer, format="JPEG")
        data.append(buffer.getvalue())
    schema = Schema({"image": Image("jpeg", channels=3)})

    def rows(wrap):
        return [{"image": {"bytes": wrap(d), "height": 8, "width": 8 + i, "channels": 3}}
                for i, d in enumerate(data)]

    write_dataset(rows(bytes), tmp_path / "bytes", schema, progress=False)
    write_dataset(rows(kind), tmp_path / "other", schema, progress=False)
    shards = sorted(p.name for p in (tmp_path / "bytes").glob("*.tfrecord"))
    assert shards and all((tmp_path / "bytes" / s).read_bytes()
                          == (tmp_path / "other" / s).read_bytes() for s in shards)
    assert load_manifest(tmp_path / "other").schema == load_manifest(tmp_path / "bytes").schema
