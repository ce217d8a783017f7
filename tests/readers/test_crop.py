"""The ImageNet recipe (random-resized-crop + flip for training, centre crop for evaluation):
windows are a pure function of (seed, epoch, record id) and the image's size, cut from the full
decode and resized with the library's arithmetic, and every reader gives the same pixels."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tfrecordkit as tk
from tfrecordkit import OptionError
from tfrecordkit.codecs import (
    center_crop_box,
    center_crop_boxes,
    crop_draws,
    decode_image_bytes,
    random_crop_box,
    random_crop_boxes,
    random_flips,
    resize_image,
)

SIZE = (24, 28)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 600), st.integers(1, 600)), min_size=1, max_size=20),
       st.integers(0, 2**31), st.integers(0, 1000), st.booleans())
def test_random_windows_lie_inside_and_are_keyed_by_record(sizes, seed, epoch, flip):
    heights, widths = (np.array(v) for v in zip(*sizes, strict=True))
    ids = np.arange(len(sizes)) * 7919 + 3
    boxes = random_crop_boxes(heights, widths, seed=seed, epoch=epoch, ids=ids, flip=flip)
    top, left, h, w, flips = boxes.T
    assert (top >= 0).all() and (left >= 0).all() and (h >= 1).all() and (w >= 1).all()
    assert (top + h <= heights).all() and (left + w <= widths).all()
    assert set(flips.tolist()) <= ({0, 1} if flip else {0})
    # One record's window does not depend on the others in its batch, nor on their order.
    for i in range(len(sizes)):
        alone = random_crop_boxes(heights[i : i + 1], widths[i : i + 1], seed=seed,
                                  epoch=epoch, ids=ids[i : i + 1], flip=flip)
        assert (alone[0] == boxes[i]).all()


def _torchvision_rule(height, width, draws, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)):
    """RandomResizedCrop.get_params as torchvision documents it, one record at a time, with
    ``draws`` (4 per try: area, log-aspect, top, left) in place of torch's generator."""
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for t in range(10):
        u_area, u_aspect, u_top, u_left = draws[4 * t : 4 * t + 4]
        target_area = area * (scale[0] + (scale[1] - scale[0]) * u_area)
        aspect = math.exp(log_ratio[0] + (log_ratio[1] - log_ratio[0]) * u_aspect)
        w = round(math.sqrt(target_area * aspect))
        h = round(math.sqrt(target_area / aspect))
        if 0 < w <= width and 0 < h <= height:
            return int(u_top * (height - h + 1)), int(u_left * (width - w + 1)), h, w
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, round(width / min(ratio))
    elif in_ratio > max(ratio):
        h, w = height, round(height * max(ratio))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 900), st.integers(1, 900)), min_size=1, max_size=30),
       st.integers(0, 2**31), st.floats(0.01, 0.9), st.floats(1.0, 3.0))
def test_random_windows_follow_torchvisions_rule(sizes, seed, low_scale, high_ratio):
    from tfrecordkit.codecs._crop import _uniforms

    heights, widths = (np.array(v) for v in zip(*sizes, strict=True))
    ids = np.arange(len(sizes))
    scale, ratio = (low_scale, 1.0), (1 / high_ratio, high_ratio)
    boxes = random_crop_boxes(heights, widths, seed=seed, epoch=2, ids=ids, scale=scale,
                              ratio=ratio)
    draws = _uniforms(seed, 2, ids)
    for i, (h, w) in enumerate(sizes):
        assert tuple(boxes[i, :4]) == _torchvision_rule(h, w, draws[i].tolist(), scale, ratio)


