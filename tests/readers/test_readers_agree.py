"""Every reader gives the same keys, dtypes, shapes and values for the same records: tf.data,
the NumPy loader, PyTorch and grain (and Ray, slow), with ``shuffle=False`` and every record
by default, for schemas and decode options drawn by hypothesis (every feature kind, fixed and
variable shapes, padded and ragged). Strings compare as UTF-8 bytes: TensorFlow has no
``str`` type, so its texts are bytes where the other readers give ``str``."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tfrecordkit as tk
from tests.datasets import encode_audio, tone

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")

BATCH = 3


def _text(rng: np.random.Generator) -> str:
    alphabet = ["a", "b", "é", "中", "😀", " ", "\x00"]
    return "".join(rng.choice(alphabet, size=int(rng.integers(0, 5))))


def _boxes(rng: np.random.Generator, classes: int) -> dict:
    n = int(rng.integers(0, 4))
    corners = rng.random((n, 4))
    boxes = np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]),
                            np.maximum(corners[:, :2], corners[:, 2:])], axis=1)
    return {"boxes": boxes, "labels": rng.integers(0, classes, n).tolist()}


def _with_fields(value: dict, rng: np.random.Generator) -> dict:
    n = len(value["labels"])
    return {**value, "area": rng.random(n).astype(np.float32) * 100,
            "id": rng.integers(0, 2**40, n).tolist()}


def _image(rng: np.random.Generator, shape: tuple[int, int, int]) -> np.ndarray:
    return rng.integers(0, 256, size=shape, dtype=np.uint8)


# name: (feature, one record's value from (rng, record number))
KINDS = {
    "int": (tk.Scalar("int64"), lambda r, i: int(r.integers(-2**40, 2**40))),
    "small": (tk.Scalar("int32"), lambda r, i: int(r.integers(-2**31, 2**31))),
    "float": (tk.Scalar("float32"), lambda r, i: float(np.float32(r.normal() * 1e3))),
    "flag": (tk.Scalar("bool"), lambda r, i: bool(r.integers(0, 2))),
    "bytes": (tk.Scalar("string"), lambda r, i: r.bytes(int(r.integers(0, 6)))),
    "label": (tk.ClassLabel(["a", "b", "c"]), lambda r, i: int(r.integers(0, 3))),
    "text": (tk.Text(), lambda r, i: _text(r)),
    "tokens": (tk.Text(token_ids=True),
               lambda r, i: {"text": _text(r),
                             "ids": r.integers(0, 50, size=int(r.integers(0, 6))).tolist()}),
    "fixed": (tk.Tensor((2, 3), "float32"),
              lambda r, i: r.normal(size=(2, 3)).astype(np.float32)),
    "var": (tk.Tensor((None, 2), "int16"),
            lambda r, i: r.integers(-99, 99, size=(int(r.integers(0, 6)), 2)).astype(np.int16)),
    "var2": (tk.Tensor((None, None), "uint8"),
             lambda r, i: r.integers(0, 255, size=tuple(r.integers(1, 4, size=2)),
                                     dtype=np.uint8)),
    "proto": (tk.Tensor((None, 3), "float32", encoding="proto"),
              lambda r, i: r.normal(size=(int(r.integers(0, 4)), 3)).astype(np.float32)),
    "list": (tk.Tensor((3,), "int32", encoding="list"),
             lambda r, i: r.integers(-2**31, 2**31, size=3).astype(np.int32)),
    "list_var": (tk.Tensor((None, 2), "float32", encoding="list"),
                 lambda r, i: r.normal(size=(int(r.integers(0, 4)), 2)).astype(np.float32)),
    "seq_int": (tk.Sequence(tk.Scalar("int64")),
                lambda r, i: r.integers(-9, 9, size=int(r.integers(0, 5))).tolist()),
    "seq_float": (tk.Sequence(tk.Scalar("float32")),
                  lambda r, i: r.normal(size=int(r.integers(0, 5))).astype(np.float32).tolist()),
    "seq_bytes": (tk.Sequence(tk.Scalar("string")),
                  lambda r, i: [r.bytes(2) for _ in range(int(r.integers(0, 4)))]),
    "seq_text": (tk.Sequence(tk.Text()),
                 lambda r, i: [_text(r) for _ in range(int(r.integers(0, 4)))]),
    "steps": (tk.FeatureList("float32", (2,)),
              lambda r, i: r.normal(size=(int(r.integers(0, 4)), 2)).astype(np.float32)),
    "steps_var": (tk.FeatureList("int64", (None,)),
                  lambda r, i: [r.integers(-9, 9, size=int(r.integers(0, 4))).tolist()
                                for _ in range(int(r.integers(0, 4)))]),
    "steps_words": (tk.FeatureList("string"),
                    lambda r, i: [r.bytes(2) for _ in range(int(r.integers(0, 4)))]),
    "steps_bags": (tk.FeatureList("string", (None,)),
                   lambda r, i: [[r.bytes(1) for _ in range(int(r.integers(0, 3)))]
                                 for _ in range(int(r.integers(0, 3)))]),
    "boxes": (tk.Boxes(["a", "b", "c"]), lambda r, i: _boxes(r, 3)),
    "box_ids": (tk.Boxes(), lambda r, i: _boxes(r, 1000)),
    "box_fields": (tk.Boxes(["a", "b"], ids=[7, 3], fields={"area": "float32", "id": "int64"}),
                   lambda r, i: _with_fields(_boxes(r, 2), r)),
    "image": (tk.Image("png", channels=3), lambda r, i: _image(r, (6, 5, 3))),
    "image_var": (tk.Image("png", channels=1),
                  lambda r, i: _image(r, (int(r.integers(3, 9)), int(r.integers(3, 9)), 1))),
    "wav": (tk.Audio("wav"),
            lambda r, i: encode_audio(tone(0.01 * (1 + i % 3), 8000, 440), 8000, "WAV")),
    "audio": (tk.Audio("pcm"),
              lambda r, i: {"samples": r.normal(size=(int(r.integers(1, 40)), 1))
                            .astype(np.float32), "sample_rate": 8000}),
}
IMAGES = ("image", "image_var")
STEPS = ("steps_var", "steps_bags")  # a record's steps differ in length: lists when ragged


def _options(kinds: list[str], padding: str, resize: bool, floats: bool, text_length: bool,
             padded: bool) -> tk.DecodeOptions:
    has_image = any(k in IMAGES for k in kinds)
    return tk.DecodeOptions(
        padding=padding,  # type: ignore[arg-type]
        image_size=(4, 7) if resize and has_image else None,
        image_dtype="float32" if floats else "uint8",
        text_length=3 if text_length else None,
        padded_shapes={k: v for k, v in (("var", (8, 2)), ("steps_var", (None, 5)))
                       if k in kinds} or None if padded and padding == "pad" else None)


def _write(root: Path, kinds: list[str], records: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    schema = tk.Schema({k: KINDS[k][0] for k in kinds})
    rows = [{k: KINDS[k][1](rng, i) for k in kinds} for i in range(records)]
    tk.write_dataset(rows, root / "ds", schema,
                     shards=tk.ShardOptions(shuffle=False, num_shards=2), progress=False)
    return root / "ds"


def plain(value, steps: bool = False):
    """Any reader's value as NumPy arrays and lists, strings as UTF-8 bytes; ``steps``: a
    feature list whose steps differ in length (tf.data: ragged over steps and values)."""
    if isinstance(value, tf.RaggedTensor) and steps:
        if value.ragged_rank == 1:  # one record: its steps
            return [plain(step) for step in value]
        return [plain(record, True) for record in value]
    if isinstance(value, tf.RaggedTensor):  # rows: one record's value (dense within it)
        rows = (value[i] for i in range(int(value.nrows())))
        return [plain(r.to_tensor() if isinstance(r, tf.RaggedTensor) else r) for r in rows]
    if isinstance(value, tf.Tensor | torch.Tensor):
        value = value.numpy()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [plain(v) for v in value]
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return value


def assert_same(a, b, where):
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), (where, a, b)
        for k in a:
            assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) and a.dtype != object:
        b = np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (where, a.dtype, b.dtype, a.shape,
                                                            b.shape)
        assert a.tobytes() == b.tobytes(), (where, a, b)
    else:
        assert a == b, (where, a, b)


def _batches(path: Path, options: tk.DecodeOptions, names: list[str]) -> dict[str, list]:
    tf_batches = list(tk.load_tf_dataset(path, batch_size=BATCH, sampling=tk.InOrder(),
                                         options=options))
    numpy_batches = list(tk.load_numpy_dataset(path, batch_size=BATCH, sampling=tk.InOrder(),
                                               options=options))
    from tfrecordkit.readers.torch_data import load_torch_dataset

    torch_batches = list(load_torch_dataset(path, batch_size=BATCH, sampling=tk.InOrder(),
                                            options=options))
    source = tk.load_grain_source(path, options=options)
    grain_batches = [source.collate([source[i] for i in range(s, min(s + BATCH, len(source)))])
                     for s in range(0, len(source), BATCH)]
    return {reader: [{n: plain(b[n], n in STEPS) for n in names} for b in batches]
            for reader, batches in (("tf.data", tf_batches), ("numpy", numpy_batches),
                                    ("torch", torch_batches), ("grain", grain_batches))}


def check_readers_agree(kinds: list[str], records: int, seed: int, padding: str = "pad",
                        resize: bool = False, floats: bool = False, text_length: bool = False,
                        padded: bool = False) -> None:
    options = _options(kinds, padding, resize, floats, text_length, padded)
    with tempfile.TemporaryDirectory() as root:
        path = _write(Path(root), kinds, records, seed)
        got = _batches(path, options, kinds)
    want = got.pop("tf.data")
    assert len(want) == -(-records // BATCH)  # every record, the last batch smaller
    for reader, batches in got.items():
        assert len(batches) == len(want), reader
        for step, (a, b) in enumerate(zip(want, batches, strict=True)):
            assert_same(a, b, f"{reader} step {step}")


ALL = list(KINDS)


@pytest.mark.parametrize("padding", ["pad", "ragged"])
@pytest.mark.parametrize("kind", ALL)
def test_each_kind_reads_alike(kind, padding):
    check_readers_agree([kind, "int"] if kind != "int" else ["int"], 5, 0, padding)


@pytest.mark.parametrize("padding", ["pad", "ragged"])
@pytest.mark.parametrize(("option", "kinds"), [
    ("resize", ["image", "image_var", "label"]),
    ("floats", ["image", "image_var"]),
    ("text_length", ["tokens", "text"]),  # tf.data decodes the whole batch at once
    ("text_length", ["tokens", "image_var"]),  # tf.data decodes example by example
    ("padded", ["var", "seq_int"]),
    ("padded", ["steps_var", "int"]),  # steps of any length, padded to (any, 5) values
])
def test_each_option_reads_alike(option, kinds, padding):
    check_readers_agree(kinds, 7, 1, padding, **{option: True})


@pytest.mark.parametrize("padding", ["pad", "ragged"])
@pytest.mark.parametrize("kinds", [ALL[: len(ALL) // 2], ALL[len(ALL) // 2 :]])
def test_undecoded_records_read_alike(kinds, padding):
    """decode=False: every reader gives the stored Example keys parsed, not decoded, as
    tf.io.parse_example does with feature_description's specs."""
    from tfrecordkit.readers.torch_data import load_torch_dataset

    options = tk.DecodeOptions(decode=False, padding=padding)
    with tempfile.TemporaryDirectory() as root:
        path = _write(Path(root), kinds, 7, 3)
        schema = tk.load_manifest(path).schema
        tf_rows = list(tk.load_tf_dataset(path, sampling=tk.InOrder(), options=options))
        got = {
            "tf.data": list(tk.load_tf_dataset(path, batch_size=BATCH, sampling=tk.InOrder(),
                                               options=options)),
            "numpy": list(tk.load_numpy_dataset(path, batch_size=BATCH, sampling=tk.InOrder(),
                                                options=options)),
            "torch": list(load_torch_dataset(path, batch_size=BATCH, sampling=tk.InOrder(),
                                             options=options)),
        }
        source = tk.load_grain_source(path, options=options)
        rows = [source[i] for i in range(7)]
        got["grain"] = [source.collate(rows[s : s + BATCH]) for s in range(0, 7, BATCH)]
    keys = [spec.key for spec in schema.key_specs()]
    for k, (a, b) in enumerate(zip(tf_rows, rows, strict=True)):  # one record at a time
        assert_same({n: plain(a[n], n in STEPS) for n in keys},
                    {n: plain(b[n], n in STEPS) for n in keys}, f"grain row {k}")
    want = [{k: plain(b[k], k in STEPS) for k in keys} for b in got.pop("tf.data")]
    assert len(want) == 3 and all(set(b) == set(keys) for b in want)
    for reader, batches in got.items():
        assert len(batches) == len(want), reader
        for step, (a, b) in enumerate(zip(want, batches, strict=True)):
            assert_same(a, {k: plain(b[k], k in STEPS) for k in keys}, f"{reader} step {step}")


