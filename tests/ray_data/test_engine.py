"""convert(engine="ray") on a real local Ray cluster: byte-identical shards and equal manifests
to the local engine in both layouts, image folders included; a failing job leaves no
dataset.json; the encoding code imports no TensorFlow."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import digits_folder, untagged
from tfrecordkit import SourceError
from tfrecordkit.cli import main

ray = pytest.importorskip("ray")

# One Ray cluster at a time: every test that starts one runs on the same xdist worker.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("ray")]

SCHEMA = tk.Schema({"x": tk.Scalar("float32"), "v": tk.Tensor((None,), "int16"),
                    "t": tk.Text(), "label": tk.ClassLabel(["a", "b", "c"])})


def rows(n: int = 1500) -> list[dict]:
    # Sizes vary (up to 37 int16 values), so cuts by size and cuts by count differ.
    out = [{"x": i / 3, "v": np.arange(i * 7 % 38, dtype=np.int16), "t": f"row {i}",
            "label": i % 3} for i in range(n)]
    out[17]["x"] = "not a number"  # skipped by both engines
    return out


def files(path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if ".tfrecord" in p.name}


LAYOUTS = [
    ("train", tk.ShardOptions(shard_size=4000)),
    ("train", tk.ShardOptions(layout="per_class", shard_size=4000)),
    ({"train": 0.7, "val": 0.3}, tk.ShardOptions(num_shards=3, seed=5)),
    ("train", tk.ShardOptions(shuffle=False, shard_size=4000)),  # cut by size as records come
    ({"train": 0.6, "val": 0.4}, tk.ShardOptions(shuffle=False, shard_size=3000)),
    ("train", tk.ShardOptions(shuffle=False, layout="per_class", num_shards=2)),
]
#: Ray's sort (~10 s a job here) on the layouts whose sort keys differ: class + hash, split +
#: hash, split + position cut as records come, class + position. The other two use a subset.
SORTED_BY_RAY = (1, 2, 4, 5)


@pytest.mark.parametrize(("split", "shards", "ordered_by"), [
    *[pytest.param(*layout, "the driver", id=f"the driver-{k}")
      for k, layout in enumerate(LAYOUTS)],
    *[pytest.param(*LAYOUTS[k], "Ray's sort", id=f"Ray's sort-{k}") for k in SORTED_BY_RAY],
])
def test_ray_and_local_engines_write_the_same_bytes(cluster, tmp_path, monkeypatch, split,
                                                    shards, ordered_by):
    """Small jobs are put in write order on the driver (their keys sorted there), larger ones
    by Ray's distributed sort: the same bytes either way."""
    if ordered_by == "Ray's sort":
        from tfrecordkit.engines import ray_data

        monkeypatch.setattr(ray_data, "_DRIVER_ORDER_BYTES", 0)
    options = {"split": split, "shards": shards, "on_error": "skip"}
    local = tk.write_dataset(rows(), tmp_path / "local", SCHEMA, **options)
    on_ray = tk.write_dataset(rows(), tmp_path / "ray", SCHEMA, engine="ray", **options)
    assert files(tmp_path / "ray") == files(tmp_path / "local")
    assert len(files(tmp_path / "local")) > 4
    a, b = local.manifest, on_ray.manifest
    assert (a.splits, a.schema, a.skipped, a.skipped_count, a.layout) == (
        b.splits, b.schema, b.skipped, b.skipped_count, b.layout)


def test_image_folders_too(cluster, tmp_path):
    digits_folder(tmp_path / "digits", limit_per_class=15)
    source = tk.ImageFolder(tmp_path / "digits")
    local = tk.convert(source, tmp_path / "local",
                       shards=tk.ShardOptions(layout="per_class"), workers=1)
    on_ray = tk.convert(source, tmp_path / "ray",
                        shards=tk.ShardOptions(layout="per_class"), engine="ray")
    assert files(tmp_path / "ray") == files(tmp_path / "local")
    assert on_ray.manifest.schema == local.manifest.schema  # image format pinned as locally
    assert on_ray.manifest.schema["image"].size == (8, 8)
    # Photos of several sizes (and grey and colour): no size, channels as locally.
    from tests.datasets import encode_image, photos

    for c, (name, pixels) in enumerate(photos().items()):
        folder = tmp_path / "photos" / f"class_{c % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(3):
            (folder / f"{name}_{i}.png").write_bytes(
                encode_image(pixels[: 20 + i, : 24 + c], "PNG"))
    source = tk.ImageFolder(tmp_path / "photos")
    local = tk.convert(source, tmp_path / "local_photos", workers=1)
    on_ray = tk.convert(source, tmp_path / "ray_photos", engine="ray")
    assert files(tmp_path / "ray_photos") == files(tmp_path / "local_photos")
    assert on_ray.manifest.schema == local.manifest.schema
    assert local.manifest.schema["image"] == tk.Image("png", channels=3)


