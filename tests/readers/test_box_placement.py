"""Boxes follow their image: every crop, resize, letterbox and flip a reader applies to an image
moves the boxes tied to it by the same arithmetic, in every reader, and a box drawn around a
solid object still covers it afterwards (checked against the pixels)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image as PILImage

import tfrecordkit as tk
from tfrecordkit import DatasetError, OptionError
from tfrecordkit.codecs import Placement, place_boxes

SIZE = (40, 48)
TRANSFORMS = [
    {"crop": "random", "flip": True},
    {"crop": "random", "crop_scale": (0.05, 0.3)},  # small windows: boxes cut and dropped
    {"crop": "center"},
    {"keep_aspect": True, "flip": True},
    {"keep_aspect": True},
    {"flip": True},
    {},
]
COLOURS = ((255, 0, 0), (0, 255, 0), (0, 0, 255))


def _photo(rng: np.random.Generator) -> tuple[bytes, dict]:
    """A black PNG with 1-3 solid rectangles (red, green, blue), each with its exact box."""
    h, w = int(rng.integers(30, 120)), int(rng.integers(30, 120))
    pixels = np.zeros((h, w, 3), np.uint8)
    boxes, labels = [], []
    for k in range(int(rng.integers(1, 4))):
        y0, x0 = int(rng.integers(0, h - 8)), int(rng.integers(0, w - 8))
        y1, x1 = int(rng.integers(y0 + 6, h + 1)), int(rng.integers(x0 + 6, w + 1))
        region = pixels[y0:y1, x0:x1]
        region[...] = np.maximum(region, COLOURS[k])
        boxes.append([x0 / w, y0 / h, x1 / w, y1 / h])
        labels.append(k)
    out = io.BytesIO()
    PILImage.fromarray(pixels).save(out, "PNG")
    return out.getvalue(), {"boxes": boxes, "labels": labels}


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    rng = np.random.default_rng(5)
    rows = []
    for _ in range(24):
        data, objects = _photo(rng)
        rows.append({"image": data, "image/object": objects})
    schema = tk.Schema({"image": tk.Image("png", channels=3),
                        "image/object": tk.Boxes(["red", "green", "blue"])})
    path = tmp_path_factory.mktemp("boxes") / "ds"
    tk.write_dataset(rows, path, schema, shards=tk.ShardOptions(num_shards=2), progress=False)
    return path


def _records(batches) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each record's (pixels, boxes, labels) from padded NumPy batches."""
    out = []
    for batch in batches:
        objects = batch["image/object"]
        for i, image in enumerate(batch["image"]):
            n = int(objects["labels"]["lengths"][i, 0])
            out.append((np.asarray(image), np.asarray(objects["boxes"]["values"][i, :n]),
                        np.asarray(objects["labels"]["values"][i, :n])))
    return out


def _assert_boxes_cover(records, size, min_size=1.0, min_area=1.0):
    """Every kept box lies on its object's pixels (its colour's bounding box, within the one
    pixel bilinear resizing blurs), and an object with no box left is (nearly) gone."""
    height, width = size
    kept = dropped = 0
    for pixels, boxes, labels in records:
        assert len(boxes) == len(labels) and len(set(labels.tolist())) == len(labels)
        for k in range(3):
            mask = pixels[:, :, k] > 127  # each object has a channel of its own
            if k in labels.tolist():
                kept += 1
                xmin, ymin, xmax, ymax = boxes[labels.tolist().index(k)].tolist()
                assert 0 <= xmin <= xmax <= 1 and 0 <= ymin <= ymax <= 1
                rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
                if not len(rows):  # an object thinner than a pixel after resizing
                    assert min((xmax - xmin) * width, (ymax - ymin) * height) < 2.5
                    continue
                # The mask's extent in pixel edges against the box's, within blur.
                assert abs(cols[0] - xmin * width) <= 1.5
                assert abs(cols[-1] + 1 - xmax * width) <= 1.5
                assert abs(rows[0] - ymin * height) <= 1.5
                assert abs(rows[-1] + 1 - ymax * height) <= 1.5
            else:
                dropped += 1
                # Dropped: nothing of the object, or less than the rule's minimum, is left.
                area = int(mask.sum())
                assert area <= max(min_area, 3 * width, 3 * height), area
    return kept, dropped


@pytest.mark.parametrize("transform", TRANSFORMS, ids=lambda t: ",".join(
    f"{k}={v}" for k, v in t.items()) or "resize")