@settings(max_examples=30, deadline=None)
@given(kinds=st.lists(st.sampled_from(ALL), min_size=1, max_size=5, unique=True),
       records=st.integers(1, 8), seed=st.integers(0, 2**32 - 1),
       padding=st.sampled_from(["pad", "ragged"]), resize=st.booleans(),
       floats=st.booleans(), text_length=st.booleans(), padded=st.booleans())
@example(kinds=["image_var", "audio", "seq_text", "var2"], records=4, seed=3, padding="pad",
         resize=False, floats=False, text_length=False, padded=False)
def test_readers_agree_on_drawn_schemas(kinds, records, seed, padding, resize, floats,
                                        text_length, padded):
    check_readers_agree(kinds, records, seed, padding, resize, floats, text_length, padded)


@pytest.mark.slow
def test_torch_workers_give_the_same_batches():
    from torch.utils.data import DataLoader

    from tfrecordkit.readers.torch_data import load_torch_dataset

    kinds = ["image_var", "audio", "seq_text", "tokens", "var", "label"]
    options = _options(kinds, "pad", False, False, True, False)
    with tempfile.TemporaryDirectory() as root:
        path = _write(Path(root), kinds, 10, 5)
        want = _batches(path, options, kinds)["tf.data"]
        workers = DataLoader(load_torch_dataset(path, batch_size=BATCH, sampling=tk.InOrder(),
                                                options=options),
                             batch_size=None, num_workers=2)
        got = [{n: plain(b[n]) for n in kinds} for b in workers]
    assert len(got) == len(want) == 4
    for step, (a, b) in enumerate(zip(want, got, strict=True)):
        assert_same(a, b, f"torch workers step {step}")


