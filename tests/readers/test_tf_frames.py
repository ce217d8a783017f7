"""The compiled TensorFlow op that reads a step's TFRecord frames by offset (what a shuffled
``load_tf_dataset`` reads local files with): the payloads TensorFlow's own reader gives, any
damaged byte of a frame read is a ``DataLossError`` naming the file and byte, and the pipeline
gives the same batches with it as with the Python step reader it replaces."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecordkit as tk

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")

from tfrecordkit.readers.tf_data import _frames, _sampling, _steps  # noqa: E402


@pytest.fixture(scope="module")
def op():
    built = _frames.read_frames_op()
    # Wherever a C++ compiler is (CI has one), the op must build: a silent fallback would
    # hide a broken build behind the slower Python reader.
    if shutil.which("g++") or os.environ.get("CXX"):
        assert built is not None
    if built is None:
        pytest.skip("no C++ compiler: the Python step reader reads")
    return built


def _write(path, payloads) -> tuple[np.ndarray, np.ndarray]:
    """``payloads`` written by TensorFlow's writer; each frame's offset and length."""
    with tf.io.TFRecordWriter(str(path)) as writer:
        for payload in payloads:
            writer.write(payload)
    lengths = np.array([len(p) + 16 for p in payloads], np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return offsets, lengths


@settings(max_examples=40, deadline=None)
@given(files=st.lists(st.lists(st.binary(max_size=3000), min_size=1, max_size=12),
                      min_size=1, max_size=3),
       data=st.data())
def test_frames_read_by_offset_are_the_payloads_tensorflow_reads(op, tmp_path_factory, files,
                                                                  data):
    """Any payloads (empty ones too), several files, any order, repeats allowed: each frame
    read by offset is the record TensorFlow's TFRecordDataset gives at that position."""
    folder = tmp_path_factory.mktemp("frames")
    paths, where = [], []
    for k, payloads in enumerate(files):
        path = folder / f"f{k}.tfrecord"
        offsets, lengths = _write(path, payloads)
        paths.append(str(path))
        read = [r.numpy() for r in tf.data.TFRecordDataset(str(path))]
        where += [(k, o, n, r) for o, n, r in zip(offsets, lengths, read, strict=True)]
    picks = data.draw(st.lists(st.integers(0, len(where) - 1), max_size=30))
    chosen = [where[i] for i in picks]
    got = op(tf.constant(paths), np.array([c[0] for c in chosen], np.int32),
             np.array([c[1] for c in chosen], np.int64), np.array([c[2] for c in chosen],
                                                                  np.int64))
    assert [bytes(g) for g in got.numpy()] == [c[3] for c in chosen]


def test_a_damaged_byte_of_a_frame_read_is_lost_data_named_by_file_and_byte(op, tmp_path):
    path = tmp_path / "f.tfrecord"
    payloads = [bytes([i]) * (50 + i) for i in range(20)]
    offsets, lengths = _write(path, payloads)
    clean = path.read_bytes()
    frame = 7
    start, stop = int(offsets[frame]), int(offsets[frame] + lengths[frame])
    asked = np.array([3, frame, 12], np.int64)
    for at in range(start, stop):  # every byte of the frame: header, its CRC, data, data CRC
        data = bytearray(clean)
        data[at] ^= 0x01
        path.write_bytes(bytes(data))
        with pytest.raises(tf.errors.DataLossError,
                           match=rf"{path}: record at byte {start}: "):
            op([str(path)], np.zeros(3, np.int32), offsets[asked], lengths[asked])
    # Bytes of frames not read do not matter to this read.
    data = bytearray(clean)
    data[int(offsets[9]) + 20] ^= 0x01
    path.write_bytes(bytes(data))
    got = op([str(path)], np.zeros(3, np.int32), offsets[asked], lengths[asked]).numpy()
    assert list(got) == [payloads[i] for i in asked]


