"""Serialized tensors (``tf.io.serialize_tensor`` bytes in a bytes feature, as the per-class
triplet tutorial stores float32 images) read as their arrays by every reader, equal to
``tf.io.parse_tensor``; the TensorProto decoder agrees with TensorFlow's on every dtype and
shape, and refuses damaged bytes with a ValueError, never a crash or a wrong array."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecordkit as tk
from tfrecordkit.format import decode_tensor_proto, encode_tensor_proto

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")

DTYPES = ["float32", "float64", "int32", "uint8", "int16", "int8", "int64", "bool", "uint16",
          "float16", "uint32", "uint64"]
N = 11


def _bytes_feature(value: bytes):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Records written by TensorFlow: a fixed (4, 5, 3) float32 image, a variable-length int64
    vector, a label. Returns the glob and what TensorFlow parses back."""
    root = tmp_path_factory.mktemp("tensors")
    rng = np.random.default_rng(0)
    want = []
    with tf.io.TFRecordWriter(str(root / "a.tfrecord")) as writer:
        for i in range(N):
            image = rng.normal(size=(4, 5, 3)).astype(np.float32)
            vector = np.arange(i % 4 + 1, dtype=np.int64) * (i + 1)
            example = tf.train.Example(features=tf.train.Features(feature={
                "image": _bytes_feature(tf.io.serialize_tensor(image).numpy()),
                "vector": _bytes_feature(tf.io.serialize_tensor(vector).numpy()),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 3])),
            }))
            writer.write(example.SerializeToString())
            want.append({"image": image, "vector": vector, "label": i % 3})
    return str(root / "*.tfrecord"), want


def test_every_reader_gives_the_arrays(files):
    pattern, want = files
    from tfrecordkit.readers.torch_data import load_torch_dataset

    numpy_batches = list(tk.load_numpy_dataset(pattern, batch_size=4, sampling=tk.InOrder()))
    torch_batches = list(load_torch_dataset(pattern, batch_size=4, sampling=tk.InOrder()))
    tf_batches = list(tk.load_tf_dataset(pattern, batch_size=4, sampling=tk.InOrder()))
    grain = tk.load_grain_source(pattern)
    for step, (a, b, c) in enumerate(zip(numpy_batches, torch_batches, tf_batches,
                                         strict=True)):
        rows = want[4 * step : 4 * step + 4]
        images = np.stack([r["image"] for r in rows])
        assert a["image"].dtype == np.float32 and np.array_equal(a["image"], images)
        assert np.array_equal(b["image"].numpy(), images)
        assert np.array_equal(c["image"].numpy(), images)
        for batch in (a, {k: v.numpy() if hasattr(v, "numpy") else
                          {kk: vv.numpy() for kk, vv in v.items()} if isinstance(v, dict)
                          else v for k, v in b.items()},
                      {k: v.numpy() if hasattr(v, "numpy") else
                       {kk: vv.numpy() for kk, vv in v.items()} for k, v in c.items()}):
            vectors = batch["vector"]
            assert vectors["values"].dtype == np.int64
            for k, row in enumerate(rows):
                n = int(vectors["lengths"][k][0])
                assert np.array_equal(vectors["values"][k][:n], row["vector"])
    for i, row in enumerate(want):
        assert np.array_equal(grain[i]["image"], row["image"])


def test_inspect_and_decode_false_keep_the_bytes(files):
    pattern, want = files
    raw = next(iter(tk.load_numpy_dataset(pattern, batch_size=N, sampling=tk.InOrder(),
                                          options=tk.DecodeOptions(decode=False))))
    assert raw["image"].dtype == object
    assert np.array_equal(tf.io.parse_tensor(raw["image"][0], tf.float32).numpy(),
                          want[0]["image"])


@settings(max_examples=120, deadline=None)
@given(dtype=st.sampled_from(DTYPES),
       shape=st.lists(st.integers(0, 4), max_size=3).map(tuple), seed=st.integers(0, 99))