@pytest.mark.xdist_group("ray")  # one Ray cluster at a time
@pytest.mark.slow
@pytest.mark.parametrize("padding", ["pad", "ragged"])
def test_ray_rows_batch_to_the_same_values(padding):
    ray = pytest.importorskip("ray")
    from tfrecordkit.ray import read_dataset

    kinds = ["image_var", "audio", "seq_text", "seq_bytes", "tokens", "var", "var2", "label",
             "float", "small", "flag", "bytes", "text", "fixed"]
    options = _options(kinds, padding, False, False, True, False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        with tempfile.TemporaryDirectory() as root:
            path = _write(Path(root), kinds, 10, 7)
            want = _batches(path, options, kinds)["tf.data"]
            rows = sorted(read_dataset(path, options=options).take_all(),
                          key=lambda r: r["__id"])
            source = tk.load_grain_source(path, options=options)
            got = [{n: plain(b[n]) for n in kinds}
                   for b in (source.collate(rows[s : s + BATCH])
                             for s in range(0, len(rows), BATCH))]
    finally:
        ray.shutdown()
    assert len(got) == len(want) == 4
    for step, (a, b) in enumerate(zip(want, got, strict=True)):
        assert_same(a, b, f"ray step {step}")


def _foreign_files(root: Path, mixed_channels: bool) -> str:
    """TFRecord files written by TensorFlow's own writer, as someone else's pipeline writes
    them: encoded PNGs of several sizes (grey and colour when ``mixed_channels``), a
    variable-length int list, a float and a bytes value, and 0-3 objects in the Object
    Detection API's keys (which inference makes one ``Boxes`` feature, ``obj``); no manifest."""
    rng = np.random.default_rng(9)
    for part in range(2):
        with tf.io.TFRecordWriter(str(root / f"part-{part}.tfrecord")) as writer:
            for i in range(5):
                channels = 1 if mixed_channels and i % 2 else 3
                pixels = rng.integers(0, 256, (5 + i, 4 + 2 * i, channels), dtype=np.uint8)
                feature = {
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(
                        value=[tf.io.encode_png(pixels).numpy()])),
                    "tags": tf.train.Feature(int64_list=tf.train.Int64List(
                        value=list(range(i % 4)))),
                    "score": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 3])),
                    "name": tf.train.Feature(bytes_list=tf.train.BytesList(
                        value=[f"n{part}{i}".encode()])),
                }
                objects = i % 4
                corners = rng.random((4, objects)).astype(np.float32)
                feature.update({f"obj/bbox/{c}": tf.train.Feature(float_list=tf.train.FloatList(
                    value=corners[k].tolist())) for k, c in enumerate(tk.schema.BOX_CORNERS)})
                feature["obj/class/label"] = tf.train.Feature(int64_list=tf.train.Int64List(
                    value=rng.integers(1, 5, objects).tolist()))
                writer.write(tf.train.Example(features=tf.train.Features(
                    feature=feature)).SerializeToString())
    return str(root / "part-*.tfrecord")


