"""Defaults that made readers disagree: every reader keeps every record by default (the NumPy
loader dropped the last partial batch), ``shuffle=False`` is the split's stored order in
tf.data too (its interleave reordered records), and JPEGs decode at full scale by default in
every reader (the TF-free loaders used DCT scaling, tf.data did not)."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_image

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
tf_data = pytest.importorskip("tfrecordkit.readers.tf_data")

N = 1000


@pytest.fixture(scope="module")
def numbers(tmp_path_factory):
    path = tmp_path_factory.mktemp("defaults") / "ds"
    schema = tk.Schema({"n": tk.Scalar("int64")})
    tk.write_dataset([{"n": i} for i in range(N)], path, schema,
                     shards=tk.ShardOptions(num_shards=5, seed=3))
    return path


def test_every_reader_keeps_every_record_by_default(numbers):
    numpy_sizes = [len(b["n"]) for b in tk.load_numpy_dataset(numbers, batch_size=32)]
    assert numpy_sizes == [32] * 31 + [8]
    torch_sizes = [len(b["n"]) for b in tk.load_torch_dataset(numbers, batch_size=32)]
    tf_sizes = [len(b["n"]) for b in tf_data.load_tf_dataset(numbers, batch_size=32)
                .as_numpy_iterator()]
    assert torch_sizes == numpy_sizes
    # tf.data's parallel, non-deterministic map may hand the short batch out before the last
    # full one when shuffling: the same batches, not always in that order.
    assert sorted(tf_sizes) == sorted(numpy_sizes)


def test_shuffle_false_is_the_stored_order_in_every_reader_and_pass(numbers):
    stored = [int(tk.decode_example(r)["n"][0]) for r in tk.open_split(numbers)]
    numpy_order = [int(v) for b in tk.load_numpy_dataset(numbers, batch_size=64,
                                                         sampling=tk.InOrder())
                   for v in b["n"]]
    assert numpy_order == stored
    for _ in range(3):  # the interleave was non-deterministic: some passes differed
        ds = tf_data.load_tf_dataset(numbers, batch_size=64, sampling=tk.InOrder())
        assert [int(v) for b in ds.as_numpy_iterator() for v in b["n"]] == stored


def test_jpegs_decode_alike_by_default_with_a_target_size(tmp_path):
    # 512 x 512: a 64 x 64 target lets a JPEG decode at 1/8 scale when DCT scaling is on.
    y, x = np.mgrid[0:512, 0:512]
    noise = np.random.default_rng(1).integers(0, 60, (512, 512, 3))
    picture = ((np.stack([x, y, x + y], axis=-1) // 4 + noise) % 256).astype(np.uint8)
    rows = [{"image": encode_image(picture[k * 8 :, k * 8 :], "JPEG"), "label": k % 2}
            for k in range(4)]
    schema = tk.Schema({"image": tk.Image("jpeg"), "label": tk.ClassLabel(["a", "b"])})
    tk.write_dataset(rows, tmp_path / "ds", schema, shards=tk.ShardOptions(shuffle=False))
    ours = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
                                           image_size=(64, 64))))["image"]
    tf_ds = tf_data.load_tf_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
                                    image_size=(64, 64))
    (theirs,) = [b["image"] for b in tf_ds.as_numpy_iterator()]
    assert ours.shape == theirs.shape == (4, 64, 64, 3)
    assert np.array_equal(ours, theirs)
    # The test can tell: with DCT scaling asked for, the pixels differ from tf.data's.
    scaled = next(iter(tk.load_numpy_dataset(
        tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
        options=tk.DecodeOptions(image_size=(64, 64), fast_resize=True))))["image"]
    assert not np.array_equal(scaled, theirs)
