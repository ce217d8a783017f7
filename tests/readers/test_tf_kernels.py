"""The compiled TensorFlow op that reads a step's TFRecord frames by offset (what a shuffled
``load_tf_dataset`` reads local files with): the payloads TensorFlow's own reader gives, any
damaged byte of a frame read is a ``DataLossError`` naming the file and byte, and the pipeline
gives the same batches with it as with the Python step reader it replaces."""

from __future__ import annotations

import math
import os
import re
import shutil
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecordkit as tk

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")

from tfrecordkit.readers.tf_data import _kernels  # noqa: E402


@pytest.fixture(scope="module")
def op():
    built = _kernels.read_frames_op()
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
    got = _kernels.FrameReader(op, paths)(
        np.array([c[0] for c in chosen], np.int32), np.array([c[1] for c in chosen], np.int64),
        np.array([c[2] for c in chosen], np.int64))
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
            _kernels.FrameReader(op, [str(path)])(np.zeros(3, np.int32), offsets[asked],
                                                  lengths[asked])
    # Bytes of frames not read do not matter to this read.
    data = bytearray(clean)
    data[int(offsets[9]) + 20] ^= 0x01
    path.write_bytes(bytes(data))
    got = _kernels.FrameReader(op, [str(path)])(np.zeros(3, np.int32), offsets[asked],
                                                lengths[asked]).numpy()
    assert list(got) == [payloads[i] for i in asked]


def test_a_file_replaced_at_the_same_path_is_read_anew_refused_or_read_as_it_was(op,
                                                                                tmp_path):
    """A file written again (a new file renamed over it: same size, the same second) is read
    anew by a reader made after; a reader made before refuses it, naming it, unless the op
    holds it open already (then it reads the file it was made over, as a held descriptor
    does): never the new bytes at the old file's locations."""
    paths = [tmp_path / "held.tfrecord", tmp_path / "unopened.tfrecord"]
    offsets, lengths = _write(paths[0], [b"old-0" * 20, b"old-1" * 20])
    _write(paths[1], [b"old-2" * 20, b"old-3" * 20])
    before = _kernels.FrameReader(op, [str(p) for p in paths])
    where = (offsets, lengths)
    assert list(before(np.zeros(2, np.int32), *where).numpy()) == [b"old-0" * 20, b"old-1" * 20]
    for k, path in enumerate(paths):
        _write(tmp_path / "new.tfrecord", [b"new-0" * 20, f"new-{k}".encode() * 20])
        os.replace(tmp_path / "new.tfrecord", path)
    assert list(before(np.zeros(2, np.int32), *where).numpy()) == [b"old-0" * 20, b"old-1" * 20]
    with pytest.raises(tf.errors.FailedPreconditionError,
                       match=rf"{paths[1]}: replaced or rewritten since the dataset was opened"):
        before(np.ones(2, np.int32), *where)
    after = _kernels.FrameReader(op, [str(p) for p in paths])
    assert list(after(np.array([0, 1], np.int32), *where).numpy()) == [
        b"new-0" * 20, b"new-1" * 20]


def test_a_dataset_written_again_is_refused_by_a_loader_made_before_and_read_by_one_after(
        op, tmp_path):
    """Converted again at the same path (another seed: the same shard sizes, other records
    at each offset), before a loader made earlier opened the files: it raises the library's
    error naming a shard, the same as the NumPy loader's; a loader made after reads the new
    dataset as NumPy reads it."""
    schema = tk.Schema({"x": tk.Tensor((4,), "int64")})

    def convert(seed: int) -> None:
        rows = ({"x": np.full(4, i)} for i in range(300))
        tk.write_dataset(rows, tmp_path / "ds", schema, overwrite=True, progress=False,
                         shards=tk.ShardOptions(num_shards=3, seed=seed))

    convert(1)
    before = tk.load_tf_dataset(tmp_path / "ds", batch_size=50, sampling=tk.Shuffled(), seed=4)
    before_numpy = tk.load_numpy_dataset(tmp_path / "ds", batch_size=50,
                                         sampling=tk.Shuffled(), seed=4)
    assert len(before_numpy.records) == 300  # its split opened, as tf.data's is when made
    convert(2)
    refused = r"train-\d{5}-of-00003\.tfrecord: replaced or rewritten since the dataset was opened"
    with pytest.raises(tk.DatasetError, match=refused) as from_tf:
        list(before)
    with pytest.raises(tk.DatasetError, match=refused) as from_numpy:
        list(before_numpy)
    assert str(from_tf.value).split(": ")[1:] == str(from_numpy.value).split(": ")[1:]
    after = tk.load_tf_dataset(tmp_path / "ds", batch_size=50, sampling=tk.Shuffled(), seed=4)
    expected = tk.load_numpy_dataset(tmp_path / "ds", batch_size=50, sampling=tk.Shuffled(),
                                     seed=4)
    got = [(b["__id"].numpy(), b["x"].numpy()) for b in after]
    want = [(b["__id"], b["x"]) for b in expected]
    assert len(got) == len(want) == 6
    for (ids, x), (ids_np, x_np) in zip(got, want, strict=True):
        np.testing.assert_array_equal(ids, ids_np)
        np.testing.assert_array_equal(x, x_np)


