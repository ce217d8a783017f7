"""Errors met while a load_tf_dataset is iterated in Python name the file, the offset and the
record, as the TF-free readers do, instead of TensorFlow's trace naming none; iterators stay
checkpointable."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")


@pytest.fixture
def dataset(tmp_path):
    schema = tk.Schema({"x": tk.Tensor((64,), "float32"), "label": tk.ClassLabel(["a", "b"])})
    rows = [{"x": np.full(64, i, np.float32), "label": i % 2} for i in range(300)]
    tk.write_dataset(rows, tmp_path / "ds", schema,
                     shards=tk.ShardOptions(num_shards=3, shuffle=False), progress=False)
    return tmp_path / "ds"


def _damage(dataset, shard: int, record: int) -> tuple[str, int]:
    path = sorted(dataset.glob("*.tfrecord"))[shard]
    offsets = [int(line.split()[0]) for line in
               (dataset / f"{path.name}.index").read_text().splitlines()]
    data = bytearray(path.read_bytes())
    data[offsets[record] + 3] ^= 0x40  # the length: its CRC fails
    path.write_bytes(bytes(data))
    return path.name, offsets[record]


def test_a_corrupt_record_is_named_by_file_offset_and_index(dataset):
    name, offset = _damage(dataset, 1, 17)
    ds = tk.load_tf_dataset(dataset, batch_size=32, sampling=tk.InOrder())
    with pytest.raises(tk.CorruptRecordError, match=rf"{name}: record 17 at byte offset "
                                                    rf"{offset}: length crc") as caught:
        for _ in ds:
            pass
    # tfrecordkit's reader feeds the pipeline and found it; TensorFlow's error is the cause.
    assert isinstance(caught.value.__cause__, tf.errors.OpError)


def test_a_corrupt_record_read_by_offset_is_the_readers_own_error(dataset, monkeypatch):
    """Shuffled and P×K, tfrecordkit's reader reads each step's records by offset and finds
    the bad frame itself: that error comes back as it was, without the split being read
    again to find it (the TF-free pass that names other errors is not run)."""
    name, offset = _damage(dataset, 1, 17)
    from tfrecordkit.readers.numpy_data import Loader

    def no_second_pass(*args, **kwargs):
        raise AssertionError("the split was read again to name the error")

    monkeypatch.setattr(Loader, "batches", no_second_pass)
    # PxK over per-class shards: labels come from the manifest, records from the step reads.
    schema = tk.Schema({"x": tk.Tensor((64,), "float32"), "label": tk.ClassLabel(["a", "b"])})
    tk.write_dataset(({"x": np.full(64, i, np.float32), "label": i % 2} for i in range(300)),
                     dataset.parent / "by_class", schema,
                     shards=tk.ShardOptions(layout="per_class", shuffle=False), progress=False)
    bad, bad_offset = _damage(dataset.parent / "by_class", 1, 17)
    cases = ((dataset, name, offset, tk.Shuffled(), 32),
             (dataset.parent / "by_class", bad, bad_offset, tk.PK(2, 150), None))
    for where, name, offset, sampling, size in cases:
        with pytest.raises(tk.CorruptRecordError, match=rf"{name}: record 17 at byte offset "
                                                        rf"{offset}: length crc") as caught:
            for _ in tk.load_tf_dataset(where, batch_size=size, sampling=sampling, seed=1):
                pass
        assert isinstance(caught.value.__cause__, tf.errors.OpError), sampling


def test_a_record_tensorflow_cannot_parse_is_named_by_the_tf_free_reader(tmp_path):
    with tk.RecordWriter(tmp_path / "f.tfrecord") as writer:
        for i in range(10):
            values = [float(i)] * (2 if i != 6 else 3)  # record 6 breaks the fixed shape
            writer.write(tk.encode_example({"x": values}))
    schema = tk.Schema({"x": tk.Tensor((2,), "float32", encoding="list")})
    ds = tk.load_tf_dataset(str(tmp_path / "*.tfrecord"), batch_size=4, sampling=tk.InOrder(),
                            read=tk.ReadOptions(schema=schema))
    with pytest.raises(tk.SchemaError, match=r"'x'.*record 6|record 6.*'x'"):
        for _ in ds:
            pass


def test_iterators_stay_checkpointable(dataset, tmp_path):
    ds = tk.load_tf_dataset(dataset, batch_size=16, sampling=tk.InOrder())
    iterator = iter(ds)
    next(iterator)
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    saved = checkpoint.save(str(tmp_path / "ckpt"))
    after = next(iterator)["x"].numpy()
    checkpoint.restore(saved)
    assert np.array_equal(next(iterator)["x"].numpy(), after)
    assert isinstance(ds, tf.data.Dataset) and ds.class_names == ["a", "b"]


def test_an_error_in_the_users_augmentation_is_left_as_tensorflow_gives_it(dataset):
    """Only errors from the records' contents send the reader back over the split."""
    def augment(example):
        tf.debugging.assert_less(tf.reduce_max(example["x"]), 50.0, message="user check")
        return example

    ds = tk.load_tf_dataset(dataset, batch_size=32, sampling=tk.InOrder(),
                            options=tk.DecodeOptions(augment=augment))
    with pytest.raises(tf.errors.InvalidArgumentError, match="user check"):
        for _ in ds:
            pass