def test_boxes_cover_their_objects_after_every_transform(photos, transform):
    options = tk.DecodeOptions(image_size=SIZE, **transform)
    records = []
    for epoch in range(2):
        loader = tk.load_numpy_dataset(photos, batch_size=8, sampling=tk.InOrder(),
                                       options=options, seed=3)
        loader.set_epoch(epoch)
        records += _records(loader)
    kept, dropped = _assert_boxes_cover(records, SIZE)
    assert kept > 20
    if transform.get("crop_scale"):
        assert dropped > 5  # the small windows cut objects out: their boxes went with them


def test_flip_mirrors_the_boxes(photos):
    plain = _records(tk.load_numpy_dataset(photos, batch_size=24, sampling=tk.InOrder(),
                                           image_size=SIZE))
    flipped = _records(tk.load_numpy_dataset(photos, batch_size=24, sampling=tk.InOrder(),
                                             options=tk.DecodeOptions(image_size=SIZE,
                                                                      flip=True)))
    mirrored = 0
    for (a_pixels, a_boxes, a_labels), (b_pixels, b_boxes, b_labels) in zip(
            plain, flipped, strict=True):
        assert (a_labels == b_labels).all()
        if (a_pixels == b_pixels).all():
            assert (a_boxes == b_boxes).all()
        else:
            assert (a_pixels[:, ::-1] == b_pixels).all()
            mirror = np.stack([1 - a_boxes[:, 2], a_boxes[:, 1], 1 - a_boxes[:, 0],
                               a_boxes[:, 3]], axis=1)
            np.testing.assert_allclose(b_boxes, mirror, atol=1e-6)
            mirrored += 1
    assert 4 < mirrored < 20


def test_stored_boxes_are_unchanged_without_a_transform(photos):
    """No image_size: nothing moves, values as stored (a plain resize moves nothing either:
    boxes are fractions of the image)."""
    stored = next(iter(tk.load_numpy_dataset(photos, batch_size=24, sampling=tk.InOrder())))
    resized = next(iter(tk.load_numpy_dataset(photos, batch_size=24, sampling=tk.InOrder(),
                                              image_size=SIZE)))
    for part in ("boxes", "labels"):
        for key in ("values", "lengths"):
            a, b = stored["image/object"][part][key], resized["image/object"][part][key]
            assert a.shape == b.shape and (a == b).all()


def test_the_drop_rule_is_in_output_pixels(photos):
    """A larger minimum drops more; the kept boxes each meet it."""
    counts = []
    for min_size in (1.0, 6.0):
        options = tk.DecodeOptions(image_size=SIZE, crop="random", crop_scale=(0.05, 0.5),
                                   box_min_size=min_size, box_min_area=min_size ** 2)
        records = _records(tk.load_numpy_dataset(photos, batch_size=8, sampling=tk.InOrder(),
                                                 options=options))
        boxes = np.concatenate([r[1] for r in records])
        assert ((boxes[:, 2] - boxes[:, 0]) * SIZE[1] >= min_size).all()
        assert ((boxes[:, 3] - boxes[:, 1]) * SIZE[0] >= min_size).all()
        counts.append(len(boxes))
    assert counts[1] < counts[0]


@pytest.mark.parametrize("bad", [-1, float("nan"), "1", True, float("inf")])
def test_the_drop_rule_takes_pixels(bad):
    with pytest.raises(OptionError, match="box_min_size"):
        tk.DecodeOptions(box_min_size=bad)


def test_boxes_of_one_of_several_images_is_refused_when_unclear(tmp_path):
    rng = np.random.default_rng(0)
    data, objects = _photo(rng)
    schema = tk.Schema({"left": tk.Image("png"), "right": tk.Image("png"),
                        "objects": tk.Boxes()})
    tk.write_dataset([{"left": data, "right": data, "objects": objects}], tmp_path / "ds",
                     schema, progress=False)
    flip = tk.DecodeOptions(image_size=8, flip=True)
    with pytest.raises(DatasetError, match=r"'objects' follow their image.*'left', 'right'"):
        tk.load_numpy_dataset(tmp_path / "ds", batch_size=1, options=flip)
    # Read with one of them, or only resized (boxes are fractions: nothing moves), clear.
    assert next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=1, image_size=8)))
    one = tk.DecodeOptions(image_size=8, flip=True, features=("left", "objects"))
    assert next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=1, options=one)))
    assert next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=1)))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 300), st.integers(1, 300), st.data())