def test_the_decoder_agrees_with_tensorflow(dtype, shape, seed):
    values = (np.random.default_rng(seed).normal(size=shape) * 100).astype(dtype)
    data = tf.io.serialize_tensor(tf.constant(values)).numpy()
    got = decode_tensor_proto(data)
    want = tf.io.parse_tensor(data, tf.as_dtype(dtype)).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@settings(max_examples=120, deadline=None)
@given(dtype=st.sampled_from(DTYPES),
       shape=st.lists(st.integers(0, 4), max_size=3).map(tuple), seed=st.integers(0, 99))
def test_the_encoder_writes_what_tensorflow_writes(dtype, shape, seed):
    values = (np.random.default_rng(seed).normal(size=shape) * 100).astype(dtype)
    ours = encode_tensor_proto(values)
    assert ours == tf.io.serialize_tensor(tf.constant(values)).numpy()  # byte for byte
    assert decode_tensor_proto(ours).tobytes() == values.tobytes()


def test_adopted_files_and_our_tensor_feature_read_them_in_every_reader(files, tmp_path):
    pattern, want = files
    import shutil

    shutil.copy(pattern.replace("*.tfrecord", "a.tfrecord"), tmp_path / "a.tfrecord")
    manifest = tk.adopt(tmp_path, label_feature="label")
    schema = manifest.schema
    assert schema["image"] == tk.Tensor((4, 5, 3), "float32", encoding="proto")
    assert schema["vector"] == tk.Tensor((None,), "int64", encoding="proto")
    numpy_batch = next(iter(tk.load_numpy_dataset(tmp_path, batch_size=N, sampling=tk.InOrder())))
    tf_batch = next(iter(tk.load_tf_dataset(tmp_path, batch_size=N, sampling=tk.InOrder())))
    images = np.stack([w["image"] for w in want])
    assert np.array_equal(numpy_batch["image"], images)
    assert np.array_equal(tf_batch["image"].numpy(), images)
    for k, w in enumerate(want):
        n = len(w["vector"])
        assert np.array_equal(numpy_batch["vector"]["values"][k][:n], w["vector"])
        assert np.array_equal(tf_batch["vector"]["values"].numpy()[k][:n], w["vector"])
    pk = next(iter(tk.load_numpy_dataset(tmp_path, sampling=tk.PK(2, 2))))
    assert pk["image"].shape == (4, 4, 5, 3)
    # Our own feature writes what tf.io.serialize_tensor writes, and TF parses it back.
    own = tk.Schema({"image": tk.Tensor((4, 5, 3), "float32", encoding="proto"),
                     "label": tk.ClassLabel(["a", "b", "c"])})
    tk.write_dataset([{"image": w["image"], "label": w["label"]} for w in want],
                     tmp_path / "own", own, shards=tk.ShardOptions(shuffle=False),
                     progress=False)
    assert tk.load_manifest(tmp_path / "own").schema == own
    for record, w in zip(tk.open_split(tmp_path / "own"), want, strict=True):
        data = tk.format.decode_example(record)["image"][0]
        assert data == tf.io.serialize_tensor(w["image"]).numpy()
        assert np.array_equal(tf.io.parse_tensor(data, tf.float32).numpy(), w["image"])
    wrong = tk.Schema({"image": tk.Tensor((4, 5, 3), "float64", encoding="proto"),
                       "label": tk.ClassLabel(["a", "b", "c"])})
    with pytest.raises(tk.SchemaError, match=r"'image'.*float32.*does not fit float64"):
        wrong.decode(next(iter(tk.open_split(tmp_path / "own"))))


