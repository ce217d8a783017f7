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
    assert isinstance(caught.value.__cause__, tf.errors.DataLossError)


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