def test_place_boxes_is_the_pixel_map(height, width, data):
    """A box's corners land where the transform sends those pixel positions: crop offset,
    scale to the output (or the letterbox's window), mirror; clipped after a crop only."""
    top = data.draw(st.integers(0, height - 1))
    left = data.draw(st.integers(0, width - 1))
    win_h = data.draw(st.integers(1, height - top))
    win_w = data.draw(st.integers(1, width - left))
    size = (data.draw(st.integers(1, 64)), data.draw(st.integers(1, 64)))
    flip, cropped = data.draw(st.booleans()), data.draw(st.booleans())
    pad = None
    if data.draw(st.booleans()):
        pad_h = data.draw(st.integers(1, size[0]))
        pad_w = data.draw(st.integers(1, size[1]))
        pad = (data.draw(st.integers(0, size[0] - pad_h)),
               data.draw(st.integers(0, size[1] - pad_w)), pad_h, pad_w)
    corners = np.array(data.draw(st.lists(st.tuples(*[st.floats(0, 1, width=32)] * 4),
                                          min_size=0, max_size=6)), np.float32).reshape(-1, 4)
    corners = np.concatenate([np.minimum(corners[:, :2], corners[:, 2:]),
                              np.maximum(corners[:, :2], corners[:, 2:])], axis=1)
    labels = np.arange(len(corners))
    placement = Placement(height, width, (top, left, win_h, win_w), size, pad, flip, cropped)
    boxes, kept = place_boxes(corners, labels, placement)
    assert boxes.dtype == np.float32 and len(boxes) == len(kept)
    out_h, out_w = size
    for box, i in zip(boxes.tolist(), kept.tolist(), strict=True):
        x0, y0, x1, y1 = corners[i].astype(np.float64).tolist()
        xs = [(x * width - left) / win_w for x in (x0, x1)]
        ys = [(y * height - top) / win_h for y in (y0, y1)]
        if cropped:
            xs, ys = [min(max(x, 0.0), 1.0) for x in xs], [min(max(y, 0.0), 1.0) for y in ys]
        if pad is not None:
            xs = [(pad[1] + x * pad[3]) / out_w for x in xs]
            ys = [(pad[0] + y * pad[2]) / out_h for y in ys]
        if flip:
            xs = [1 - xs[1], 1 - xs[0]]
        np.testing.assert_allclose(box, [xs[0], ys[0], xs[1], ys[1]], rtol=1e-6, atol=1e-6)
        if cropped:
            assert (xs[1] - xs[0]) * out_w >= 1 and (ys[1] - ys[0]) * out_h >= 1
    if not cropped:
        assert len(kept) == len(corners)  # moves drop nothing


def _plain(value):
    """A batch (or a part of one) as NumPy arrays, from any reader's tensors."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


@pytest.mark.integration
def test_every_reader_moves_boxes_alike(photos):
    """The same boxes, labels and pixels from NumPy, PyTorch, grain and tf.data for every
    transform (tf.data computes them in-graph)."""
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from tfrecordkit.readers.torch_data import load_torch_dataset

    for transform in TRANSFORMS:
        options = tk.DecodeOptions(image_size=SIZE, **transform)
        common = {"batch_size": 8, "sampling": tk.InOrder(), "options": options, "seed": 7}
        got = {
            "numpy": list(tk.load_numpy_dataset(photos, **common)),
            "tf.data": list(tk.load_tf_dataset(photos, **common)),
            "torch": list(load_torch_dataset(photos, **common)),
        }
        source = tk.load_grain_source(photos, options=options, seed=7)
        got["grain"] = [source.collate([source[i] for i in range(s, s + 8)])
                        for s in range(0, len(source), 8)]
        want = [_plain(b) for b in got.pop("numpy")]
        for reader, batches in got.items():
            assert len(batches) == len(want), reader
            for a, got_batch in zip(want, batches, strict=True):
                b = _plain(got_batch)
                assert (a["image"] == b["image"]).all(), (reader, transform)
                for part in ("boxes", "labels"):
                    for k in ("values", "lengths"):
                        x, y = a["image/object"][part][k], b["image/object"][part][k]
                        assert x.dtype == y.dtype and x.shape == y.shape, (reader, transform)
                        assert x.tobytes() == y.tobytes(), (reader, transform, part, k)


@pytest.mark.integration
def test_tf_helpers_move_boxes_with_the_image(photos):
    """tf.data's random_flip / random_crop helpers draw from TensorFlow's RNG: the boxes of
    the example follow that draw (pixels checked as above)."""
    pytest.importorskip("tensorflow")
    crop = (24, 24)
    for augment, size in (([tk.random_flip(seed=1)], SIZE),
                          ([tk.random_crop(crop, seed=2), tk.random_flip(seed=3)], crop)):
        options = tk.DecodeOptions(image_size=SIZE, augment=augment)
        batches = [{k: (v.numpy() if hasattr(v, "numpy") else
                        {p: {q: w.numpy() for q, w in d.items()} for p, d in v.items()})
                    for k, v in b.items()}
                   for b in tk.load_tf_dataset(photos, batch_size=8, sampling=tk.InOrder(),
                                               options=options)]
        kept, _ = _assert_boxes_cover(_records(batches), size)
        assert kept > 10


@pytest.fixture(scope="module")
def photos_with_fields(tmp_path_factory):
    """The photos of ``photos``, each object also carrying per-object fields that name it:
    ``id`` its position among the record's objects, ``area`` and ``is_crowd`` from it."""
    rng = np.random.default_rng(5)
    rows = []
    for _ in range(24):
        data, objects = _photo(rng)
        n = len(objects["labels"])
        objects.update(id=list(range(n)), area=[10.0 * k + 0.5 for k in range(n)],
                       is_crowd=[k % 2 for k in range(n)])
        rows.append({"image": data, "image/object": objects})
    fields = {"id": "int64", "area": "float32", "is_crowd": "int64"}
    schema = tk.Schema({"image": tk.Image("png", channels=3),
                        "image/object": tk.Boxes(["red", "green", "blue"], ids=[5, 2, 9],
                                                 fields=fields)})
    path = tmp_path_factory.mktemp("fields") / "ds"
    tk.write_dataset(rows, path, schema, shards=tk.ShardOptions(num_shards=2), progress=False)
    return path