def test_random_windows_are_spread_as_the_rule_says():
    n = 20_000
    boxes = random_crop_boxes(np.full(n, 500), np.full(n, 500), seed=1, epoch=0,
                              ids=np.arange(n), flip=True)
    area = boxes[:, 2] * boxes[:, 3] / (500 * 500)
    aspect = boxes[:, 3] / boxes[:, 2]
    assert area.min() >= 0.07 and area.max() <= 1.0
    assert ((aspect > 3 / 4 * 0.97) & (aspect < 4 / 3 * 1.03)).mean() > 0.99
    assert abs(np.log(aspect).mean()) < 0.01  # log-uniform about 1
    assert 0.48 < boxes[:, 4].mean() < 0.52
    assert (boxes[:, 4] == random_flips(seed=1, epoch=0, ids=np.arange(n))).all()
    other = random_crop_boxes(np.full(n, 500), np.full(n, 500), seed=1, epoch=1,
                              ids=np.arange(n))
    assert (other[:, :4] != boxes[:, :4]).any(axis=1).mean() > 0.99


def test_a_thin_image_falls_back_to_the_centred_window_within_the_ratio():
    # 10 tries can't fit a 4:3-at-most window of >= 8% of the area into 1000 x 10 often.
    boxes = random_crop_boxes(np.full(50, 1000), np.full(50, 10), seed=0, epoch=0,
                              ids=np.arange(50))
    fallback = boxes[(boxes[:, 2] == round(10 / (3 / 4))) & (boxes[:, 3] == 10)]
    assert len(fallback) > 0
    assert (fallback[:, 0] == (1000 - 13) // 2).all() and (fallback[:, 1] == 0).all()


def test_center_windows_are_centred_with_the_targets_aspect():
    boxes = center_crop_boxes(np.array([256, 300, 100]), np.array([256, 400, 50]), (224, 224))
    assert boxes[0].tolist() == [16, 16, 224, 224, 0]
    assert boxes[1].tolist() == [19, 69, 262, 262, 0]
    assert boxes[2, 2] == boxes[2, 3] == round(50 * 0.875)


def _dataset(path, n: int = 40, seed: int = 0) -> list[bytes]:
    from PIL import Image
    from skimage import data

    rng = np.random.default_rng(seed)
    shots = [data.astronaut(), data.coffee(), data.chelsea(), data.rocket()]
    rows, encoded = [], []
    for i in range(n):
        shot = shots[i % len(shots)]
        h, w = int(rng.integers(30, 90)), int(rng.integers(30, 90))
        top = int(rng.integers(0, shot.shape[0] - h))
        left = int(rng.integers(0, shot.shape[1] - w))
        buffer = io.BytesIO()
        window = shot[top : top + h, left : left + w]
        Image.fromarray(window).save(buffer, format="JPEG", quality=90)
        encoded.append(buffer.getvalue())
        rows.append({"image": {"bytes": buffer.getvalue(), "height": h, "width": w,
                               "channels": 3}, "label": i % 4})
    schema = tk.Schema({"image": tk.Image("jpeg", channels=3),
                        "label": tk.ClassLabel(["a", "b", "c", "d"])})
    tk.write_dataset(rows, path, schema, shards=tk.ShardOptions(num_shards=3, shuffle=False),
                     progress=False)
    return encoded


RANDOM = tk.DecodeOptions(image_size=SIZE, crop="random", flip=True)
CENTER = tk.DecodeOptions(image_size=SIZE, crop="center")


def _numpy_epoch(path, options, epoch: int = 0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    loader = tk.load_numpy_dataset(path, batch_size=8, sampling=tk.Shuffled(exact=True), seed=seed,
                                   options=options)
    loader.set_epoch(epoch)
    batches = list(loader)
    return (np.concatenate([b["image"] for b in batches]),
            np.concatenate([b["__id"] for b in batches]))


def test_pixels_are_a_full_decode_cut_resized_and_flipped(tmp_path):
    encoded = _dataset(tmp_path / "ds")
    images, ids = _numpy_epoch(tmp_path / "ds", RANDOM, epoch=3, seed=5)
    for image, record in zip(images, ids, strict=True):
        pixels = decode_image_bytes(encoded[record], 3)
        top, left, h, w, flip = random_crop_boxes(
            np.array([pixels.shape[0]]), np.array([pixels.shape[1]]), seed=5, epoch=3,
            ids=np.array([record]), flip=True)[0]
        expected = resize_image(pixels[top : top + h, left : left + w], SIZE)
        np.testing.assert_array_equal(image, expected[:, ::-1] if flip else expected)
    centred, ids = _numpy_epoch(tmp_path / "ds", CENTER)
    for image, record in zip(centred, ids, strict=True):
        pixels = decode_image_bytes(encoded[record], 3)
        top, left, h, w, _ = center_crop_boxes(np.array([pixels.shape[0]]),
                                               np.array([pixels.shape[1]]), SIZE)[0]
        np.testing.assert_array_equal(image, resize_image(pixels[top : top + h,
                                                                 left : left + w], SIZE))


def test_windows_follow_the_record_not_the_order_threads_or_batch(tmp_path):
    _dataset(tmp_path / "ds")
    first, ids = _numpy_epoch(tmp_path / "ds", RANDOM, epoch=0)
    by_id = dict(zip(ids.tolist(), first, strict=True))
    loader = tk.load_numpy_dataset(tmp_path / "ds", batch_size=5, sampling=tk.InOrder(),
                                   options=RANDOM, read=tk.ReadOptions(num_threads=1))
    for batch in loader:
        for record, image in zip(batch["__id"].tolist(), batch["image"], strict=True):
            np.testing.assert_array_equal(image, by_id[record])
    later, later_ids = _numpy_epoch(tmp_path / "ds", RANDOM, epoch=1)
    changed = [not np.array_equal(by_id[r], image) for r, image in zip(later_ids, later,
                                                                       strict=True)]
    assert sum(changed) > len(changed) // 2  # another epoch, other windows


def test_resume_repeats_the_windows(tmp_path):
    _dataset(tmp_path / "ds")
    loader = tk.load_numpy_dataset(tmp_path / "ds", batch_size=8, seed=2, options=RANDOM)
    whole = [b["image"] for b in loader]
    again = tk.load_numpy_dataset(tmp_path / "ds", batch_size=8, seed=2, options=RANDOM)
    iterator = iter(again)
    next(iterator)
    state = again.state_dict()
    resumed = tk.load_numpy_dataset(tmp_path / "ds", batch_size=8, seed=2, options=RANDOM)
    resumed.load_state_dict(state)
    for expected, batch in zip(whole[1:], resumed, strict=True):
        np.testing.assert_array_equal(batch["image"], expected)


def test_pk_batches_crop_by_step_and_record(tmp_path):
    path = tmp_path / "pc"
    rows = [{"image": encoded, "label": i % 4} for i, encoded in
            enumerate(_dataset(tmp_path / "ds"))]
    schema = tk.Schema({"image": tk.Image("jpeg", channels=3),
                        "label": tk.ClassLabel(["a", "b", "c", "d"])})
    tk.write_dataset(rows, path, schema, shards=tk.ShardOptions(layout="per_class"),
                     progress=False)
    first = list(tk.load_numpy_dataset(path, sampling=tk.PK(2, 2), options=RANDOM).batches(6))
    second = list(tk.load_numpy_dataset(path, sampling=tk.PK(2, 2), options=RANDOM).batches(6))
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a["image"], b["image"])
    assert all(b["image"].shape == (4, *SIZE, 3) for b in first)


def test_options_that_cannot_hold_are_refused():
    # The size may come from the loader's image_size= keyword: checked there (test_one_call).
    assert tk.DecodeOptions(crop="random").image_size is None
    with pytest.raises(OptionError, match="keep_aspect"):
        tk.DecodeOptions(image_size=SIZE, crop="center", keep_aspect=True)
    with pytest.raises(OptionError, match="crop must be"):
        tk.DecodeOptions(image_size=SIZE, crop="centre")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="crop_scale"):
        tk.DecodeOptions(image_size=SIZE, crop="random", crop_scale=(0.5, 1.5))
    with pytest.raises(OptionError, match="crop_ratio"):
        tk.DecodeOptions(image_size=SIZE, crop="random", crop_ratio=(0, 1))
    assert tk.DecodeOptions(image_size=SIZE, crop="random").crop_ratio == (0.75, 4 / 3)
    assert math.isclose(tk.DecodeOptions().crop_fraction, 0.875)


