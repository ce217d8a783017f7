"""What an export must never do: delete the dataset it reads or a folder of other files, lose
a value to a name (split names that sanitise alike, feature names that are paths, binary
bytes), or leave an unfinished export where a finished one goes."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_image
from tfrecordkit.cli import main
from tfrecordkit.errors import OptionError
from tfrecordkit.exporters import MARKER


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    rows = [{"image": encode_image(np.full((4, 4, 3), i, np.uint8), "PNG"), "label": i % 2}
            for i in range(12)]
    schema = tk.Schema({"image": tk.Image("png"), "label": tk.ClassLabel(["a", "b"])})
    tk.write_dataset(rows, root / "data" / "ds", schema, progress=False)
    return root / "data" / "ds"


def files_under(folder) -> dict[str, bytes]:
    return {os.path.relpath(os.path.join(d, f), folder): Path(d, f).read_bytes()
            for d, _, names in os.walk(folder) for f in names}


@pytest.mark.parametrize("where", ["itself", "its folder", "inside it"])
def test_an_output_that_is_holds_or_lies_in_the_dataset_is_refused_before_anything_goes(
        small, where):
    out = {"itself": small, "its folder": small.parent, "inside it": small / "wds"}[where]
    before = files_under(small.parent)
    with pytest.raises(OptionError, match="nothing was removed") as err:
        tk.export(small, out, to="webdataset", overwrite=True, progress=False)
    assert "\n" not in str(err.value)
    assert files_under(small.parent) == before


def test_the_cli_refuses_an_export_over_its_own_input(small, capsys):
    before = files_under(small.parent)
    code = main(["export", str(small), "--to", "webdataset", str(small.parent),
                        "--overwrite"])
    assert code != 0 and "holds the dataset" in capsys.readouterr().err
    assert files_under(small.parent) == before


def test_overwrite_replaces_only_an_export_of_ours(small, tmp_path):
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(OptionError, match="not an export of tfrecordkit"):
        tk.export(small, other, to="parquet", overwrite=True, progress=False)
    assert (other / "notes.txt").read_text() == "keep me"
    (tmp_path / "file").write_text("x")
    with pytest.raises(OptionError, match="is a file"):
        tk.export(small, tmp_path / "file", to="parquet", progress=False)

    out = tmp_path / "out"
    tk.export(small, out, to="webdataset", progress=False)
    marker = json.loads((out / MARKER).read_text())
    assert marker["target"] == "webdataset" and marker["written_by"].startswith("tfrecordkit")
    tk.export(small, out, to="parquet", overwrite=True, progress=False)
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "train-00000-of-00001.parquet"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging


def test_a_symlinked_output_folder_receives_the_export(small, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    result = tk.export(small, tmp_path / "link", to="webdataset", progress=False)
    assert (tmp_path / "link").is_symlink() and (real / "train-000000.tar").is_file()
    assert result.files == [str(tmp_path / "link" / "train-000000.tar")]
    tk.export(small, tmp_path / "link", to="webdataset", overwrite=True, progress=False)
    assert (tmp_path / "link").is_symlink() and (real / MARKER).is_file()


def test_split_names_that_sanitise_alike_are_refused_naming_both(tmp_path):
    schema = tk.Schema({"x": tk.Scalar("int64")})
    tk.write_dataset([{"x": i} for i in range(10)], tmp_path / "ds", schema, split="v1.0",
                     progress=False, key="x")
    tk.append(tmp_path / "ds", tk.sources.Records([{"x": 100 + i} for i in range(5)], schema,
                                                  "more", key="x"), split="v1_0",
              new_split=True)
    with pytest.raises(OptionError, match=r"'v1\.0' and 'v1_0'"):
        tk.export(tmp_path / "ds", tmp_path / "out", to="parquet", progress=False)
    assert not (tmp_path / "out").exists()
    one = tk.export(tmp_path / "ds", tmp_path / "a", to="parquet", split="v1.0",
                    progress=False)
    assert one.records == {"v1.0": 10}


NAMES = ["views/left", "views_left", "views%2Fleft", "../../x", "a.b", "n" * 200, "ünï",
         "with space", "Left", "left"]  # the last two: one name once WebDataset lowercases


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    """Images under names that are paths, escape alike naively, are long; a binary value."""
    root = tmp_path_factory.mktemp("named")
    rng = np.random.default_rng(0)
    schema = tk.Schema({**{n: tk.Image("png") for n in NAMES}, "blob": tk.Scalar("string")})
    rows = [{**{n: encode_image(rng.integers(0, 256, (3, 3, 3), dtype=np.uint8), "PNG")
                for n in NAMES}, "blob": bytes([0xFF, 0xFE, 0, i, 0x80])} for i in range(6)]
    tk.write_dataset(rows, root / "ds", schema, progress=False)
    return root / "ds", rows


# webdataset leaves its shards' file objects to the garbage collector: collected in the test.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_feature_names_stay_inside_the_archive_and_their_sample(named, tmp_path):
    path, rows = named
    result = tk.export(path, tmp_path / "wds", to="webdataset", progress=False)
    (tar,) = result.files
    with tarfile.open(tar) as archive:
        members = archive.getnames()
        assert all("/" not in m and not m.startswith(".") for m in members)
        keys = {m.split(".", 1)[0] for m in members}
        assert len(keys) == len(rows)  # one sample a record, none split by a name
        per_key = len(members) // len(rows)
        assert per_key == len(NAMES) + 2  # every image, the blob, the json: none merged
    import webdataset

    samples = list(webdataset.WebDataset(tar, shardshuffle=False, empty_check=False))
    gc.collect()  # webdataset leaves the tar to the collector
    assert len(samples) == len(rows)
    order = {r["blob"][3]: r for r in rows}
    from urllib.parse import unquote

    for sample in samples:
        blob = sample["blob.bin"]
        row = order[blob[3]]
        assert blob == row["blob"]  # binary bytes kept, no U+FFFD
        first = next(iter(NAMES))
        assert sample["png"] == row[first]
        for ext, data in sample.items():
            if ext.endswith(".png"):
                assert data == row[unquote(ext[: -len(".png")])]


@pytest.mark.parametrize("to", ["parquet", "hf"])
def test_binary_values_are_binary_columns_and_long_names_are_columns(named, tmp_path, to):
    import datasets

    path, rows = named
    tk.export(path, tmp_path / to, to=to, progress=False)
    ds = (datasets.load_dataset("parquet", data_dir=str(tmp_path / to), split="train")
          if to == "parquet" else datasets.load_from_disk(str(tmp_path / to))["train"])
    assert ds.features["blob"].dtype == "binary"
    assert sorted(ds["blob"]) == sorted(r["blob"] for r in rows)
    assert set(NAMES) <= set(ds.column_names)


def test_a_nul_in_a_feature_name_is_refused_for_columns_in_one_line(tmp_path):
    schema = tk.Schema({"a\x00b": tk.Scalar("int64")})
    tk.write_dataset([{"a\x00b": 1}], tmp_path / "ds", schema, progress=False)
    with pytest.raises(OptionError, match="NUL") as err:
        tk.export(tmp_path / "ds", tmp_path / "out", to="parquet", progress=False)
    assert "\n" not in str(err.value) and not (tmp_path / "out").exists()
    tk.export(tmp_path / "ds", tmp_path / "wds", to="webdataset", progress=False)


def test_a_failed_export_leaves_the_output_as_it_was(small, tmp_path, monkeypatch):
    out = tmp_path / "out"
    tk.export(small, out, to="webdataset", rows_per_file=5, progress=False)
    before = files_under(out)
    from tfrecordkit.exporters import _webdataset

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(_webdataset, "_sample", broken)
    with pytest.raises(OSError, match="disk full"):
        tk.export(small, out, to="webdataset", overwrite=True, progress=False)
    assert files_under(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # the staging folder went


@pytest.mark.integration
def test_a_killed_export_is_never_where_a_finished_one_goes(tmp_path):
    schema = tk.Schema({"x": tk.Tensor((256,), "float32")})
    rows = ({"x": np.full(256, i, np.float32)} for i in range(20_000))
    tk.write_dataset(rows, tmp_path / "ds", schema, progress=False)
    script = (f"import tfrecordkit as tk; print('go', flush=True); "
              f"tk.export({str(tmp_path / 'ds')!r}, {str(tmp_path / 'out')!r}, "
              "to='webdataset', rows_per_file=500, progress=False)")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None and process.stdout.readline() == "go\n"
    while not any(p.name.startswith(".out.tfrecordkit-export-") and any(p.glob("*.tar"))
                  for p in tmp_path.iterdir()) and process.poll() is None:
        pass
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stdout.close()
    if (tmp_path / "out").exists():  # it finished before the kill: whole
        assert (tmp_path / "out" / MARKER).is_file()
    # The next export removes the killed one's staging folder and finishes.
    result = tk.export(tmp_path / "ds", tmp_path / "out", to="webdataset", rows_per_file=5000,
                       progress=False, overwrite=True)
    assert result.records == {"train": 20_000}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    with tarfile.open(result.files[0]) as archive:
        assert len(archive.getnames()) == 5000  # one .json a record


def test_an_s3_output_is_refused_before_anything_is_read(small):
    with pytest.raises(OptionError, match="object storage") as err:
        tk.export(small, "s3://bucket/out", to="webdataset", progress=False)
    assert "\n" not in str(err.value)