def test_a_location_the_file_does_not_hold_is_an_error_not_bytes(op, tmp_path):
    path = tmp_path / "f.tfrecord"
    offsets, lengths = _write(path, [b"a" * 100, b"b" * 100])
    read = _kernels.FrameReader(op, [str(path)])
    with pytest.raises(tf.errors.DataLossError, match="truncated"):  # past the end
        read(np.zeros(1, np.int32), offsets[1:] + 50, lengths[1:])
    with pytest.raises(tf.errors.DataLossError, match="truncated"):  # no 1 PiB buffer made
        read(np.zeros(1, np.int32), offsets[:1], np.array([1 << 50]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="no such location"):
        read(np.zeros(1, np.int32), np.array([2**63 - 20]), np.array([100]))
    with pytest.raises(tf.errors.DataLossError, match="record at byte 3: corrupt length"):
        read(np.zeros(1, np.int32), np.array([3]), lengths[:1])  # mid-frame
    with pytest.raises(tf.errors.DataLossError, match="not the indexed length"):
        read(np.zeros(1, np.int32), offsets[:1], lengths[:1] - 1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="no such location"):
        read(np.ones(1, np.int32), offsets[:1], lengths[:1])  # no file 1
    with pytest.raises(tf.errors.NotFoundError, match=r"gone\.tfrecord"):  # gone since stamped
        op([str(tmp_path / "gone.tfrecord")], np.zeros((1, 3), np.int64), np.zeros(1, np.int32),
           offsets[:1], lengths[:1])


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
    monkeypatch.setattr(_kernels, "read_frames_op", lambda: asked.append(1) or op)
    through_op = [_batches(path, **kwargs) for path, kwargs in cases]
    assert len(asked) == len(cases)  # both read through the op
    monkeypatch.setattr(_kernels, "read_frames_op", lambda: None)
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
    monkeypatch.setattr(_kernels, "_built", [])
    monkeypatch.setenv("TFRECORDKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    with pytest.warns(RuntimeWarning, match="reads shuffled steps in Python"):
        assert _kernels.read_frames_op() is None
    assert not list((tmp_path / "cache").rglob("*.so"))  # nothing half-built left behind


def test_builds_unused_for_a_month_are_removed_when_another_is_built(tmp_path):
    now = time.time()
    ages = {"kernels-old.so": 40, "kernels-recent.so": 2, "kernels-kept.so": 90}
    for name, days in ages.items():
        (tmp_path / name).write_bytes(b"\x7fELF")
        (tmp_path / name).with_suffix(".lock").touch()
        os.utime(tmp_path / name, (now - days * 86400, now - days * 86400))
    (tmp_path / "notes.txt").touch()  # not a build: left alone
    _kernels._prune(tmp_path, tmp_path / "kernels-kept.so")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "kernels-kept.lock", "kernels-kept.so", "kernels-recent.lock", "kernels-recent.so",
        "notes.txt"]


def test_a_build_loaded_from_the_cache_is_marked_used(op, tmp_path, monkeypatch):
    real = _kernels.build_path()
    monkeypatch.setenv("TFRECORDKIT_CACHE", str(tmp_path))
    cached = _kernels.build_path()
    assert cached.parent == tmp_path / "ops" and cached.name == real.name
    cached.parent.mkdir()
    shutil.copyfile(real, cached)
    os.utime(cached, (0, 0))
    loaded = []  # not loaded for real: a second copy of the ops would register them twice
    monkeypatch.setattr(tf, "load_op_library", loaded.append)
    _kernels._library(None)  # no compiler needed: it is there
    assert loaded == [str(cached)] and cached.stat().st_mtime > 0


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
    monkeypatch.setattr(_kernels, "read_frames_op", lambda: asked.append(1) or op)
    through_op = read()
    assert len(asked) == 2
    monkeypatch.setattr(_kernels, "read_frames_op", lambda: None)
    through_python = read()
    assert len(through_op) == len(through_python) >= 8
    for a, b in zip(through_op, through_python, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    first = through_op[0]  # PxK: each record's label is its own
    np.testing.assert_array_equal(first["label"], first["x"][:, 0] % 4)


# -- the crop windows op --------------------------------------------------------------------


@pytest.fixture(scope="module")
def windows_op(op):
    return _kernels.crop_windows_op()


def _header(height: int, width: int) -> bytes:
    """The start of a baseline JPEG: SOI and a frame header of that size (all the op reads)."""
    return (b"\xff\xd8\xff\xc0\x00\x11\x08" + height.to_bytes(2, "big")
            + width.to_bytes(2, "big") + b"\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01")


def _params(scale, ratio, flip: bool, any_format: bool = False) -> np.ndarray:
    return np.array([scale[0], scale[1], math.log(ratio[0]), math.log(ratio[1]), min(ratio),
                     max(ratio), float(flip), float(any_format)])


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.tuples(st.integers(1, 65535), st.integers(1, 65535)), min_size=1,
                      max_size=20),
       seed=st.integers(-(2**63), 2**63 - 1), epoch=st.integers(0, 2**40),
       ids=st.data(), flip=st.booleans(),
       scale=st.tuples(st.floats(0.001, 0.6), st.floats(0.6, 1.0)),
       ratio=st.tuples(st.floats(0.1, 1.0), st.floats(1.0, 10.0)))