@pytest.mark.integration
def test_every_reader_crops_the_same_pixels(tmp_path):
    tf = pytest.importorskip("tensorflow")
    torch = pytest.importorskip("torch")
    _dataset(tmp_path / "ds")
    path = tmp_path / "ds"
    for options in (RANDOM, CENTER):
        ds = tk.load_tf_dataset(path, batch_size=8, sampling=tk.InOrder(), seed=0, options=options)
        for epoch in range(2):  # iterating again is the next epoch
            tf_images = np.concatenate([b["image"].numpy() for b in ds])
            loader = tk.load_numpy_dataset(path, batch_size=8, sampling=tk.InOrder(),
                                           options=options)
            loader.set_epoch(epoch)
            np_images = np.concatenate([b["image"] for b in loader])
            np.testing.assert_array_equal(tf_images, np_images)
            torch_ds = tk.load_torch_dataset(path, batch_size=8, sampling=tk.InOrder(),
                                             options=options)
            torch_ds.set_epoch(epoch)
            batches = torch.utils.data.DataLoader(torch_ds, batch_size=None, num_workers=2)
            np.testing.assert_array_equal(
                np.concatenate([b["image"].numpy() for b in batches]), np_images)
            source = tk.load_grain_source(path, options=options)
            grain = np.stack([source[epoch * len(source) + i]["image"]
                              for i in range(len(source))])
            np.testing.assert_array_equal(grain, np_images)
    # Repeated, the epochs count on.
    repeated = tk.load_tf_dataset(path, batch_size=8, sampling=tk.InOrder(), seed=0, options=RANDOM,
                                  repeat=True)
    two = np.concatenate([b["image"].numpy() for b in repeated.take(10)])
    loader = tk.load_numpy_dataset(path, batch_size=8, sampling=tk.InOrder(), options=RANDOM)
    loader.set_epoch(1)
    np.testing.assert_array_equal(two[40:], np.concatenate([b["image"] for b in loader]))
    with pytest.raises(OptionError, match=r"tf\.data"):
        tk.load_tf_dataset(path, sampling=tk.PK(2, 2), options=RANDOM)
    with pytest.raises(OptionError, match="fast_resize"):
        tk.load_tf_dataset(path, options=tk.DecodeOptions(image_size=SIZE, fast_resize=True))
    with pytest.raises(OptionError, match="cache"):
        tk.load_tf_dataset(path, options=RANDOM, read=tk.ReadOptions(cache=True))
    del tf