@pytest.mark.parametrize(("padding", "resize", "mixed"), [
    ("pad", False, False), ("pad", True, False), ("ragged", False, True),
    ("ragged", True, True)])
def test_files_someone_else_wrote_read_alike(padding, resize, mixed):
    """No schema: specs inferred from the records, images found by their bytes, channel
    counts open (in a ragged batch, grey and colour images each keep their own)."""
    options = tk.DecodeOptions(padding=padding, image_size=(4, 6) if resize else None)
    names = ["image", "tags", "score", "name", "obj"]
    with tempfile.TemporaryDirectory() as root:
        got = _batches(_foreign_files(Path(root), mixed), options, names)
    want = got.pop("tf.data")
    assert len(want) == 4  # 10 records, batches of 3: every record, the last batch smaller
    for reader, batches in got.items():
        assert len(batches) == len(want), reader
        for step, (a, b) in enumerate(zip(want, batches, strict=True)):
            assert_same(a, b, f"{reader} step {step}")


@pytest.mark.parametrize("padding", ["pad", "ragged"])
def test_globbed_and_adopted_files_read_alike(padding, tmp_path):
    """The same files read by glob (the schema of every record) and adopted (unrewritten):
    one schema, a Boxes feature among it, and the same values in every reader."""
    import shutil

    options = tk.DecodeOptions(padding=padding)
    names = ["image", "tags", "score", "name", "obj"]
    pattern = _foreign_files(tmp_path, mixed_channels=False)
    adopted = tmp_path / "adopted"
    adopted.mkdir()
    for file in tmp_path.glob("part-*.tfrecord"):
        shutil.copy(file, adopted / file.name)
    manifest = tk.adopt(adopted)
    schema = tk.infer_schema(pattern, sample=None)
    assert schema == manifest.schema and isinstance(schema["obj"], tk.Boxes)
    numpy_glob = list(tk.load_numpy_dataset(pattern, batch_size=BATCH, sampling=tk.InOrder(),
                                            options=options, read=tk.ReadOptions(schema=schema)))
    got = _batches(adopted, options, names)
    glob = [{n: plain(b[n]) for n in names} for b in numpy_glob]
    for reader, batches in got.items():
        assert len(batches) == len(glob), reader
        for step, (a, b) in enumerate(zip(glob, batches, strict=True)):
            assert_same(a, b, f"{reader} step {step}")