def test_a_location_the_file_does_not_hold_is_an_error_not_bytes(op, tmp_path):
    path = tmp_path / "f.tfrecord"
    offsets, lengths = _write(path, [b"a" * 100, b"b" * 100])
    with pytest.raises(tf.errors.DataLossError, match="truncated"):  # past the end
        op([str(path)], np.zeros(1, np.int32), offsets[1:] + 50, lengths[1:])
    with pytest.raises(tf.errors.DataLossError, match="truncated"):  # no 1 PiB buffer made
        op([str(path)], np.zeros(1, np.int32), offsets[:1], np.array([1 << 50]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="no such location"):
        op([str(path)], np.zeros(1, np.int32), np.array([2**63 - 20]), np.array([100]))
    with pytest.raises(tf.errors.DataLossError, match="record at byte 3: corrupt length"):
        op([str(path)], np.zeros(1, np.int32), np.array([3]), lengths[:1])  # mid-frame
    with pytest.raises(tf.errors.DataLossError, match="not the indexed length"):
        op([str(path)], np.zeros(1, np.int32), offsets[:1], lengths[:1] - 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="no such location"):
        op([str(path)], np.ones(1, np.int32), offsets[:1], lengths[:1])  # no file 1
    with pytest.raises(tf.errors.NotFoundError):
        op([str(tmp_path / "gone.tfrecord")], np.zeros(1, np.int32), offsets[:1], lengths[:1])


def _batches(path, **kwargs) -> list[dict[str, np.ndarray]]:
    ds = tk.load_tf_dataset(path, sampling=tk.Shuffled(), seed=5, **kwargs)
    return [{k: v.numpy() for k, v in b.items()} for _ in range(2) for b in ds]


def test_shuffled_batches_are_the_same_through_the_op_and_the_python_reader(
        op, tmp_path, monkeypatch):
    """The op reads what the Python step reader read: the same records, ids and ``__valid``
    over two epochs on one rank of two; for files adopted with a class pattern, each record
    labelled with its own file's class."""
    from tests.datasets import unlabelled_files

    schema = tk.Schema({"x": tk.Tensor((3,), "int64"), "label": tk.ClassLabel(["a", "b", "c"])})
    rows = ({"x": np.array([i, i * 2, i * 3]), "label": i % 3} for i in range(500))
    tk.write_dataset(rows, tmp_path / "ds", schema,
                     shards=tk.ShardOptions(num_shards=6), progress=False)
    written = unlabelled_files(tmp_path / "files", parts_of=lambda k: 2)
    tk.adopt(tmp_path / "files", class_pattern=r"class_(\d+)-")
    cases = ((tmp_path / "ds", {"batch_size": 64, "partition": tk.Partition(1, 2)}),
             (tmp_path / "files", {"batch_size": 4, "options": tk.DecodeOptions(decode=False)}))
    asked = []
    monkeypatch.setattr(_steps, "read_frames_op", lambda: asked.append(1) or op)
    through_op = [_batches(path, **kwargs) for path, kwargs in cases]
    assert len(asked) == len(cases)  # both read through the op
    monkeypatch.setattr(_steps, "read_frames_op", lambda: None)
    through_python = [_batches(path, **kwargs) for path, kwargs in cases]
    for got, expected in zip(through_op, through_python, strict=True):
        assert len(got) == len(expected) > 2
        for a, b in zip(got, expected, strict=True):
            assert a.keys() == b.keys()
            for key in a:
                np.testing.assert_array_equal(a[key], b[key])
    names = tk.load_manifest(tmp_path / "files").class_names
    labelled = {c.decode(): names[k] for b in through_op[1]
                for c, k in zip(b["caption"], b["label"], strict=True)}
    assert labelled == {c: str(k) for c, (k, _) in written.items()}


def test_without_a_compiler_there_is_no_op_and_a_warning_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(_frames, "_built", [])
    monkeypatch.setenv("TFRECORDKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    with pytest.warns(RuntimeWarning, match="reads shuffled steps in Python"):
        assert _frames.read_frames_op() is None
    assert not list((tmp_path / "cache").rglob("*.so"))  # nothing half-built left behind


def _flat(batch: dict, prefix: str = "") -> dict[str, np.ndarray]:
    flat = {}
    for key, value in batch.items():
        flat.update(_flat(value, f"{prefix}{key}/") if isinstance(value, dict)
                    else {prefix + key: value.numpy()})
    return flat


def test_pk_and_triplet_steps_are_the_same_through_the_op_and_the_python_reader(
        op, tmp_path, monkeypatch):
    schema = tk.Schema({"x": tk.Tensor((2,), "int64"), "label": tk.ClassLabel(list("abcd"))})
    rows = ({"x": np.array([i, -i]), "label": i % 4} for i in range(200))
    tk.write_dataset(rows, tmp_path / "ds", schema,
                     shards=tk.ShardOptions(layout="per_class"), progress=False)

    def read() -> list[dict[str, np.ndarray]]:
        out = []
        for sampling in (tk.PK(2, 4), tk.Triplets()):
            ds = tk.load_tf_dataset(tmp_path / "ds", sampling=sampling, seed=3,
                                    batch_size=None if isinstance(sampling, tk.PK) else 8)
            out += [_flat(b) for b in ds.take(6)]
        return out

    asked = []
    monkeypatch.setattr(_sampling, "read_frames_op", lambda: asked.append(1) or op)
    through_op = read()
    assert len(asked) == 2
    monkeypatch.setattr(_sampling, "read_frames_op", lambda: None)
    through_python = read()
    assert len(through_op) == len(through_python) >= 8
    for a, b in zip(through_op, through_python, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    first = through_op[0]  # PxK: each record's label is its own
    np.testing.assert_array_equal(first["label"], first["x"][:, 0] % 4)