def test_grains_batched_reads_key_windows_as_single_reads_do(tmp_path):
    _dataset(tmp_path / "ds")
    source = tk.load_grain_source(tmp_path / "ds", options=RANDOM, seed=3)
    n = len(source)
    keys = [2, n + 2, 2 * n + 5, 7]  # the same record in epochs 0 and 1, another in epoch 2
    batched = source._getitems(keys)
    for key, values in zip(keys, batched, strict=True):
        np.testing.assert_array_equal(values["image"], source[key]["image"])
    assert not np.array_equal(batched[0]["image"], batched[1]["image"])


def test_a_reader_without_record_ids_refuses_random_crops_rather_than_guessing():
    from tfrecordkit.readers._decoding import RecordDecoder

    schema = tk.Schema({"image": tk.Image("jpeg", channels=3)})
    decoder = RecordDecoder(schema, RANDOM)
    record = schema.encode({"image": _jpeg(40, 50)})
    with pytest.raises(OptionError, match="record ids"):
        decoder.decode_columns([record], lambda i: i)
    centred = RecordDecoder(schema, CENTER).decode_columns([record], lambda i: i)
    assert centred["image"][0].shape == (*SIZE, 3)


def _jpeg(height: int, width: int) -> bytes:
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG")
    return buffer.getvalue()