def _objects(batch, part, k):
    values = batch["image/object"][part]
    return np.asarray(values["values"])[k, :int(np.asarray(values["lengths"])[k, 0])]


def test_per_object_fields_follow_their_boxes_through_every_transform(photos,
                                                                      photos_with_fields):
    """A crop that drops a box drops its fields' row with it (the rule torchvision's
    SanitizeBoundingBoxes applies to every key its labels_getter returns): the boxes and
    labels equal those of the same photos without fields, and each kept object's fields are
    its own."""
    kept = {}
    for n, transform in enumerate(TRANSFORMS):
        options = tk.DecodeOptions(image_size=SIZE, **transform)
        common = {"batch_size": 8, "sampling": tk.InOrder(), "options": options, "seed": 7}
        plain = list(tk.load_numpy_dataset(photos, **common))
        with_fields = list(tk.load_numpy_dataset(photos_with_fields, **common))
        kept[n] = 0
        for a, b in zip(plain, with_fields, strict=True):
            for k in range(len(a["image"])):
                for part in ("boxes", "labels"):
                    assert _objects(a, part, k).tobytes() == _objects(b, part, k).tobytes()
                ids = _objects(b, "id", k)
                assert (_objects(b, "labels", k) == ids).all()  # object k has label k
                assert (_objects(b, "area", k) == 10.0 * ids + 0.5).all()
                assert (_objects(b, "is_crowd", k) == ids % 2).all()
                kept[n] += ids.size
        assert with_fields[0]["image/object"]["area"]["values"].dtype == np.float32
    assert kept[1] < kept[len(TRANSFORMS) - 1]  # the small windows dropped objects
    manifest = json.loads((photos_with_fields / "dataset.json").read_text())
    assert manifest["format_version"] == 9


@pytest.mark.integration
def test_every_reader_gives_the_same_per_object_fields(photos_with_fields):
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    from tfrecordkit.readers.torch_data import load_torch_dataset

    for transform in ({"crop": "random", "crop_scale": (0.05, 0.3), "flip": True}, {}):
        options = tk.DecodeOptions(image_size=SIZE, **transform)
        common = {"batch_size": 8, "sampling": tk.InOrder(), "options": options, "seed": 7}
        want = [_plain(b) for b in tk.load_numpy_dataset(photos_with_fields, **common)]
        source = tk.load_grain_source(photos_with_fields, options=options, seed=7)
        got = {"tf.data": list(tk.load_tf_dataset(photos_with_fields, **common)),
               "torch": list(load_torch_dataset(photos_with_fields, **common)),
               "grain": [source.collate([source[i] for i in range(s, s + 8)])
                         for s in range(0, len(source), 8)]}
        for reader, batches in got.items():
            for a, got_batch in zip(want, batches, strict=True):
                b = _plain(got_batch)
                for part in ("boxes", "labels", "id", "area", "is_crowd"):
                    for k in ("values", "lengths"):
                        x, y = a["image/object"][part][k], b["image/object"][part][k]
                        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), (
                            reader, transform, part, k)