def test_crop_windows_are_the_tf_free_readers_bit_for_bit(windows_op, sizes, seed, epoch, ids,
                                                          flip, scale, ratio):
    """Any image size, seed, epoch, record id, scale and ratio: the op's windows and flips
    are ``random_crop_boxes``' (the NumPy and PyTorch readers'), and its sizes the headers'."""
    from tfrecordkit.codecs import random_crop_boxes

    record_ids = np.array(ids.draw(st.lists(st.integers(0, 2**62), min_size=len(sizes),
                                            max_size=len(sizes))), np.int64)
    heights, widths = (np.array(side, np.int64) for side in zip(*sizes, strict=True))
    expected = random_crop_boxes(heights, widths, seed=seed, epoch=epoch, ids=record_ids,
                                 scale=scale, ratio=ratio, flip=flip)
    keys = np.stack([np.full(len(sizes), epoch), record_ids], axis=1).astype(np.int64)
    got_sizes, windows, flips = windows_op([_header(h, w) for h, w in sizes], keys,
                                           np.int64(seed), _params(scale, ratio, flip))
    np.testing.assert_array_equal(got_sizes.numpy(), np.stack([heights, widths], axis=1))
    np.testing.assert_array_equal(windows.numpy(), expected[:, :4])
    np.testing.assert_array_equal(flips.numpy(), expected[:, 4].astype(bool))


def _jpegs() -> list[bytes]:
    """JPEGs as encoders write them: grey, RGB at each subsampling, CMYK, progressive,
    restart markers, EXIF, and one carrying a thumbnail JPEG of another size in its APP1."""
    import io

    from PIL import Image

    rng = np.random.default_rng(0)
    out = []
    for k in range(24):
        h, w = int(rng.integers(1, 200)), int(rng.integers(1, 200))
        mode = ("RGB", "L", "CMYK")[k % 3]
        image = Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).convert(mode)
        options = {"quality": 40 + k, "progressive": k % 2 == 1}
        if mode == "RGB":
            options["subsampling"] = k % 3
        if k % 4 == 0:
            exif = Image.Exif()
            exif[0x010F] = "camera"
            options["exif"] = exif.tobytes()
        if k % 5 == 0:
            options["restart_marker_blocks"] = 1
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", **options)
        out.append(buffer.getvalue())
    thumbnail = out[1]
    app1 = b"Exif\x00\x00" + thumbnail
    out.append(out[0][:2] + b"\xff\xe1" + (len(app1) + 2).to_bytes(2, "big") + app1 + out[0][2:])
    return out