@pytest.mark.integration
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 2000), st.integers(1, 2000)), min_size=1,
                max_size=40),
       st.integers(0, 2**62), st.integers(-1, 10**6), st.sampled_from(
           [(0.08, 1.0), (0.5, 0.5), (0.01, 0.2), (1.0, 1.0)]),
       st.sampled_from([(3 / 4, 4 / 3), (1.0, 1.0), (0.2, 5.0), (2.0, 3.0)]),
       st.sampled_from(["random", "center", None]), st.booleans())
def test_tf_datas_in_graph_windows_equal_the_pure_functions(sizes, seed, epoch, scale, ratio,
                                                           crop, flip):
    """tf.data computes each window with TensorFlow ops (no Python call per record: the
    exit hang and the GIL), bit for bit as the TF-free readers' functions (the draws'
    uint64 hashing, IEEE arithmetic and a portable exp)."""
    tf = pytest.importorskip("tensorflow")
    from tfrecordkit.readers.tf_data._crop import window_of

    if crop is None and not flip:
        flip = True
    options = tk.DecodeOptions(image_size=(24, 28), crop=crop, flip=flip, crop_scale=scale,
                               crop_ratio=ratio)
    ids = np.arange(len(sizes), dtype=np.int64) * 1_000_003 + 17
    draws = crop_draws(seed % 2**62, epoch, ids)
    for (height, width), record, u in zip(sizes, ids.tolist(), draws, strict=True):
        if crop == "random":
            want = random_crop_box(height, width, u, scale=scale, ratio=ratio, flip=flip)
        else:
            box = (center_crop_box(height, width, (24, 28), 0.875) if crop == "center"
                   else (0, 0, height, width, 0))
            want = (*box[:4], int(flip and u[-1] < 0.5))
        key = tf.constant([epoch, record], tf.int64)  # the record's crop key
        window, flipped = window_of(tf.constant(height), tf.constant(width), key,
                                    seed % 2**62, options)
        assert (*window.numpy().tolist(), int(flipped.numpy())) == tuple(want)


@pytest.mark.integration
@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 2000), st.integers(1, 2000)), min_size=1,
                max_size=40),
       st.integers(0, 2**62), st.integers(-1, 10**6), st.sampled_from(
           [(0.08, 1.0), (0.5, 0.5), (0.01, 0.2), (1.0, 1.0)]),
       st.sampled_from([(3 / 4, 4 / 3), (1.0, 1.0), (0.2, 5.0), (2.0, 3.0)]), st.booleans())
def test_a_batchs_windows_computed_at_once_in_a_tf_data_map_equal_the_pure_functions(
        sizes, seed, epoch, scale, ratio, flip):
    """tf.data computes a batch's random windows at once (``random_windows``), inside a
    dataset map where TensorFlow's graph optimizer runs: bit for bit the TF-free readers'."""
    tf = pytest.importorskip("tensorflow")
    from tfrecordkit.readers.tf_data._crop import random_windows

    seed %= 2**62
    options = tk.DecodeOptions(image_size=(24, 28), crop="random", flip=flip,
                               crop_scale=scale, crop_ratio=ratio)
    ids = np.arange(len(sizes), dtype=np.int64) * 1_000_003 + 17
    heights = np.array([h for h, _ in sizes], np.int64)
    widths = np.array([w for _, w in sizes], np.int64)
    keys = np.stack([np.full_like(ids, epoch), ids], axis=1)  # the records' crop keys
    ds = tf.data.Dataset.from_tensors((heights, widths, keys)).map(
        lambda h, w, k: random_windows(h, w, k, seed, options))
    windows, flips = next(iter(ds))
    draws = crop_draws(seed, epoch, ids)
    want = [random_crop_box(h, w, u, scale=scale, ratio=ratio, flip=flip)
            for (h, w), u in zip(sizes, draws, strict=True)]
    got = [(*box, int(f)) for box, f in zip(windows.numpy().tolist(),
                                            flips.numpy().tolist(), strict=True)]
    assert got == want


