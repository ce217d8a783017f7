"""dataset.json is untrusted input: validated as a whole, one line naming the key, no escape."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecordkit as tk
from tfrecordkit import DatasetError, ShardOptions
from tfrecordkit.convert import write_dataset
from tfrecordkit.schema import ClassLabel, Scalar, Schema
from tfrecordkit.store import MANIFEST_NAME, Manifest, load_manifest


@pytest.fixture
def dataset(tmp_path):
    schema = Schema({"v": Scalar("int64"), "label": ClassLabel(["a", "b"])})
    out = tmp_path / "ds"
    write_dataset([{"v": i, "label": i % 2} for i in range(20)], out, schema,
                  shards=ShardOptions(num_shards=2),
                  progress=False)
    return out


def _edit(dataset, change):
    data = json.loads((dataset / MANIFEST_NAME).read_text())
    change(data)
    (dataset / MANIFEST_NAME).write_text(json.dumps(data))


def _first_shard(data):
    return data["splits"]["train"]["shards"][0]


@pytest.mark.parametrize("name", ["../outside.tfrecord", "/etc/passwd", "sub/dir.tfrecord",
                                  "..", ".", "a\\b.tfrecord", "x\x00y", ""])
@pytest.mark.parametrize("key", ["file", "index"])
def test_shard_and_index_names_must_be_plain_names_inside_the_dataset(dataset, name, key):
    _edit(dataset, lambda d: _first_shard(d).__setitem__(key, name))
    with pytest.raises(DatasetError, match=rf"plain file name.*shards\[0\]\.{key}"):
        load_manifest(dataset)


@pytest.mark.parametrize(("change", "where"), [
    (lambda d: d.__setitem__("splits", []), r"\$\.splits"),
    (lambda d: _first_shard(d).__setitem__("records", "10"), r"records"),
    (lambda d: _first_shard(d).__setitem__("records", -1), r"records"),
    (lambda d: _first_shard(d).__setitem__("bytes", 10**30), r"bytes"),
    (lambda d: d.__setitem__("format_version", 0), r"format_version"),
    (lambda d: d.__setitem__("layout", "diagonal"), r"layout"),
    (lambda d: d.__setitem__("compression", "lz4"), r"compression"),
    (lambda d: d.__setitem__("label_feature", "v"), r"label_feature"),
    (lambda d: _first_shard(d).__setitem__("class_counts", {"7": 1}), r"class id 7"),
    (lambda d: _first_shard(d).__setitem__("crc32c", "zz"), r"crc32c"),
    (lambda d: d["splits"]["train"].__setitem__("records", 999), r"splits\.train\.records"),
    (lambda d: d["schema"]["features"]["v"].__setitem__("kind", "nope"), r"schema"),
    (lambda d: d.pop("splits"), r"splits"),
    # This session's fields: a label from the shard, an image size.
    (lambda d: d["schema"]["features"]["label"].__setitem__("from_shard", "yes"), r"schema"),
    (lambda d: d["schema"]["features"]["label"].__setitem__("from_shard", True),
     r"from_shard.*label_feature"),
    (lambda d: d["schema"]["features"].__setitem__(
        "v", {"kind": "image", "encoding": "png", "channels": 3, "size": [0, 4]}), r"schema"),
    (lambda d: d["schema"]["features"].__setitem__(
        "v", {"kind": "image", "encoding": "png", "channels": 3, "size": [4, 4, 4]}),
     r"schema"),
])
def test_bad_values_name_their_key(dataset, change, where):
    _edit(dataset, change)
    with pytest.raises(DatasetError, match=where) as err:
        load_manifest(dataset)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("raw", [b"[]", b"1e400", b"[" * 100_000 + b"]" * 100_000,
                                 b'{"format": "\xff\xfe"}', b"", b"null", b"{" * 50_000,
                                 b'{"format": "tfrecordkit-dataset", "format_version": 1e400}'])
def test_malformed_json_is_one_line_never_a_traceback(dataset, raw):
    (dataset / MANIFEST_NAME).write_bytes(raw)
    with pytest.raises(DatasetError) as err:
        load_manifest(dataset)
    assert "\n" not in str(err.value)


def test_version_1_datasets_still_read(dataset):
    """Datasets written before the vocabulary (format version 2) read unchanged."""
    assert json.loads((dataset / "dataset.json").read_text())["format_version"] == 2
    _edit(dataset, lambda d: d.__setitem__("format_version", 1))
    assert load_manifest(dataset).splits


def test_a_newer_format_version_asks_for_an_upgrade(dataset):
    _edit(dataset, lambda d: d.__setitem__("format_version", 99))
    with pytest.raises(DatasetError, match="upgrade tfrecordkit"):
        load_manifest(dataset)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8)


def _paths(value, prefix=()):
    """Every (path, value) inside a JSON value."""
    yield prefix, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


@settings(max_examples=300)
@given(st.data())
def test_random_values_at_every_key_are_dataset_errors(dataset_json, data):
    paths = list(_paths(dataset_json))
    path, _ = data.draw(st.sampled_from(paths[1:]))
    replacement = data.draw(JSON)
    document = json.loads(json.dumps(dataset_json))
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = replacement
    message = ""
    try:
        Manifest.from_json(document)  # valid after all (e.g. a created_by value): fine
    except DatasetError as err:  # anything else escapes and fails the test
        message = str(err)
    assert "\n" not in message


@pytest.fixture(scope="module")
def dataset_json(tmp_path_factory):
    schema = Schema({"v": Scalar("int64"), "label": ClassLabel(["a", "b"])})
    out = tmp_path_factory.mktemp("m") / "ds"
    write_dataset([{"v": i, "label": i % 2} for i in range(20)], out, schema,
                  shards=ShardOptions(num_shards=2, layout="per_class"), progress=False)
    return json.loads((out / MANIFEST_NAME).read_text())


@pytest.mark.integration
def test_no_command_follows_a_manifest_out_of_the_dataset(dataset, tmp_path):
    outside = tmp_path / "outside.tfrecord"
    shard = dataset / json.loads((dataset / MANIFEST_NAME).read_text())[
        "splits"]["train"]["shards"][0]["file"]
    outside.write_bytes(shard.read_bytes())  # same bytes, so counts and CRC would match
    _edit(dataset, lambda d: _first_shard(d).__setitem__("file", "../outside.tfrecord"))
    for command in (["verify", str(dataset)], ["inspect", str(dataset)],
                    ["head", str(dataset)], ["stats", str(dataset)]):
        result = subprocess.run([sys.executable, "-m", "tfrecordkit", *command],
                                capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 1, (command, result.stdout)
        assert "plain file name" in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1

    with pytest.raises(DatasetError, match="file"):
        tk.load_numpy_dataset(dataset, sampling=tk.PK(2, 2))