def test_jpeg_sizes_are_tensorflows_and_damaged_headers_never_pass_where_it_fails(windows_op):
    """The sizes the op reads from JPEG headers are ``extract_jpeg_shape``'s; of 1,500 damaged
    (bytes changed, cut short, bytes inserted) JPEGs none gets another size, and none that
    TensorFlow reads fails in the op (those it passes and TensorFlow refuses fail at decode)."""
    jpegs = _jpegs()
    params = _params((0.08, 1.0), (3 / 4, 4 / 3), False)

    def size_of(data: bytes) -> tuple[int, int] | None:
        try:
            sizes, _, _ = windows_op([data], np.zeros((1, 2), np.int64), np.int64(0), params)
        except tf.errors.InvalidArgumentError:
            return None
        return tuple(sizes.numpy()[0].tolist())

    for data in jpegs:
        assert size_of(data) == tuple(tf.io.extract_jpeg_shape(data).numpy()[:2].tolist())
    rng = np.random.default_rng(1)
    for trial in range(1500):
        data = bytearray(jpegs[trial % len(jpegs)])
        if trial % 3 == 0:
            for _ in range(int(rng.integers(1, 4))):
                data[int(rng.integers(0, min(len(data), 700)))] = int(rng.integers(0, 256))
        elif trial % 3 == 1:
            data = data[: int(rng.integers(0, min(len(data), 800)))]
        else:
            at = int(rng.integers(2, min(len(data), 600)))
            data[at:at] = rng.integers(0, 256, int(rng.integers(1, 20)), dtype=np.uint8).tobytes()
        try:
            expected = tuple(tf.io.extract_jpeg_shape(bytes(data)).numpy()[:2].tolist())
        except tf.errors.InvalidArgumentError:
            expected = None
        got = size_of(bytes(data))
        assert got == expected or expected is None, (trial, got, expected)


def test_random_crops_are_the_same_with_the_op_and_with_tensorflow_ops(
        windows_op, tmp_path, monkeypatch):
    """A random-crop pipeline's pixels and flips are the same whether the windows come from
    the op or from the TensorFlow ops it replaces (JPEG and PNG rows of an "auto" image)."""
    from tests.datasets import encode_image, photos
    from tfrecordkit.readers.tf_data import _crop

    sources = [p for p in photos().values() if p.ndim == 3]
    schema = tk.Schema({"jpeg": tk.Image("jpeg", channels=3), "any": tk.Image(channels=3)})
    rows = ({"jpeg": sources[i % len(sources)],
             "any": encode_image(sources[(i + 1) % len(sources)], "PNG" if i % 2 else "JPEG")}
            for i in range(24))
    tk.write_dataset(rows, tmp_path / "ds", schema, progress=False)
    options = tk.DecodeOptions(image_size=(40, 48), crop="random", flip=True)

    def crops() -> list[dict[str, np.ndarray]]:
        ds = tk.load_tf_dataset(tmp_path / "ds", batch_size=8, sampling=tk.Shuffled(), seed=2,
                                options=options)
        return [{k: v.numpy() for k, v in b.items()} for _ in range(2) for b in ds]

    asked = []
    monkeypatch.setattr(_crop, "crop_windows_op", lambda: asked.append(1) or windows_op)
    through_op = crops()
    assert asked
    monkeypatch.setattr(_crop, "crop_windows_op", lambda: None)
    through_tf = crops()
    assert len(through_op) == len(through_tf) == 6
    for a, b in zip(through_op, through_tf, strict=True):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.parametrize("change", ["replaced", "deleted", "grown"])
@pytest.mark.parametrize("sampling", [tk.InOrder(), tk.Shuffled(buffer=50)])
def test_tf_data_reading_whole_files_refuses_a_shard_changed_under_it(tmp_path, change,
                                                                      sampling):
    """The path that reads whole files with TensorFlow's own reader (stored order, a shuffle
    buffer) checks each file as it opens it, as every other reader does: another dataset's
    shard copied over one, a deleted one, a grown one are the DatasetError naming the file
    (they were read silently, TensorFlow's raw NotFoundError, an error naming no file)."""
    schema = tk.Schema({"x": tk.Tensor((4,), "int64")})
    for name, offset in (("ds", 0), ("other", 1000)):
        rows = ({"x": np.full(4, offset + i)} for i in range(300))
        tk.write_dataset(rows, tmp_path / name, schema, progress=False,
                         shards=tk.ShardOptions(num_shards=3, shuffle=False))
    ds = tk.load_tf_dataset(tmp_path / "ds", batch_size=50, sampling=sampling, seed=4)
    assert sum(len(b["x"]) for b in ds) == 300  # an epoch read whole
    victim = tmp_path / "ds" / "train-00001-of-00003.tfrecord"
    if change == "replaced":  # another dataset's shard, the same size, under this name
        (tmp_path / "other" / victim.name).replace(victim)
    elif change == "deleted":
        victim.unlink()
    else:
        with victim.open("ab") as f:
            f.write(victim.read_bytes()[:100])
    said = {"replaced": "replaced or rewritten since the dataset was opened",
            "deleted": "deleted since the dataset was opened",
            "grown": "replaced or rewritten since the dataset was opened"}[change]
    with pytest.raises(tk.DatasetError, match=re.escape(f"{victim}: {said}")):
        list(ds)  # the next epoch's iteration