def test_a_flipped_byte_is_named_in_its_own_shard_not_an_intact_one(tmp_path):
    """TensorFlow names an offset but no file; in another shard that offset falls inside a
    record, where any bytes fail a check: only a file where a record starts there is blamed."""
    schema = tk.Schema({"x": tk.Scalar("int64"), "pad": tk.Text()})
    tk.write_dataset([{"x": i, "pad": "y" * 50} for i in range(300)], tmp_path / "ds", schema,
                     shards=tk.ShardOptions(num_shards=3, shuffle=False), progress=False)
    files = sorted((tmp_path / "ds").glob("*.tfrecord"))
    data = bytearray(files[2].read_bytes())
    data[5000] ^= 0xFF
    files[2].write_bytes(bytes(data))
    with pytest.raises(tk.CorruptRecordError) as numpy_error:
        list(tk.load_numpy_dataset(tmp_path / "ds", batch_size=32, sampling=tk.InOrder()))
    with pytest.raises(tk.CorruptRecordError) as tf_error:
        list(tk.load_tf_dataset(tmp_path / "ds", batch_size=32, sampling=tk.InOrder()))
    assert files[2].name in str(tf_error.value)
    assert str(tf_error.value) == str(numpy_error.value)


def test_a_record_that_is_not_an_example_is_named_not_a_unicode_error(tmp_path):
    with tk.RecordWriter(tmp_path / "junk.tfrecord") as writer:
        writer.write(tk.encode_example({"x": [1]}))
        writer.write(b"\xff\xfe\x80not an example\x00\x81")
    read = tk.ReadOptions(schema=tk.Schema({"x": tk.Scalar("int64")}))
    with pytest.raises(tk.SchemaError, match=r"record 1 .*junk\.tfrecord.*not a valid"):
        list(tk.load_tf_dataset(tmp_path / "junk.tfrecord", batch_size=2, read=read))


def test_an_image_that_letterboxes_to_nothing_is_named_as_numpy_names_it(tmp_path):
    import io

    from PIL import Image

    png = io.BytesIO()
    Image.fromarray(np.zeros((2, 30, 3), np.uint8)).save(png, "PNG")
    tk.write_dataset([{"image": png.getvalue()}], tmp_path / "thin",
                     tk.Schema({"image": tk.Image("png")}), progress=False)
    options = tk.DecodeOptions(image_size=(9, 9), keep_aspect=True)
    message = r"record 0 .*feature 'image': a 2x30 image scaled into 9x9 .* would be 0x9"
    with pytest.raises(tk.SchemaError, match=message):
        list(tk.load_numpy_dataset(tmp_path / "thin", batch_size=1, options=options))
    with pytest.raises(tk.SchemaError, match=message):
        list(tk.load_tf_dataset(tmp_path / "thin", batch_size=1, options=options))


@pytest.mark.parametrize("sampling", [tk.InOrder(), tk.Shuffled()], ids=["in order", "shuffled"])
def test_a_jpeg_cut_short_is_named_with_random_crops_too(tmp_path, sampling):
    """Random crops read each batch's JPEG sizes before decoding (``ExtractJpegShape``): a
    JPEG whose header is intact but whose data is cut short fails there, and is named as the
    NumPy loader names it (file, record), not left as TensorFlow's trace."""
    import io

    from PIL import Image

    def jpeg(i: int) -> bytes:
        out = io.BytesIO()
        Image.fromarray(np.full((40, 50, 3), i * 10 % 255, np.uint8)).save(out, "JPEG")
        return out.getvalue()

    rows = [{"image": jpeg(i), "label": i % 2} for i in range(40)]
    rows[23]["image"] = rows[23]["image"][:200] + bytes(50)  # the scan data cut short
    schema = tk.Schema({"image": tk.Image("jpeg", channels=3),
                        "label": tk.ClassLabel(["a", "b"])})
    tk.write_dataset(rows, tmp_path / "ds", schema, progress=False)
    options = tk.DecodeOptions(image_size=(24, 24), crop="random", flip=True)
    with pytest.raises(tk.SchemaError) as numpy_error:
        for _ in tk.load_numpy_dataset(tmp_path / "ds", batch_size=8, options=options):
            pass
    ds = tk.load_tf_dataset(tmp_path / "ds", batch_size=8, sampling=sampling, options=options)
    named = r"record \d+ \[train\].*\.tfrecord.*'image'"
    with pytest.raises(tk.SchemaError, match=named) as caught:
        for _ in ds:
            pass
    assert str(caught.value).splitlines()[0] == str(numpy_error.value).splitlines()[0]