def test_typed_value_lists_and_strings_as_tensorflow_reads_them():
    proto = tf.make_tensor_proto([1.5], shape=[2, 3]).SerializeToString()  # repeated last
    assert np.array_equal(decode_tensor_proto(proto),
                          tf.io.parse_tensor(proto, tf.float32).numpy())
    strings = tf.io.serialize_tensor(tf.constant([[b"a", b""], [b"xyz", b"\xff"]])).numpy()
    assert decode_tensor_proto(strings).tolist() == tf.io.parse_tensor(
        strings, tf.string).numpy().tolist()


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_damaged_bytes_are_refused_or_read_as_tensorflow_reads_them(data):
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    good = bytearray(tf.io.serialize_tensor(tf.constant(values)).numpy())
    at = data.draw(st.integers(0, len(good) - 1))
    good[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(good)))
    damaged = bytes(good[:cut])
    try:
        got = decode_tensor_proto(damaged)
    except ValueError:
        return  # refused, with a message
    try:
        want = tf.io.parse_tensor(damaged, tf.as_dtype(got.dtype)).numpy()
    except Exception:  # TensorFlow refuses what we read: say which
        pytest.fail(f"read {got.dtype}{got.shape} from bytes TensorFlow refuses: {damaged!r}")
    assert got.shape == want.shape and got.tobytes() == want.tobytes()


def _wire(field: int, wire: int, payload: bytes | int) -> bytes:
    from tfrecordkit.format._wire import varint

    if wire == 0:
        return varint(field << 3) + varint(int(payload))
    return varint(field << 3 | 2) + varint(len(payload)) + payload  # type: ignore[arg-type]


@st.composite
def _tensor_protos(draw: st.DrawFn) -> bytes:
    """Valid wire encodings of TensorProtos that protobuf reads: fields in any order, scalar
    fields repeated (the last wins), shape messages split (they merge), unknown fields."""
    parts = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["dtype", "shape", "content", "float_val", "unknown"]))
        if kind == "dtype":
            parts.append(_wire(1, 0, draw(st.sampled_from([1, 2, 3, 8, 9, 30]))))
        elif kind == "shape":
            dims = b"".join(_wire(2, 2, _wire(1, 0, d)) for d in
                            draw(st.lists(st.integers(0, 3), max_size=2)))
            parts.append(_wire(2, 2, dims))
        elif kind == "content":
            parts.append(_wire(4, 2, draw(st.binary(max_size=24))))
        elif kind == "float_val":
            parts.append(_wire(5, 2, draw(st.binary(max_size=12).filter(
                lambda b: len(b) % 4 == 0))))
        else:
            parts.append(_wire(draw(st.integers(20, 30)), 0, draw(st.integers(0, 300))))
    return b"".join(parts)


@settings(max_examples=400, deadline=None)
@given(_tensor_protos())
def test_arbitrary_wire_encodings_are_read_as_tensorflow_reads_them(data):
    try:
        got = decode_tensor_proto(data)
    except tk.RecordFormatError:
        got = None
    for dtype in ("float32", "float64", "int32", "int64"):
        try:
            want = tf.io.parse_tensor(data, getattr(tf, dtype)).numpy()
        except Exception:  # TensorFlow refuses these bytes as this dtype
            continue
        assert got is not None, f"refused bytes TensorFlow reads as {dtype}: {data!r}"
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
        return
    assert got is None or got.dtype.name not in ("float32", "float64", "int32", "int64"), (
        f"read {got.dtype}{got.shape} from bytes TensorFlow refuses: {data!r}")


@pytest.mark.parametrize(("data", "dtype"), [
    (b"*\x04\x00\x01\x80\x7f\x08\x01", "float32"),  # packed, before the dtype: found above
    (b"\x08\x01\x2d\x00\x01\x80\x7f", "float32"),  # one fixed32
    (b"\x08\x02\x32\x08\x01\x00\x00\x00\x00\x00\xf0\x7f", "float64"),  # double_val
])
def test_a_signalling_nan_keeps_its_bits_as_tensorflow_keeps_them(data, dtype):
    """A float read through a Python float was quieted (its bit 22 set); TensorFlow keeps
    the stored bits."""
    want = tf.io.parse_tensor(data, getattr(tf, dtype)).numpy()
    got = decode_tensor_proto(data)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_a_repeated_dtype_keeps_the_last_as_tensorflow_does():
    damaged = b"\x08\x01\x08\x08"  # float32, then complex64: TensorFlow refuses it
    with pytest.raises(tk.RecordFormatError, match="not a serialized tensor"):
        decode_tensor_proto(damaged)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_tensor(damaged, tf.float32)
