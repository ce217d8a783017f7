"""GZIP and ZLIB record files in every reader. TensorFlow is the oracle both ways: files its
writer compressed (TFX ExampleGen writes such shards) read by the TF-free loaders give what
tf.data gives, and the compressed datasets we write (with restart points) are read by
TensorFlow's own reader record for record."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit.errors import DatasetError
from tfrecordkit.readers.grain_source import load_grain_source
from tfrecordkit.readers.numpy_data import load_numpy_dataset
from tfrecordkit.schema import ClassLabel, Scalar, Schema, Text

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
tf_data = pytest.importorskip("tfrecordkit.readers.tf_data")

FILES, PER_FILE = 3, 700


def _example(i: int) -> bytes:
    feature = tf.train.Feature
    return tf.train.Example(features=tf.train.Features(feature={
        "label": feature(int64_list=tf.train.Int64List(value=[i % 7])),
        "n": feature(int64_list=tf.train.Int64List(value=[i])),
        "score": feature(float_list=tf.train.FloatList(value=[i / 8, -i / 3])),
        "caption": feature(bytes_list=tf.train.BytesList(value=[f"row {i} " .encode() * (i % 9)])),
    })).SerializeToString()


@pytest.fixture(scope="module", params=["GZIP", "ZLIB"])
def tfx_files(request, tmp_path_factory):
    """Compressed files as TensorFlow's writer makes them (TFX's data_tfrecord-*.gz)."""
    root = tmp_path_factory.mktemp(request.param.lower())
    for part in range(FILES):
        name = root / f"data_tfrecord-{part:05d}-of-{FILES:05d}.gz"
        with tf.io.TFRecordWriter(str(name), options=request.param) as writer:
            for i in range(part * PER_FILE, (part + 1) * PER_FILE):
                writer.write(_example(i))
    return root


def _tf_rows(pattern: str, compression: str) -> dict[int, dict]:
    files = sorted(tf.io.gfile.glob(pattern))
    rows = {}
    description = {"n": tf.io.FixedLenFeature([], tf.int64),
                   "label": tf.io.FixedLenFeature([], tf.int64),
                   "score": tf.io.FixedLenFeature([2], tf.float32),
                   "caption": tf.io.FixedLenFeature([], tf.string)}
    for record in tf.data.TFRecordDataset(files, compression_type=compression):
        row = {k: v.numpy() for k, v in tf.io.parse_single_example(record, description).items()}
        rows[int(row["n"])] = row
    return rows


def test_tensorflow_compressed_files_read_like_tf_data(tfx_files):
    pattern = str(tfx_files / "*.gz")
    compression = "GZIP" if tfx_files.name.startswith("gzip") else "ZLIB"
    expected = _tf_rows(pattern, compression)
    loader = load_numpy_dataset(pattern, batch_size=64, seed=3)
    assert len(loader) == -(-FILES * PER_FILE // 64)  # counted by one inflate pass
    seen = []
    for batch in loader:
        for k, n in enumerate(batch["n"].tolist()):
            seen.append(n)
            row = expected[n]
            assert batch["label"][k] == row["label"]
            np.testing.assert_array_equal(batch["score"][k], row["score"])
            assert batch["caption"][k] == row["caption"]
    assert sorted(seen) == list(range(FILES * PER_FILE))
    assert seen != sorted(seen)  # shuffled
    # tf.data over the same files, through our reader: the same values.
    ours = tf_data.load_tf_dataset(pattern, sampling=tk.InOrder())
    assert sorted(int(row["n"]) for row in ours.as_numpy_iterator()) == sorted(seen)
    source = load_grain_source(pattern)  # random access, record by record
    picks = [FILES * PER_FILE - 1, 0, PER_FILE + 5, 17]
    assert [int(source[i]["n"]) for i in picks] == picks  # file order, as globbed


def test_resume_and_ranks_on_compressed_files_are_exact(tfx_files):
    pattern = str(tfx_files / "*.gz")

    def ids(loader, steps=None):  # exactly `steps` batches consumed
        return [batch["n"].tolist() for batch in itertools.islice(loader, steps)]

    reference = ids(load_numpy_dataset(pattern, batch_size=50, seed=11))
    run = load_numpy_dataset(pattern, batch_size=50, seed=11)
    head = ids(run, steps=17)
    fresh = load_numpy_dataset(pattern, batch_size=50, seed=11)
    fresh.load_state_dict(json.loads(json.dumps(run.state_dict())))
    assert head + ids(fresh) == reference
    ranks = [load_numpy_dataset(pattern, batch_size=50, seed=11, partition=tk.Partition(r, 2))
             for r in range(2)]
    parts = [ids(r) for r in ranks]
    assert len(parts[0]) == len(parts[1]) == len(reference)
    assert [a + b for a, b in zip(*parts, strict=True)][:-1] == reference[:-1]


def test_files_of_mixed_compression_are_refused(tfx_files, tmp_path):
    first = sorted(tfx_files.glob("*.gz"))[0]
    (tmp_path / "a.gz").write_bytes(first.read_bytes())
    with tf.io.TFRecordWriter(str(tmp_path / "b.tfrecord")) as writer:
        writer.write(_example(1))
    with pytest.raises(DatasetError, match="compressed"):
        load_numpy_dataset(str(tmp_path / "*"), batch_size=4)


def test_adopted_compressed_folders_read_in_every_reader(tfx_files, tmp_path):
    manifest = tk.adopt(sorted(tfx_files.glob("*.gz")), tmp_path / "adopted",
                        label_feature="label")
    assert manifest.compression in ("gzip", "zlib")
    loader = load_numpy_dataset(tmp_path / "adopted", batch_size=100, sampling=tk.InOrder())
    got = np.concatenate([b["n"] for b in loader])
    assert got.tolist() == list(range(FILES * PER_FILE))
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "adopted", sampling=tk.PK(3, 4), seed=1)))
    assert (batch["n"] % 7 == batch["label"]).all()


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_our_compressed_datasets_with_restart_points_are_read_by_tensorflow(tmp_path,
                                                                           compression):
    schema = Schema({"n": Scalar("int64"), "caption": Text(),
                     "label": ClassLabel([f"c{i}" for i in range(7)])})
    rows = [{"n": i, "caption": f"row {i} " * (i % 9), "label": i % 7} for i in range(2500)]
    for name, option in (("plain", None), ("packed", compression)):
        tk.write_dataset(rows, tmp_path / name, schema, progress=False,
                         shards=tk.ShardOptions(num_shards=2, compression=option, seed=4))
    packed = tk.load_manifest(tmp_path / "packed")
    assert all(s.restarts for s in packed.split("train").shards)
    plain = tk.load_manifest(tmp_path / "plain")
    tf_type = compression.upper()
    for ours, theirs in zip(packed.split("train").shards, plain.split("train").shards,
                            strict=True):
        by_tf = list(tf.data.TFRecordDataset(str(tmp_path / "packed" / ours.file),
                                             compression_type=tf_type).as_numpy_iterator())
        assert by_tf == list(tk.read_records(tmp_path / "plain" / theirs.file))
    numpy_rows = {int(n): c for b in load_numpy_dataset(tmp_path / "packed", batch_size=128)
                  for n, c in zip(b["n"], b["caption"], strict=True)}
    tf_rows = {int(r["n"]): r["caption"].decode() for r in
               tf_data.load_tf_dataset(tmp_path / "packed").as_numpy_iterator()}
    assert numpy_rows == tf_rows
    assert len(numpy_rows) == 2500


def test_torch_workers_grain_and_pk_on_our_compressed_per_class_dataset(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    schema = Schema({"n": Scalar("int64"), "label": ClassLabel([f"c{i}" for i in range(5)])})
    rows = [{"n": i, "label": i % 5} for i in range(3000)]
    tk.write_dataset(rows, tmp_path / "gz", schema, progress=False,
                     shards=tk.ShardOptions(layout="per_class", compression="gzip",
                                            num_shards=2))
    reference = [b["n"].tolist() for b in load_numpy_dataset(tmp_path / "gz", batch_size=100,
                                                             seed=5)]
    ds = tk.load_torch_dataset(tmp_path / "gz", batch_size=100, seed=5)
    got = [b["n"].tolist() for b in DataLoader(ds, batch_size=None, num_workers=2)]
    assert got == reference
    assert isinstance(got[0][0], int) and torch.is_tensor(next(iter(ds))["n"])
    source = load_grain_source(tmp_path / "gz")
    keys = source.order(seed=1)
    assert sorted(int(source[int(k)]["n"]) for k in keys[:50]) == sorted(
        int(tk.open_split(tmp_path / "gz").schema.decode(r)["n"])
        for r in tk.open_split(tmp_path / "gz").get_many(keys[:50]))
    for batch in itertools.islice(tk.load_numpy_dataset(tmp_path / "gz", sampling=tk.PK(3, 4),
                                                        seed=2), 20):
        assert (batch["n"] % 5 == batch["label"]).all()
        assert len(set(batch["label"].tolist())) == 3