def test_a_failing_job_leaves_no_manifest(cluster, tmp_path):
    with pytest.raises(SourceError, match="record 17"):
        tk.write_dataset(rows(), tmp_path / "ds", SCHEMA, engine="ray")
    assert not (tmp_path / "ds" / "dataset.json").exists()


def test_cli_engine_flag(cluster, tmp_path, capsys):
    digits_folder(tmp_path / "digits", limit_per_class=5)
    assert main(["convert", str(tmp_path / "digits"), str(tmp_path / "ds"), "--engine", "ray",
                 "-q", "--json"]) == 0
    assert tk.load_manifest(tmp_path / "ds").num_records("train") == 50


def test_encoding_in_workers_imports_no_tensorflow():
    code = ("import sys, tfrecordkit.engines.ray_data, tfrecordkit.engines.local\n"
            "print('tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "False"


def test_a_given_schema_maps_class_folders_by_name(cluster, tmp_path):
    """The Ray engine stores a folder holding some of the schema's classes under the
    schema's ids, byte for byte as the local engine does."""
    from tests.convert.test_classes_by_name import SCHEMA, _folder, _labels

    _folder(tmp_path / "src", {"cat": 2, "bee": 2})
    for engine in ("ray", "local"):
        tk.convert(tk.open_source(tmp_path / "src"), tmp_path / engine, schema=SCHEMA,
                   engine=engine, workers=1)
        labels = _labels(tmp_path / engine)
        assert len(labels) == 4
        assert all(path.split("/")[0] == name for path, name in labels.items())
    for shard in (tmp_path / "local").glob("*.tfrecord"):
        assert (tmp_path / "ray" / shard.name).read_bytes() == shard.read_bytes()


@pytest.mark.parametrize("layout", ["mixed", "per_class"])
def test_an_append_on_ray_writes_the_local_appends_bytes(cluster, tmp_path, layout):
    digits_folder(tmp_path / "full", limit_per_class=12)
    old = tmp_path / "old"
    for path in (tmp_path / "full").rglob("*.png"):
        if path.parent.name != "7" and int(path.stem) % 2:
            (old / path.parent.name).mkdir(parents=True, exist_ok=True)
            (old / path.parent.name / path.name).write_bytes(path.read_bytes())
    options = {"split": {"train": 0.75, "val": 0.25},
               "shards": tk.ShardOptions(layout=layout, shard_size=3000)}
    for name in ("local", "ray"):
        tk.convert(old, tmp_path / name, workers=1, **options)
    changed = tmp_path / "full" / "1" / sorted(p.name for p in old.glob("1/*"))[0]
    changed.write_bytes((tmp_path / "full" / "2").glob("*.png").__next__().read_bytes())
    local = tk.append(tmp_path / "local", tmp_path / "full", workers=1, on_error="skip")
    on_ray = tk.append(tmp_path / "ray", tmp_path / "full", engine="ray", on_error="skip")
    ray_files, local_files = files(tmp_path / "ray"), files(tmp_path / "local")
    assert untagged(sorted(ray_files)) == untagged(sorted(local_files))
    assert sorted(ray_files.values()) == sorted(local_files.values())
    assert any("-a0001x" in name for name in local_files)
    assert (local.added, local.present) == (on_ray.added, on_ray.present)
    assert local.present == sum(1 for _ in old.rglob("*.png")) - 1
    a, b = local.manifest, on_ray.manifest
    assert untagged(a.splits) == untagged(b.splits)
    assert (a.schema, a.skipped_count) == (b.schema, b.skipped_count)
    assert a.skipped_count == 1 and "other content" in a.skipped[0]["reason"]
