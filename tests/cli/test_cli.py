"""The command line, in process through ``main(argv)`` and once as ``python -m tfrecordkit``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tfrecordkit import RecordWriter, ShardOptions, encode_example
from tfrecordkit.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_inspect_infers_kinds_and_content_of_a_tf_written_file(capsys, golden):
    status, out, _ = run(capsys, "inspect", "--json", str(golden / "examples.tfrecord"))
    assert status == 0
    report = json.loads(out)
    assert report["records"] == 5
    assert report["files"][0]["compression"] == "none"
    features = report["features"]
    assert features["image"]["kind"] == "bytes" and features["image"]["content"] == "jpeg"
    assert features["caption"]["kind"] == "bytes" and features["caption"]["content"] == "text"
    assert features["label"]["kind"] == "int64"
    assert (features["label"]["min_value"], features["label"]["max_value"]) == (0, 2)
    assert features["scores"]["kind"] == "float"
    assert (features["scores"]["min_values_per_record"],
            features["scores"]["max_values_per_record"]) == (3, 7)
    assert features["extremes"]["min_value"] == -(2**63)
    assert all(f["present_in_every_record"] for f in features.values())
    assert features["label"]["parse_spec"] == "tf.io.FixedLenFeature([], tf.int64)"
    assert features["scores"]["parse_spec"] == "tf.io.VarLenFeature(tf.float32)"


def test_inspect_shows_the_schema_readers_infer_and_adopt_writes(capsys, golden, tmp_path):
    import tfrecordkit as tk

    status, out, _ = run(capsys, "inspect", "--json", str(golden / "examples.tfrecord"))
    assert status == 0
    shown = tk.Schema.from_json(json.loads(out)["schema"])
    assert shown == tk.infer_schema(str(golden / "examples.tfrecord"), sample=None)
    adopted = tk.adopt(str(golden / "examples.tfrecord"), tmp_path / "d")
    assert {n: f for n, f in adopted.schema.items() if n != "label"} == {
        n: f for n, f in shown.items() if n != "label"}
    status, out, _ = run(capsys, "inspect", str(golden / "examples.tfrecord"))
    assert status == 0 and "schema the readers infer" in out and "image: Image(" in out


def test_inspect_text_output_and_compressed_input(capsys, golden):
    status, out, _ = run(capsys, "inspect", str(golden / "examples.tfrecord.gz"))
    assert status == 0
    assert "5 records" in out and "compression gzip" in out
    image_line = next(line for line in out.splitlines() if line.strip().startswith("image"))
    assert "jpeg" in image_line


def test_inspect_reports_absent_features_as_varlen(capsys, tmp_path):
    path = tmp_path / "sparse.tfrecord"
    with RecordWriter(path) as writer:
        writer.write(encode_example({"a": 1, "b": "x"}))
        writer.write(encode_example({"a": 2}))
    _, out, _ = run(capsys, "inspect", "--json", str(path))
    features = json.loads(out)["features"]
    assert features["b"]["present_in"] == 1
    assert not features["b"]["present_in_every_record"]
    assert features["b"]["parse_spec"] == "tf.io.VarLenFeature(tf.string)"


@pytest.mark.integration
def test_emitted_feature_description_parses_with_tensorflow(tf, capsys, golden):
    status, code, _ = run(capsys, "inspect", "--emit-code", str(golden / "examples.tfrecord"))
    assert status == 0
    namespace: dict[str, object] = {}
    exec(code, namespace)
    description = namespace["feature_description"]
    dataset = tf.data.TFRecordDataset(str(golden / "examples.tfrecord")).batch(5)
    batch = tf.io.parse_example(next(iter(dataset)), description)
    assert batch["label"].numpy().tolist() == [0, 1, 2, 0, 1]
    assert batch["image"].shape == (5,)
    assert tf.io.decode_jpeg(batch["image"][0]).shape == (8, 12, 3)


@pytest.mark.integration
def test_emitted_reader_decodes_images_to_their_stored_shapes(tf, capsys, golden, tmp_path):
    """The emitted code is a complete reader: images decoded, and given their stored dims
    (tfrecordkit's name/height or the OD API's image/height), variable lists dense."""
    _, code, _ = run(capsys, "inspect", "--emit-code", str(golden / "examples.tfrecord"))
    namespace: dict[str, object] = {}
    exec(code, namespace)
    rows = list(namespace["load"]([str(golden / "examples.tfrecord")]))  # type: ignore[operator]
    assert [tuple(r["image"].shape) for r in rows][:2] == [(8, 12, 3), (9, 12, 3)]
    assert rows[1]["scores"].shape == (4,)
    import numpy as np

    import tfrecordkit as tk
    from tests.datasets import encode_image

    schema = tk.Schema({"image": tk.Image("png"), "label": tk.Scalar("int64")})
    tk.write_dataset([{"image": encode_image(np.full((5 + k, 7, 3), k, np.uint8), "PNG"),
                       "label": k} for k in range(3)], tmp_path / "ds", schema,
                       shards=tk.ShardOptions(shuffle=False))
    shards = [str(p) for p in sorted((tmp_path / "ds").glob("*.tfrecord"))]
    _, out, _ = run(capsys, "inspect", "--emit-code", "--json", *shards)
    emitted = json.loads(out)
    assert emitted["feature_description"]["image/height"] == "tf.io.FixedLenFeature([], tf.int64)"
    assert "# the stored dims" in emitted["code"]
    namespace = {}
    exec(emitted["code"], namespace)
    got = {int(r["label"]): r["image"].numpy() for r in namespace["load"](shards)}
    assert all(got[k].shape == (5 + k, 7, 3) and (got[k] == k).all() for k in range(3))


@pytest.mark.integration
def test_emitted_sequence_features_parse_with_tensorflow(tf, capsys, golden):
    _, code, _ = run(capsys, "inspect", "--emit-code", str(golden / "sequence.tfrecord"))
    namespace: dict[str, object] = {}
    exec(code, namespace)
    record = next(iter(tf.data.TFRecordDataset(str(golden / "sequence.tfrecord"))))
    context, lists = tf.io.parse_single_sequence_example(
        record, namespace["context_features"], namespace["sequence_features"])
    assert context["id"].numpy() == b"clip-7"
    assert lists["tokens"].to_list() == [[1, 2], [3]]


def test_verify_clean_and_corrupt(capsys, golden, tmp_path):
    status, out, _ = run(capsys, "verify", str(golden))
    assert status == 0
    assert out.count("OK") == 4
    bad = tmp_path / "bad.tfrecord"
    data = bytearray((golden / "examples.tfrecord").read_bytes())
    data[100] ^= 0xFF
    data[-1] ^= 0xFF
    bad.write_bytes(bytes(data))
    status, out, _ = run(capsys, "verify", str(bad))
    assert status == 1
    lines = out.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{bad}: record 0 at byte offset 0: data crc failed")
    assert "record 4" in lines[1] and "data crc" in lines[1]
    status, out, _ = run(capsys, "verify", "--json", str(bad))
    report = json.loads(out)
    assert status == 1 and not report["ok"]
    assert [p["index"] for p in report["files"][0]["problems"]] == [0, 4]


def test_index_then_random_access(capsys, golden, tmp_path):
    path = tmp_path / "copy.tfrecord"
    shutil.copy(golden / "examples.tfrecord", path)
    status, out, _ = run(capsys, "index", "--json", str(path))
    assert status == 0
    assert json.loads(out)["files"][0]["records"] == 5
    assert len((tmp_path / "copy.tfrecord.index").read_text().splitlines()) == 5


def test_index_of_compressed_file_is_a_data_error(capsys, golden):
    status, _, err = run(capsys, "index", str(golden / "examples.tfrecord.gz"))
    assert status == 1
    assert "cannot be seeked" in err


def test_head_summarises_bytes(capsys, golden):
    status, out, _ = run(capsys, "head", "-n", "2", "--json", str(golden / "examples.tfrecord"))
    assert status == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 2
    assert rows[0]["features"]["caption"] == "a cat on a mat"
    assert rows[0]["features"]["image"].startswith("<jpeg, ")
    assert rows[0]["features"]["label"] == 0


def test_missing_file_is_a_data_error_and_bad_flag_a_usage_error(capsys, tmp_path):
    status, _, err = run(capsys, "verify", str(tmp_path / "nope.tfrecord"))
    assert status == 1 and "no such file" in err
    status, _, _ = run(capsys, "verify", "--frobnicate", "x")
    assert status == 2


def test_python_dash_m_entry_point(golden):
    result = subprocess.run(
        [sys.executable, "-m", "tfrecordkit", "verify", "-q", str(golden / "examples.tfrecord")],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "OK, 5 records" in result.stdout


def test_verify_reports_each_corruption_once(capsys, tmp_path):
    import logging

    from tfrecordkit import ClassLabel, Scalar, Schema, write_dataset

    schema = Schema({"x": Scalar("float32"), "label": ClassLabel(["cat", "dog"])})
    write_dataset([{"x": i / 3, "label": i % 2} for i in range(50)], tmp_path / "ds", schema,
                  shards=ShardOptions(num_shards=1))
    shard = next((tmp_path / "ds").glob("*.tfrecord"))
    data = bytearray(shard.read_bytes())
    data[300] ^= 0xFF
    shard.write_bytes(bytes(data))
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()  # main() sets up logging to (this test's) stderr afresh
    try:
        assert main(["verify", str(tmp_path / "ds")]) == 1
    finally:
        root.handlers[:] = saved  # later tests must not log into this test's closed stream
    captured = capsys.readouterr()
    both = captured.out + captured.err
    assert both.count("length crc failed") == 1, both


def test_head_names_classes_of_a_dataset(capsys, tmp_path):
    from tfrecordkit import ClassLabel, Scalar, Schema, write_dataset

    schema = Schema({"x": Scalar("int64"), "label": ClassLabel(["cat", "dog"])})
    write_dataset([{"x": i, "label": i % 2} for i in range(4)], tmp_path / "ds", schema,
                  shards=ShardOptions(shuffle=False))
    assert main(["head", str(tmp_path / "ds"), "-n", "2", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["features"]["label"] for line in lines] == ["0 (cat)", "1 (dog)"]


@pytest.mark.integration
def test_emitted_reader_gives_the_numpy_loaders_pixels(tf, capsys, tmp_path):
    """JPEGs (accurate DCT) and PNGs in one key, as the library's readers decode them: the
    emitted code's pixels equal the NumPy loader's, byte for byte."""
    import numpy as np

    import tfrecordkit as tk
    from tests.datasets import encode_image, photos

    shots = photos()
    path = tmp_path / "mixed.tfrecord"
    with tk.RecordWriter(path) as writer:
        for i, name in enumerate(["astronaut", "coffee", "chelsea", "rocket"]):
            pixels = shots[name][:40, :48]
            data = encode_image(pixels, "JPEG" if i % 2 == 0 else "PNG")
            writer.write(tk.encode_example({"image": [data], "label": [i]}))
    _, code, _ = run(capsys, "inspect", "--emit-code", str(path))
    assert 'dct_method="INTEGER_ACCURATE"' in code and "tf.io.is_jpeg" in code
    namespace: dict[str, object] = {}
    exec(code, namespace)
    emitted = {int(r["label"]): r["image"].numpy()
               for r in namespace["load"]([str(path)])}  # type: ignore[operator]
    batch = next(iter(tk.load_numpy_dataset(str(path), batch_size=4, sampling=tk.InOrder())))
    for k in range(4):
        height, width = batch["image"]["lengths"][k]
        np.testing.assert_array_equal(emitted[k], batch["image"]["values"][k, :height, :width])