def test_an_appended_dataset_reads_alike_and_mixes_old_and_new(tmp_path):
    """Converted, then appended (old shards and new ones): every reader gives the same
    batches in the stored order, every record once, and a shuffled epoch mixes old and new
    records from its first batches on."""
    import shutil

    from tests.datasets import digits_folder

    digits_folder(tmp_path / "full", limit_per_class=8)
    for path in (tmp_path / "full").rglob("*.png"):
        if int(path.stem) % 2 and path.parent.name != "9":
            (tmp_path / "old" / path.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, tmp_path / "old" / path.parent.name / path.name)
    tk.convert(tmp_path / "old", tmp_path / "ds", workers=1,
               shards=tk.ShardOptions(shard_size=2048))
    tk.append(tmp_path / "ds", tmp_path / "full", workers=1)
    options = tk.DecodeOptions(provenance=True)
    got = _batches(tmp_path / "ds", options, ["image", "label", "__source"])
    want = got.pop("tf.data")
    assert sum(len(b["label"]) for b in want) == 80
    for reader, batches in got.items():
        assert len(batches) == len(want), reader
        for step, (a, b) in enumerate(zip(want, batches, strict=True)):
            assert_same(a, b, f"{reader} step {step}")
    def text(value) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    sources = [text(s) for b in want for s in b["__source"]]
    assert len(set(sources)) == 80

    old = {f"{p.parent.name}/{p.name}" for p in (tmp_path / "old").rglob("*.png")}
    loader = tk.load_numpy_dataset(tmp_path / "ds", batch_size=16, seed=3, options=options)
    first = [text(s) for s in next(iter(loader))["__source"]]
    assert 0 < sum(s in old for s in first) < 16  # old and new records in one batch
    again = tk.load_numpy_dataset(tmp_path / "ds", batch_size=16, seed=3, options=options)
    epoch = sorted(text(s) for b in again for s in b["__source"])
    assert epoch == sorted(sources)


