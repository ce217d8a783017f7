"""Inputs that used to end in a traceback (IsADirectoryError, IndexError, UnicodeEncodeError,
TypeError, ValueError from a device) give one line naming the input and what is wrong: exit 1
on the command line, a TFRecordKitError (with its builtin mix-in) from the library."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit import TFRecordKitError
from tfrecordkit.cli import main


def _one_line(capsys, *argv: str) -> str:
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert status == 1, (argv, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", [["head", "-n", "1"], ["verify"], ["inspect"], ["index"]])
def test_a_device_is_one_line(capsys, command):
    assert "/dev/zero" in _one_line(capsys, *command, "/dev/zero")


def test_a_directory_named_like_a_record_file_is_one_line(capsys, tmp_path):
    (tmp_path / "x.tfrecord").mkdir()
    line = _one_line(capsys, "adopt", str(tmp_path))
    assert "x.tfrecord" in line and "directory" in line


def test_class_counts_beyond_the_class_list_are_one_line(capsys, tmp_path):
    schema = tk.Schema({"x": tk.Scalar("int64"), "label": tk.ClassLabel(["a", "b"])})
    tk.write_dataset([{"x": i, "label": i % 2} for i in range(10)], tmp_path / "ds", schema,
                     shards=tk.ShardOptions(layout="per_class"))
    manifest = json.loads((tmp_path / "ds" / "dataset.json").read_text())
    manifest["splits"]["train"]["class_counts"] = {"0": 5, "9": 5}
    (tmp_path / "ds" / "dataset.json").write_text(json.dumps(manifest))
    for command in ("stats", "verify"):
        assert "class id 9" in _one_line(capsys, command, str(tmp_path / "ds"))


def test_a_lone_surrogate_is_a_schema_error_naming_the_feature():
    schema = tk.Schema({"t": tk.Text(), "s": tk.Scalar("string"),
                        "q": tk.Sequence(tk.Text())})
    for name in ("t", "s", "q"):
        record = {"t": "a", "s": "b", "q": ["c"]}
        record[name] = "bad \udc80" if name != "q" else ["bad \udc80"]
        for encode in (lambda r: schema.encode(r, source=3),
                       lambda r: schema.encode_frames([r], sources=[3])):
            with pytest.raises(tk.SchemaError, match="lone surrogate") as caught:
                encode(record)
            assert caught.value.feature == name and caught.value.record == 3


def test_numpy_inputs_of_object_dtype_or_0d_are_one_line(tmp_path):
    for arrays in ({"x": np.array(5)}, {"x": np.array([{"a": 1}], dtype=object)}):
        with pytest.raises(tk.SourceError) as caught:
            tk.convert(tk.NumpyArrays(arrays), tmp_path / "out")
        assert "'x'" in str(caught.value) or "x:" in str(caught.value)


def test_argument_refusals_are_library_errors(tmp_path):
    schema = tk.Schema({"x": tk.Scalar("int64")})
    tk.write_dataset([{"x": i} for i in range(8)], tmp_path / "ds", schema)
    with pytest.raises(TFRecordKitError):
        tk.load_numpy_dataset(tmp_path / "ds", batch_size=2, sampling="sometimes")
    with pytest.raises(ValueError, match="batch_size"):  # still the builtin it always was
        tk.load_numpy_dataset(tmp_path / "ds", batch_size=0)
    with pytest.raises(IndexError):
        tk.open_split(tmp_path / "ds")[99]
    with pytest.raises(TFRecordKitError):
        tk.open_split(tmp_path / "ds")[99]
    with pytest.raises(TFRecordKitError):
        tk.decode_example(b"\xff\xff")


def test_a_misspelt_feature_name_is_named_beside_the_missing_one():
    schema = tk.Schema({"image": tk.Scalar("int64"), "label": tk.Scalar("int64")})
    with pytest.raises(tk.SchemaError, match=r"'image'.*missing.*'imgae'.*does not know"):
        schema.encode({"imgae": 1, "label": 2})


def test_a_corrupt_input_that_stops_a_conversion_says_how_to_skip_it(tmp_path):
    (tmp_path / "src" / "a").mkdir(parents=True)
    (tmp_path / "src" / "a" / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    with pytest.raises(tk.SourceError, match=r"bad\.png.*--on-error skip"):
        tk.convert(tk.ImageFolder(tmp_path / "src"), tmp_path / "out")


def test_files_that_are_not_media_are_counted_and_listed(tmp_path, capsys):
    from tests.datasets import encode_image, photos

    (tmp_path / "src" / "cat").mkdir(parents=True)
    (tmp_path / "src" / "cat" / "a.png").write_bytes(encode_image(photos()["camera"][:8, :8],
                                                                  "PNG"))
    (tmp_path / "src" / "cat" / "notes.txt").write_text("not an image")
    result = tk.convert(tk.ImageFolder(tmp_path / "src"), tmp_path / "out")
    assert result.records == 1
    assert result.ignored_count == 1 and result.ignored == ("cat/notes.txt",)
    assert "ignored 1 file(s)" in result.summary() and "cat/notes.txt" in result.summary()
    assert result.to_json()["ignored"] == ["cat/notes.txt"]


def test_an_error_during_a_conversion_starts_a_line_of_its_own(tmp_path):
    """The progress bar is closed before the error is printed (it shared the bar's line)."""
    import subprocess
    import sys

    from tests.datasets import encode_image

    (tmp_path / "src" / "a").mkdir(parents=True)
    good = encode_image(np.zeros((4, 4, 3), np.uint8), "PNG")
    (tmp_path / "src" / "a" / "good.png").write_bytes(good)
    (tmp_path / "src" / "a" / "cut.png").write_bytes(good[: len(good) // 2])
    done = subprocess.run([sys.executable, "-m", "tfrecordkit", "convert",
                           str(tmp_path / "src"), str(tmp_path / "out")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1
    lines = done.stderr.replace("\r", "\n").splitlines()
    error = [line for line in lines if "truncated PNG" in line]
    assert len(error) == 1 and error[0].startswith("tfrecordkit convert: "), done.stderr
