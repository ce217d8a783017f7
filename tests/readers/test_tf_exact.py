"""load_tf_dataset returns exactly what was written, or fails loudly (regressions)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_image, photos
from tfrecordkit import DatasetError, DecodeOptions, SchemaError, ShardOptions
from tfrecordkit.convert import convert
from tfrecordkit.format import RecordWriter, encode_example
from tfrecordkit.schema import Image, Scalar, Schema, Sequence
from tfrecordkit.sources import ImageFolder
from tfrecordkit.store import load_manifest

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
tf_data = pytest.importorskip("tfrecordkit.readers.tf_data")
load_tf_dataset = tf_data.load_tf_dataset


def _write(path, rows):
    with RecordWriter(path) as writer:
        for row in rows:
            writer.write(encode_example(row))
    return path


ROWS = [{"x": np.array([], np.int64), "f": np.array([], np.float32), "s": []},
        {"x": np.array([9, 2]), "f": np.array([1.5], np.float32), "s": [b"a", b"bc"]},
        {"x": np.array([7]), "f": np.array([], np.float32), "s": [b""]}]


def test_unbatched_examples_keep_their_own_lengths(tmp_path):
    path = _write(tmp_path / "v.tfrecord", ROWS)
    schema = Schema({"x": Sequence(Scalar("int64")), "f": Sequence(Scalar("float32")),
                     "s": Sequence(Scalar("string"))})
    for source in (tk.ReadOptions(schema=schema), None):  # declared, and inferred
        got = list(load_tf_dataset(str(path), sampling=tk.InOrder(), read=source))
        assert len(got) == 3
        for row, example in zip(ROWS, got, strict=True):
            for key in ("x", "f", "s"):  # the batch structure without its batch dimension
                assert example[key]["values"].numpy().tolist() == list(row[key])
                assert example[key]["lengths"].numpy().tolist() == [len(row[key])]


def test_padding_stays_inside_the_users_batch(tmp_path):
    path = _write(tmp_path / "v.tfrecord", ROWS)
    batches = list(load_tf_dataset(str(path), batch_size=1, sampling=tk.InOrder()))
    assert [b["x"]["values"].shape[1] for b in batches] == [0, 2, 1]
    batch = next(iter(load_tf_dataset(str(path), batch_size=3, sampling=tk.InOrder())))
    assert batch["x"]["values"].numpy().tolist() == [[0, 0], [9, 2], [7, 0]]
    assert batch["x"]["lengths"].numpy().tolist() == [[0], [2], [1]]


CRASHERS = textwrap.dedent("""
    import sys
    import numpy as np
    from tfrecordkit.format import RecordWriter, encode_example
    from tfrecordkit.readers import DecodeOptions, InOrder
    from tfrecordkit.readers.tf_data import load_tf_dataset
    path = sys.argv[1]
    with RecordWriter(path) as w:
        for _ in range(5):
            w.write(encode_example({"i": np.array([], np.int64), "f": np.array([], np.float32),
                                    "label": 1}))
    for batch_size in (None, 1, 2, 5):
        for padding in ("pad", "ragged"):
            for decode in (True, False):
                ds = load_tf_dataset(path, batch_size=batch_size, sampling=InOrder(),
                                     options=DecodeOptions(padding=padding, decode=decode))
                n = sum(1 for _ in ds)
                assert n == (5 if batch_size is None else -(-5 // batch_size)), n
    print("ok")
""")


def test_all_empty_variable_features_do_not_crash_the_process(tmp_path):
    # TensorFlow 2.21 segfaults unbatching a dense [n, 0] tensor; the pipeline must never
    # build one. Run in a subprocess so a crash is a failure, not a dead test runner.
    result = subprocess.run([sys.executable, "-c", CRASHERS, str(tmp_path / "e.tfrecord")],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")


def test_a_missing_file_among_good_ones_raises(tmp_path):
    good = _write(tmp_path / "good.tfrecord", ROWS)
    with pytest.raises(DatasetError, match=r"missing\.tfrecord: no such file"):
        load_tf_dataset([str(good), str(tmp_path / "missing.tfrecord")])
    with pytest.raises(DatasetError, match="no TFRecord files match"):
        load_tf_dataset([str(good), str(tmp_path / "none-*.tfrecord")])


def test_an_unknown_feature_name_raises_for_foreign_files(tmp_path):
    good = _write(tmp_path / "good.tfrecord", ROWS)
    with pytest.raises(DatasetError, match=r"unknown features \['does_not_exist'\]"):
        load_tf_dataset(str(good), options=tk.DecodeOptions(features=["x", "does_not_exist"]))


def test_a_folder_of_grey_and_colour_images_reads_back_as_the_schema_says(tmp_path):
    images = photos()  # camera and coins are grey, the rest colour
    for name, pixels in images.items():
        folder = tmp_path / "src" / name
        folder.mkdir(parents=True)
        (folder / f"{name}.png").write_bytes(encode_image(pixels, "PNG"))
    convert(ImageFolder(tmp_path / "src"), tmp_path / "ds", workers=1)
    manifest = load_manifest(tmp_path / "ds")
    feature = manifest.schema["image"]
    assert isinstance(feature, Image) and feature.channels == 3
    from tfrecordkit.format import RecordReader

    names = manifest.class_names
    tf_examples = list(load_tf_dataset(tmp_path / "ds", sampling=tk.InOrder()))
    numpy_examples = [manifest.schema.decode(r)
                      for s in manifest.split("train").shards
                      for r in RecordReader(tmp_path / "ds" / s.file)]
    assert len(tf_examples) == len(numpy_examples) == len(images)
    by_label = {int(e["label"]): e["image"]["values"].numpy() for e in tf_examples}
    for np_example in numpy_examples:  # one image per class: pair the readers by label
        label = np_example["label"]
        source = images[names[label]]
        expected = source if source.ndim == 3 else np.repeat(source[:, :, None], 3, axis=2)
        assert np.array_equal(by_label[label], expected)  # never zero-filled
        assert np.array_equal(np_example["image"], expected)


def test_open_channel_counts_never_zero_fill_a_padded_batch(tmp_path):
    # An old or hand-written schema that leaves channels open, with grey and colour images.
    images = photos()
    rows = [{"image": encode_image(images[n], "PNG")} for n in ("camera", "coffee")]
    path = tmp_path / "mixed.tfrecord"
    schema = Schema({"image": Image("png")})  # channels=None
    with RecordWriter(path) as writer:
        writer.write_all(schema.encode(r) for r in rows)
    ds = load_tf_dataset(str(path), batch_size=2, sampling=tk.InOrder(),
                         read=tk.ReadOptions(schema=schema))
    # TensorFlow's error, named by the TF-free reader (file and feature) when met in Python.
    with pytest.raises(SchemaError, match="different channel counts") as caught:
        list(ds)
    assert isinstance(caught.value.__cause__, tf.errors.InvalidArgumentError)
    ragged = next(iter(load_tf_dataset(str(path), batch_size=2, sampling=tk.InOrder(),
                                       options=DecodeOptions(padding="ragged"),
                                       read=tk.ReadOptions(schema=schema))))
    shapes = [ragged["image"][i].to_tensor().shape[-1] for i in range(2)]
    assert shapes == [1, 3]


def test_raw_pixel_images_of_mixed_channels_read_back_alike_in_both_readers(tmp_path):
    # Raw (unencoded) images take other code paths than JPEG/PNG in both readers.
    images = photos()
    rows = [{"image": images[n], "name": n} for n in ("camera", "coffee", "coins")]
    from tfrecordkit.convert import write_dataset
    from tfrecordkit.schema import Text

    schema = Schema({"image": Image("raw"), "name": Text()})
    result = write_dataset(rows, tmp_path / "ds", schema,
                           shards=ShardOptions(shuffle=False), progress=False)
    assert result.manifest.schema["image"].channels == 3
    from tfrecordkit import open_split

    split = open_split(tmp_path / "ds")
    numpy_side = {d["name"]: d["image"] for d in (split.schema.decode(r) for r in split)}
    tf_side = {e["name"].numpy().decode(): e["image"]["values"].numpy()
               for e in load_tf_dataset(tmp_path / "ds", sampling=tk.InOrder())}
    assert numpy_side.keys() == tf_side.keys()
    for name, pixels in numpy_side.items():
        source = images[name]
        expected = source if source.ndim == 3 else np.repeat(source[:, :, None], 3, axis=2)
        assert np.array_equal(pixels, expected), name
        assert np.array_equal(tf_side[name], expected), name
