"""Files someone else wrote, read by a schema inferred from their records: one rule for globs,
``infer_schema`` and ``adopt``; what a sample missed is refused loudly, never dropped."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_image, photos

LATE = 1100  # records before the late key / length first appears (past the 1,000 sampled)


def _write(path, records):
    with tk.RecordWriter(path) as writer:
        for record in records:
            writer.write(tk.encode_example(record))


def _late_key(i):
    record = {"x": [float(i)], "label": [i % 3]}
    if i >= LATE:
        record["extra"] = [i, i + 1]
    return record


def _late_length(i):
    return {"v": [float(i)] * (4 if i < LATE else 5), "label": [i % 3]}


def _all(loader):
    return list(loader)


@pytest.mark.parametrize(("make", "key"), [(_late_key, "extra"), (_late_length, "v")])
def test_a_key_or_length_first_seen_late_is_refused_naming_file_record_key_and_fix(
        tmp_path, make, key):
    _write(tmp_path / "late.tfrecord", [make(i) for i in range(LATE + 20)])
    pattern = str(tmp_path / "*.tfrecord")
    with pytest.raises(tk.SchemaError) as caught:
        _all(tk.load_numpy_dataset(pattern, batch_size=64, sampling=tk.InOrder()))
    message = str(caught.value)
    assert "late.tfrecord" in message and key in message
    assert "infer_schema(files, sample=None)" in message
    grain = tk.load_grain_source(pattern)
    with pytest.raises(tk.SchemaError, match=key):
        grain[LATE + 3]


@pytest.mark.parametrize(("make", "key"), [(_late_key, "extra"), (_late_length, "v")])
def test_every_record_profiled_reads_them_and_adopt_describes_them_alike(tmp_path, make, key):
    records = [make(i) for i in range(LATE + 20)]
    _write(tmp_path / "late.tfrecord", records)
    pattern = str(tmp_path / "*.tfrecord")
    schema = tk.infer_schema(pattern, sample=None)
    assert isinstance(schema[key], tk.Sequence)
    adopted = tk.adopt(pattern, tmp_path / "adopted")
    assert adopted.schema["label"] == tk.ClassLabel(["0", "1", "2"])  # adopt names the label
    assert {k: f for k, f in adopted.schema.items() if k != "label"} == {
        k: f for k, f in schema.items() if k != "label"}
    by_glob = _all(tk.load_numpy_dataset(pattern, batch_size=64, sampling=tk.InOrder(),
                                         read=tk.ReadOptions(schema=schema)))
    by_adopt = _all(tk.load_numpy_dataset(tmp_path / "adopted", batch_size=64,
                                          sampling=tk.InOrder()))
    assert len(by_glob) == len(by_adopt)
    for a, b in zip(by_glob, by_adopt, strict=True):
        for name in (key, "label"):
            np.testing.assert_array_equal(a[name]["values"] if isinstance(a[name], dict)
                                          else a[name],
                                          b[name]["values"] if isinstance(b[name], dict)
                                          else b[name])
    last = by_glob[-1][key]
    want = records[-1][key]
    row = last["values"][-1][: int(last["lengths"][-1][0])]
    np.testing.assert_array_equal(row, np.asarray(want, row.dtype))


def test_a_key_only_in_a_later_file_is_in_the_sample(tmp_path):
    _write(tmp_path / "a.tfrecord", [{"x": [1.0]} for _ in range(1500)])
    _write(tmp_path / "b.tfrecord", [{"x": [2.0], "y": [7]} for _ in range(10)])
    schema = tk.infer_schema(str(tmp_path / "*.tfrecord"))
    assert set(schema) == {"x", "y"}
    assert isinstance(schema["y"], tk.Sequence)  # absent from a.tfrecord's records


def test_the_rule_for_each_kind(tmp_path):
    shots = photos()
    records = []
    for i in range(6):
        records.append({
            "image": [encode_image(shots["astronaut"][: 16 + i, :20], "JPEG")],
            "png": [encode_image(shots["camera"][:12, :12], "PNG")],
            "caption": [f"photo {i}".encode()],
            "blob": [bytes([0xFF, i, 0x00])],
            "vector": [0.5, 1.5, float(i)],
            "ids": list(range(i % 3)),
            "count": [i],
        })
    _write(tmp_path / "kinds.tfrecord", records)
    pattern = str(tmp_path / "kinds.tfrecord")
    sampled = tk.infer_schema(pattern)
    whole = tk.infer_schema(pattern, sample=None)
    assert sampled["image"] == tk.Image("auto", channels=3, dims=False)
    assert whole["image"] == tk.Image("jpeg", channels=3, dims=False)  # sizes differ
    assert whole["png"] == tk.Image("png", channels=1, dims=False, size=(12, 12))
    assert sampled["png"] == tk.Image("auto", channels=1, dims=False)
    assert sampled["caption"] == tk.Scalar("string")  # from a sample: bytes
    assert whole["caption"] == tk.Text()
    assert sampled["blob"] == whole["blob"] == tk.Scalar("string")
    assert whole["vector"] == tk.Tensor((3,), "float32", encoding="list")
    assert whole["ids"] == tk.Sequence(tk.Scalar("int64"))
    assert whole["count"] == tk.Scalar("int64")
    batch = next(iter(tk.load_numpy_dataset(pattern, batch_size=6, sampling=tk.InOrder())))
    assert batch["caption"][2] == b"photo 2"
    np.testing.assert_array_equal(batch["vector"][:, 2], np.arange(6, dtype=np.float32))
    assert batch["image"]["values"].shape == (6, 21, 20, 3)
    np.testing.assert_array_equal(batch["image"]["lengths"][:, 0], 16 + np.arange(6))


def test_more_channels_than_the_sample_showed_is_refused(tmp_path):
    """Grey JPEGs in the sample, a colour one later: converting it to grey would drop its
    colour without a word."""
    shots = photos()
    grey = encode_image(shots["camera"][:16, :16], "JPEG")
    colour = encode_image(shots["astronaut"][:16, :16], "JPEG")
    _write(tmp_path / "f.tfrecord", [{"image": [grey]} for _ in range(LATE)]
           + [{"image": [colour]}])
    pattern = str(tmp_path / "f.tfrecord")
    assert tk.infer_schema(pattern)["image"].channels == 1
    with pytest.raises(tk.SchemaError, match=r"3 channels; the schema decodes to 1"):
        _all(tk.load_numpy_dataset(pattern, batch_size=128, sampling=tk.InOrder()))
    whole = tk.infer_schema(pattern, sample=None)
    batches = _all(tk.load_numpy_dataset(pattern, batch_size=128, sampling=tk.InOrder(),
                                         read=tk.ReadOptions(schema=whole)))
    assert batches[-1]["image"].shape[-1] == 3


def test_profiling_every_record_shows_progress_and_can_be_silenced(tmp_path, capsys):
    _write(tmp_path / "f.tfrecord", [{"x": [float(i)]} for i in range(50)])
    tk.infer_schema(str(tmp_path / "f.tfrecord"), sample=None, progress=True)
    assert "profiling" in capsys.readouterr().err
    tk.infer_schema(str(tmp_path / "f.tfrecord"), sample=None)
    assert capsys.readouterr().err == ""


@pytest.mark.integration
def test_tf_data_reads_the_late_key_with_the_whole_profile(tmp_path):
    pytest.importorskip("tensorflow")
    _write(tmp_path / "late.tfrecord", [_late_key(i) for i in range(LATE + 20)])
    pattern = str(tmp_path / "*.tfrecord")
    schema = tk.infer_schema(pattern, sample=None)
    ds = tk.load_tf_dataset(pattern, batch_size=None, sampling=tk.InOrder(),
                            read=tk.ReadOptions(schema=schema))
    rows = list(ds.as_numpy_iterator())
    assert int(rows[0]["extra"]["lengths"][0]) == 0
    np.testing.assert_array_equal(rows[-1]["extra"]["values"], [LATE + 19, LATE + 20])


@pytest.mark.integration
@pytest.mark.parametrize("case", ["late key", "colour image"])
def test_tf_data_refuses_what_the_sample_missed_as_the_numpy_reader_does(tmp_path, case):
    """tf.io.parse_example drops a key the specs don't name, and decode_jpeg(channels=1)
    turns a colour image grey: on a glob's inferred schema tf.data now fails on both and
    names file, record and key as the NumPy reader does (one rule in both)."""
    pytest.importorskip("tensorflow")
    if case == "late key":
        _write(tmp_path / "f.tfrecord", [_late_key(i) for i in range(LATE + 20)])
        match = r"f\.tfrecord.*'extra'"
    else:
        shots = photos()
        grey = encode_image(shots["camera"][:16, :16], "JPEG")
        colour = encode_image(shots["astronaut"][:16, :16], "JPEG")
        _write(tmp_path / "f.tfrecord", [{"image": [grey]} for _ in range(LATE)]
               + [{"image": [colour]}])
        match = r"3 channels; the schema decodes to 1"
    pattern = str(tmp_path / "f.tfrecord")
    with pytest.raises(tk.SchemaError, match=match):
        _all(tk.load_numpy_dataset(pattern, batch_size=128, sampling=tk.InOrder()))
    for batch_size in (128, None):
        with pytest.raises(tk.SchemaError, match=match):
            _all(tk.load_tf_dataset(pattern, batch_size=batch_size, sampling=tk.InOrder()))
    # The records the sample saw read as before, and a whole profile reads every one.
    whole = tk.infer_schema(pattern, sample=None)
    assert len(_all(tk.load_tf_dataset(pattern, batch_size=128, sampling=tk.InOrder(),
                                       read=tk.ReadOptions(schema=whole)))) == 9


@pytest.mark.integration
def test_a_glob_pipeline_with_its_strict_key_check_still_checkpoints(tmp_path):
    """The key check runs in a stateless numpy_function feeding an assertion: a stateful
    one made tf.train.Checkpoint(iterator=...) fail ("PyFunc is stateful")."""
    tf = pytest.importorskip("tensorflow")
    _write(tmp_path / "f.tfrecord", [_late_key(i) for i in range(200)])
    ds = tk.load_tf_dataset(str(tmp_path / "f.tfrecord"), batch_size=16,
                            sampling=tk.InOrder())
    it = iter(ds)
    next(it)
    checkpoint = tf.train.Checkpoint(iterator=it)
    saved = checkpoint.save(str(tmp_path / "ck"))
    want = next(it)["x"].numpy()
    checkpoint.restore(saved)
    assert (next(it)["x"].numpy() == want).all()