def test_the_centre_crop_against_torchvisions_resize_then_crop_is_as_documented():
    """docs/loaders.md states how far crop="center" is from torchvision's evaluation
    transform, Resize(256) + CenterCrop(224) on PIL images (rewritten here: PIL's
    antialiased bilinear resize of the shorter side to 256, then a 224 cut at
    int(round((size - 224) / 2))): a window of the original then one resize, against a
    resize then a window. Mean |difference| per photo of scikit-image's: 1 to 4 levels."""
    from PIL import Image
    from skimage import data

    from tfrecordkit.codecs import ImageTransform

    transform = ImageTransform(tk.DecodeOptions(image_size=224, crop="center"))
    means = []
    for name in ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry"):
        pixels = decode_image_bytes(_jpeg_of(getattr(data, name)()), 3)
        ours = transform.finisher()(0, pixels)
        picture = Image.fromarray(pixels)
        width, height = picture.size
        size = ((256, int(256 * height / width)) if width <= height
                else (int(256 * width / height), 256))
        resized = picture.resize(size, Image.BILINEAR)
        left, top = round((size[0] - 224) / 2.0), round((size[1] - 224) / 2.0)
        theirs = np.asarray(resized.crop((left, top, left + 224, top + 224)))
        means.append(float(np.abs(ours.astype(int) - theirs.astype(int)).mean()))
    assert all(1.0 <= m <= 4.0 for m in means), means
    docs = " ".join((Path(__file__).resolve().parents[2] / "docs" / "loaders.md").read_text()
                    .split())
    assert "by 1 to 4 levels" in docs and f"{np.mean(means):.1f} on average" in docs


def _jpeg_of(pixels):
    out = io.BytesIO()
    from PIL import Image

    Image.fromarray(pixels).save(out, "JPEG", quality=95)
    return out.getvalue()


@pytest.mark.integration
@pytest.mark.parametrize("subsampling", [0, 1, 2])  # PIL: 4:4:4, 4:2:2, 4:2:0
def test_tf_data_decodes_only_the_widened_window_with_a_full_decodes_pixels(tmp_path,
                                                                           subsampling):
    """tf.data decodes a JPEG's crop window widened by one pixel (decode_and_crop_jpeg),
    then cuts it: the same pixels as a full decode then a cut (what the NumPy reader does)
    at every MCU phase and edge; grey JPEGs and PNGs among them take their own paths."""
    pytest.importorskip("tensorflow")
    from PIL import Image
    from skimage import data

    rng = np.random.default_rng(subsampling)
    shots = [data.astronaut(), data.coffee(), data.chelsea(), data.camera()]
    rows = []
    for i in range(48):
        shot = shots[i % len(shots)]
        h, w = int(rng.integers(17, 120)), int(rng.integers(17, 120))
        top, left = int(rng.integers(0, shot.shape[0] - h)), int(rng.integers(0, shot.shape[1] - w))
        buffer = io.BytesIO()
        window = Image.fromarray(shot[top : top + h, left : left + w])
        if i % 7 == 3:
            window.save(buffer, format="PNG")
        else:
            window.save(buffer, format="JPEG", quality=int(rng.integers(70, 96)),
                        subsampling=subsampling)
        rows.append({"image": buffer.getvalue()})
    tk.write_dataset(rows, tmp_path / "ds", tk.Schema({"image": tk.Image(channels=3)}),
                     progress=False)
    for crop in ("random", "center"):
        options = tk.DecodeOptions(image_size=(20, 24), crop=crop, flip=True,
                                   crop_scale=(0.02, 1.0))
        for seed in (0, 5):
            tf_images = np.concatenate([b["image"].numpy() for b in tk.load_tf_dataset(
                tmp_path / "ds", batch_size=16, sampling=tk.InOrder(), seed=seed,
                options=options)])
            np_images = np.concatenate([b["image"] for b in tk.load_numpy_dataset(
                tmp_path / "ds", batch_size=16, sampling=tk.InOrder(), seed=seed,
                options=options)])
            np.testing.assert_array_equal(tf_images, np_images)