@pytest.mark.parametrize("padding", ["pad", "ragged"])
@pytest.mark.parametrize("kinds", [ALL[: len(ALL) // 2], ALL[len(ALL) // 2 :]])
def test_single_examples_read_alike(kinds, padding):
    """``batch_size=None`` means one thing in every loader: single examples, each record's
    values without the batch dimension (grain's ``source[i]`` is the oracle), in the order the
    batched loaders read (shuffled: the same seed, the same order), ``"__id"`` a scalar."""
    from tfrecordkit.readers.torch_data import load_torch_dataset

    options = _options(kinds, padding, resize=True, floats=False, text_length=False,
                       padded=False)
    with tempfile.TemporaryDirectory() as root:
        path = _write(Path(root), kinds, 7, 5)
        source = tk.load_grain_source(path, options=options)
        for sampling in (tk.InOrder(), tk.Shuffled()):
            order = [int(i) for b in tk.load_numpy_dataset(path, batch_size=2, seed=4,
                                                           sampling=sampling)
                     for i in b["__id"]]
            want = [{n: plain(source[i][n], n in STEPS) for n in kinds} for i in order]
            got = {
                "tf.data": list(tk.load_tf_dataset(path, sampling=sampling, seed=4,
                                                   options=options)),
                "numpy": list(tk.load_numpy_dataset(path, sampling=sampling, seed=4,
                                                    options=options)),
                "torch": list(load_torch_dataset(path, sampling=sampling, seed=4,
                                                 options=options)),
            }
            for reader, examples in got.items():
                assert [int(e["__id"]) for e in examples] == order, (reader, sampling)
                for k, (a, e) in enumerate(zip(want, examples, strict=True)):
                    assert_same(a, {n: plain(e[n], n in STEPS) for n in kinds},
                                f"{reader} {sampling} example {k}")


@pytest.mark.parametrize("padding", ["pad", "ragged"])
def test_undecoded_single_examples_read_alike(padding):
    """``batch_size=None`` with ``decode=False``: each record's stored keys, parsed not
    decoded, alike in tf.data, NumPy and PyTorch (grain's ``source[i]`` the oracle)."""
    from tfrecordkit.readers.torch_data import load_torch_dataset

    options = tk.DecodeOptions(decode=False, padding=padding)
    with tempfile.TemporaryDirectory() as root:
        path = _write(Path(root), ALL, 5, 7)
        source = tk.load_grain_source(path, options=options)
        want = [{k: plain(v) for k, v in source[i].items()} for i in range(5)]
        got = {
            "tf.data": list(tk.load_tf_dataset(path, sampling=tk.InOrder(), options=options)),
            "numpy": list(tk.load_numpy_dataset(path, sampling=tk.InOrder(), options=options)),
            "torch": list(load_torch_dataset(path, sampling=tk.InOrder(), options=options)),
        }
        for reader, examples in got.items():
            assert [int(e["__id"]) for e in examples] == list(range(5)), reader
            for k, (a, e) in enumerate(zip(want, examples, strict=True)):
                assert_same({n: v for n, v in a.items() if n != "__id"},
                            {n: plain(v) for n, v in e.items() if n != "__id"},
                            f"{reader} example {k}")
