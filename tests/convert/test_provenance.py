"""Provenance: each record converted from a folder or a table keeps where it came from
(``__source``), readers give it only when asked, and it leads back to the very input."""

from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tests.datasets import digits_folder, encode_image, photos
from tfrecordkit.cli import main
from tfrecordkit.readers import SOURCE
from tfrecordkit.readers.torch_data import load_torch_dataset

PROVENANCE = tk.DecodeOptions(provenance=True)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("prov") / "digits"
    digits_folder(root, 4)
    return root


@pytest.fixture(scope="module")
def dataset(folder):
    out = folder.parent / "ds"
    tk.convert(tk.open_source(folder), out, split={"train": 0.75, "val": 0.25},
               shards=tk.ShardOptions(num_shards=3))
    return out


def test_each_record_names_the_file_it_holds(folder, dataset):
    seen = []
    for split in ("train", "val"):
        for batch in tk.load_numpy_dataset(dataset, split, batch_size=7, options=PROVENANCE):
            for source, pixels, label in zip(batch[SOURCE], batch["image"], batch["label"],
                                             strict=True):
                assert isinstance(source, str) and not os.path.isabs(source)
                on_disk = np.asarray(PILImage.open(folder / source))
                assert np.array_equal(pixels[..., 0], on_disk)  # the very file
                assert source.split("/")[0] == str(label)  # its class folder
                seen.append(source)
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.png"))
    assert sorted(seen) == files  # every input once


def test_readers_give_it_only_when_asked(dataset):
    plain = next(iter(tk.load_numpy_dataset(dataset, batch_size=4, sampling=tk.InOrder())))
    asked = next(iter(tk.load_numpy_dataset(dataset, batch_size=4, sampling=tk.InOrder(),
                                            options=PROVENANCE)))
    assert SOURCE not in plain and set(asked) == set(plain) | {SOURCE}
    for key in plain:
        assert np.array_equal(plain[key], asked[key])
    row = tk.load_grain_source(dataset)[0]
    assert SOURCE not in row
    assert tk.load_grain_source(dataset, options=PROVENANCE)[0][SOURCE] == asked[SOURCE][0]
    torch_batch = next(iter(load_torch_dataset(dataset, batch_size=4, sampling=tk.InOrder(),
                                               options=PROVENANCE)))
    assert list(torch_batch[SOURCE]) == list(asked[SOURCE])
    pk = next(iter(tk.load_numpy_dataset(dataset, sampling=tk.PK(2, 2), options=PROVENANCE)))
    assert len(pk[SOURCE]) == 4 and all(s.endswith(".png") for s in pk[SOURCE])


def test_the_manifest_says_so_and_the_schema_lists_it(dataset):
    manifest = tk.load_manifest(dataset)
    raw = json.loads((dataset / "dataset.json").read_text())
    assert raw["format_version"] == 5
    assert manifest.schema[SOURCE] == tk.Text()
    assert manifest.schema.user_features == ["image", "label"]


def test_it_can_be_turned_off(folder, tmp_path):
    result = tk.convert(tk.ImageFolder(folder, provenance=False), tmp_path / "ds")
    assert SOURCE not in result.manifest.schema
    assert json.loads((tmp_path / "ds" / "dataset.json").read_text())["format_version"] == 2
    with pytest.raises(tk.DatasetError, match="carry no '__source'"):
        tk.load_numpy_dataset(tmp_path / "ds", batch_size=4, options=PROVENANCE)
    assert main(["convert", str(folder), str(tmp_path / "cli"), "--no-provenance"]) == 0
    assert SOURCE not in tk.load_manifest(tmp_path / "cli").schema


def test_table_rows_are_named_by_file_and_row(tmp_path):
    images = photos()
    rows = []
    for i, name in enumerate(["coins", "camera", "coins", "camera", "coins"]):
        path = tmp_path / f"img{i}.png"
        path.write_bytes(encode_image(images[name], "PNG"))
        rows.append({"file": path.name, "caption": f"row {i + 1}", "label": name})
    with open(tmp_path / "table.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["file", "caption", "label"])
        writer.writeheader()
        writer.writerows(rows)
    tk.convert(tk.open_source(tmp_path / "table.csv"), tmp_path / "ds")
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=5, options=PROVENANCE)))
    for source, caption in zip(batch[SOURCE], batch["caption"], strict=True):
        name, _, row = source.partition(":")
        assert name == "table.csv" and caption == f"row {row}"  # the row it came from


def test_non_utf8_file_names_are_kept_as_escaped_text(tmp_path):
    root = os.fsencode(tmp_path / "src")
    os.makedirs(root + b"/caf\xe9")
    with open(root + b"/caf\xe9/\xff.png", "wb") as f:
        f.write(encode_image(photos()["coins"], "PNG"))
    tk.convert(tk.ImageFolder(tmp_path / "src"), tmp_path / "ds")
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=1, options=PROVENANCE)))
    assert list(batch[SOURCE]) == ["caf\\xe9/\\xff.png"]


def test_users_cannot_take_the_name_for_another_kind_of_feature():
    with pytest.raises(tk.SchemaError, match="__id"):
        tk.Schema({"__id": tk.Scalar("int64")})
    with pytest.raises(tk.SchemaError, match="__source"):
        tk.Schema({"__source": tk.Scalar("int64")})


def test_head_and_show_show_it(folder, dataset, tmp_path, capsys):
    assert main(["head", str(dataset), "-n", "1"]) == 0
    assert "__source: " in capsys.readouterr().out
    tk.convert(tk.ImageFolder(folder, provenance=False), tmp_path / "plain",
               split={"train": 0.75, "val": 0.25}, shards=tk.ShardOptions(num_shards=3))
    with_source = np.asarray(tk.show_examples(dataset, n=4))
    without = np.asarray(tk.show_examples(tmp_path / "plain", n=4))
    # The same tiles; under the class name, a second caption line: the file it came from.
    assert with_source.shape == without.shape
    tile, second_line = np.s_[4:132, 4:132], np.s_[146:158, 4:132]
    assert np.array_equal(with_source[tile], without[tile])
    assert (without[second_line] == without[second_line][0, 0]).all()  # background only
    assert (with_source[second_line] != with_source[second_line][0, 0]).any()  # text


@pytest.mark.integration
def test_tf_data_gives_the_same_sources(dataset):
    tf_batch = next(iter(tk.load_tf_dataset(dataset, batch_size=6, sampling=tk.InOrder(),
                                            options=PROVENANCE)))
    numpy_batch = next(iter(tk.load_numpy_dataset(dataset, batch_size=6, sampling=tk.InOrder(),
                                                  options=PROVENANCE)))
    assert [s.decode() for s in tf_batch[SOURCE].numpy()] == list(numpy_batch[SOURCE])
    plain = next(iter(tk.load_tf_dataset(dataset, batch_size=6, sampling=tk.InOrder())))
    assert SOURCE not in plain
    # PxK batches too: each record's input beside its pixels, in tf.data as in NumPy.
    pk = next(iter(tk.load_tf_dataset(dataset, sampling=tk.PK(2, 2), options=PROVENANCE)))
    sources = [s.decode() for s in pk[SOURCE].numpy()]
    assert len(sources) == 4
    assert [s.split("/")[0] for s in sources] == [str(int(v)) for v in pk["label"].numpy()]
