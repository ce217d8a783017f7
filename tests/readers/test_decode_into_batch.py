"""Images of one known shape are decoded straight into the batch's array: the pixels are those
of a plain decode, an image of another shape than the schema's is refused naming its record
(as tf.data's ensure_shape refuses it), and nothing of an earlier decode shows through."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_image, photos
from tfrecordkit import SchemaError
from tfrecordkit.codecs import decode_image_bytes
from tfrecordkit.readers import DecodeOptions
from tfrecordkit.readers._decoding import RecordDecoder


def _images() -> dict[str, bytes]:
    shots = photos()
    rgb, grey = shots["astronaut"][:40, :48], shots["camera"][:40, :48]
    return {"jpeg": encode_image(rgb, "JPEG"), "grey_jpeg": encode_image(grey, "JPEG"),
            "png": encode_image(rgb, "PNG"), "grey_png": encode_image(grey, "PNG")}


@pytest.mark.parametrize("name", ["jpeg", "grey_jpeg", "png", "grey_png"])
@pytest.mark.parametrize("channels", [None, 1, 3, 4])
@pytest.mark.parametrize("min_size", [None, (10, 12), (20, 20)])
def test_decoding_into_an_array_gives_the_pixels_of_a_plain_decode(name, channels, min_size):
    data = _images()[name]
    plain = decode_image_bytes(data, channels, min_size=min_size)
    out = np.full(plain.shape, 7, np.uint8)
    got = decode_image_bytes(data, channels, min_size=min_size, out=out)
    assert got is out
    assert np.array_equal(out, plain)
    # Another shape: a new array, the given one untouched.
    wrong = np.full((plain.shape[0] + 1, *plain.shape[1:]), 7, np.uint8)
    got = decode_image_bytes(data, channels, min_size=min_size, out=wrong)
    assert got is not wrong
    assert np.array_equal(got, plain)
    assert (wrong == 7).all()


def _records(sizes: list[tuple[int, int]]) -> list[bytes]:
    image = photos()["astronaut"]
    loose = tk.Schema({"image": tk.Image("jpeg", channels=3)})
    return [loose.encode({"image": encode_image(image[:h, :w], "JPEG")}) for h, w in sizes]


def _decoder(size: tuple[int, int]) -> RecordDecoder:
    return RecordDecoder(tk.Schema({"image": tk.Image("jpeg", channels=3, size=size)}),
                         DecodeOptions())


def test_a_batch_of_the_schemas_size_is_one_array_of_plain_pixels():
    records = _records([(16, 20)] * 70)
    decoder = _decoder((16, 20))
    with ThreadPoolExecutor(2) as pool:
        batch = decoder.decode_batch(records, lambda i: i, pool)
    image = batch["image"]
    assert image.shape == (70, 16, 20, 3) and image.flags.c_contiguous
    loose = tk.Schema({"image": tk.Image("jpeg", channels=3)})
    for k, record in enumerate(records):
        assert np.array_equal(image[k], loose.decode(record)["image"])
    # The pixels land in the rows given: the feature's value is those very rows.
    rows = decoder.batch_arrays(70)["image"]
    assert decoder.decode_columns(records, lambda i: i, into={"image": rows})["image"] is rows
    assert np.array_equal(rows, image)


def test_an_image_of_another_size_than_the_schema_says_is_refused_naming_its_record():
    """A record the schema's size does not describe (another tool wrote it), in a batch of
    ones it does or on its own: refused naming the record, as tf.data refuses it."""
    records = _records([(16, 20)] * 40 + [(16, 24)] + [(16, 20)] * 5)
    decoder = _decoder((16, 20))
    where = [f"record {i}" for i in range(len(records))]
    with ThreadPoolExecutor(2) as pool, pytest.raises(
            SchemaError, match=r"record 40.*16x24x3 image; the schema's size and channels "
                               r"say 16x20x3"):
        decoder.decode_batch(records, where.__getitem__, pool)
    with pytest.raises(SchemaError, match="16x24x3 image"):
        decoder.decode_one(records[40], "odd")
    # Resized on reading, any size is taken (tf.data resizes it too).
    resized = RecordDecoder(_decoder((16, 20)).schema, DecodeOptions(image_size=(8, 8)))
    assert resized.decode_one(records[40])["image"].shape == (8, 8, 3)


@pytest.mark.integration
def test_numpy_and_tf_data_refuse_an_image_of_another_size_than_the_manifest_says(tmp_path):
    """A manifest whose schema says another size than the images have (edited, or written
    by another tool): neither reader hands over pixels of a shape the layout does not
    promise."""
    pytest.importorskip("tensorflow")
    image = photos()["astronaut"]
    rows = [{"image": encode_image(image[:16, :20], "JPEG")} for _ in range(8)]
    out = tmp_path / "ds"
    tk.write_dataset(rows, out, tk.Schema({"image": tk.Image("jpeg", channels=3)}),
                     shards=tk.ShardOptions(shuffle=False))
    manifest = json.loads((out / "dataset.json").read_text())
    assert manifest["schema"]["features"]["image"]["size"] == [16, 20]
    manifest["schema"]["features"]["image"]["size"] = [16, 24]
    (out / "dataset.json").write_text(json.dumps(manifest))
    # TensorFlow's ensure_shape refuses it; met in Python, the TF-free reader names it.
    with pytest.raises(SchemaError, match=r"(?s)16x20x3 image.*\[16,20,3\].*\[16,24,3\]"):
        next(iter(tk.load_tf_dataset(out, batch_size=4, sampling=tk.InOrder())))
    with pytest.raises(SchemaError, match=r"record 0 .*16x20x3 image.*16x24x3"):
        next(iter(tk.load_numpy_dataset(out, batch_size=4, sampling=tk.InOrder())))


def test_a_loader_reuses_no_pixels_between_batches(tmp_path):
    """Every batch is a new array: batches kept by the caller keep their pixels."""
    image = photos()["astronaut"]
    rows = [{"image": encode_image(np.roll(image[:16, :16], i, axis=1), "JPEG")}
            for i in range(40)]
    tk.write_dataset(rows, tmp_path / "ds", tk.Schema({"image": tk.Image("jpeg", channels=3)}),
                     shards=tk.ShardOptions(shuffle=False))
    assert tk.load_manifest(tmp_path / "ds").schema["image"].size == (16, 16)
    kept = list(tk.load_numpy_dataset(tmp_path / "ds", batch_size=8, sampling=tk.InOrder()))
    assert len({id(b["image"]) for b in kept}) == len(kept) == 5
    for b in kept:
        for i, image_id in enumerate(b["__id"]):
            assert np.array_equal(b["image"][i], decode_image_bytes(rows[image_id]["image"], 3))


@pytest.mark.parametrize("damage", ["truncated", "garbled"])
def test_a_damaged_jpeg_in_a_batch_decoded_in_place_is_refused_naming_its_record(damage):
    """A JPEG cut short or with bytes overwritten, among good ones decoded into the batch's
    array: the batch is refused naming that record (never part-written pixels), as decoding
    the record alone refuses it."""
    records = _records([(16, 20)] * 40)
    image = photos()["astronaut"]
    good = encode_image(image[:16, :20], "JPEG")
    bad = (good[: len(good) // 2] if damage == "truncated"
           else good[:200] + bytes(range(256))[: len(good) - 400] + good[-200:])
    loose = tk.Schema({"image": tk.Image("jpeg", channels=3)})
    records[33] = loose.encode({"image": bad})
    decoder = _decoder((16, 20))
    where = [f"record {i}" for i in range(len(records))]
    with ThreadPoolExecutor(2) as pool, pytest.raises(SchemaError, match="record 33"):
        decoder.decode_batch(records, where.__getitem__, pool)
    with pytest.raises(SchemaError, match="cannot decode"):
        decoder.decode_one(records[33], "alone")


def _varying(tmp_path):
    """A dataset of JPEGs of several sizes (padded batches), in stored order."""
    image = photos()["astronaut"]
    schema = tk.Schema({"image": tk.Image("jpeg", channels=3)})
    sizes = [(20 + (i * 7) % 23, 18 + (i * 5) % 29) for i in range(96)]
    rows = [{"image": {"bytes": encode_image(image[:h, :w], "JPEG"), "height": h, "width": w,
                       "channels": 3}} for h, w in sizes]
    tk.write_dataset(rows, tmp_path / "ds", schema, shards=tk.ShardOptions(shuffle=False),
                     progress=False)
    return tmp_path / "ds", [decode_image_bytes(r["image"]["bytes"], 3) for r in rows]


def test_varying_images_are_padded_in_place_with_zeros_around_each(tmp_path):
    path, plain = _varying(tmp_path)
    for batch in tk.load_numpy_dataset(path, batch_size=16, sampling=tk.InOrder()):
        values, lengths = batch["image"]["values"], batch["image"]["lengths"]
        for i, record in enumerate(batch["__id"].tolist()):
            h, w = lengths[i]
            assert np.array_equal(values[i, :h, :w], plain[record])
            assert not values[i, h:].any() and not values[i, :, w:].any()


@pytest.mark.parametrize("resized", [False, True])
def test_batches_kept_by_the_user_are_never_written_again(tmp_path, resized):
    """Batch memory is reused only once nothing outside the loader refers to it: batches
    and views of them keep their values while iteration goes on (padded batches and resized
    ones alike)."""
    path, _ = _varying(tmp_path)
    loader = tk.load_numpy_dataset(path, batch_size=16, sampling=tk.InOrder(),
                                   image_size=(12, 14) if resized else None)
    kept, copies, views = [], [], []
    for epoch in range(3):
        loader.set_epoch(epoch)
        for step, batch in enumerate(loader):
            values = batch["image"] if resized else batch["image"]["values"]
            if epoch == 0 and step % 2 == 0:
                kept.append(batch)  # the whole batch
                copies.append(values.copy())
            elif epoch == 0 and step == 1:
                views.append((values[3:5], values[3:5].copy()))  # a view only
    for batch, copy in zip(kept, copies, strict=True):
        values = batch["image"] if resized else batch["image"]["values"]
        assert np.array_equal(values, copy)
    for view, copy in views:
        assert np.array_equal(view, copy)


def test_stored_sizes_larger_than_the_images_pad_as_every_reader_pads(tmp_path):
    """Stored dimensions are a claim: larger ones than the pixels must not make the padded
    batch larger than the images need (tf.data pads to the largest image)."""
    image = photos()["astronaut"][:20, :24]
    schema = tk.Schema({"image": tk.Image("jpeg", channels=3)})
    rows = [{"image": {"bytes": encode_image(image, "JPEG"), "height": 40 - i, "width": 50,
                       "channels": 3}} for i in range(4)]
    tk.write_dataset(rows, tmp_path / "ds", schema, progress=False)
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=4)))
    assert batch["image"]["values"].shape == (4, 20, 24, 3)
    assert batch["image"]["lengths"].tolist() == [[20, 24]] * 4


def test_a_hostile_stored_size_allocates_nothing_on_trust(tmp_path):
    """A record claiming 10^6 x 10^6 pixels must not make the loader allocate for it: the
    batch pads to what the images hold."""
    image = photos()["astronaut"][:20, :24]
    schema = tk.Schema({"image": tk.Image("jpeg", channels=3)})
    rows = [{"image": {"bytes": encode_image(image[: 20 - i], "JPEG"), "height": 20 - i,
                       "width": 24, "channels": 3}} for i in range(4)]
    tk.write_dataset(rows, tmp_path / "ds", schema, shards=tk.ShardOptions(shuffle=False),
                     progress=False)
    (shard,) = (tmp_path / "ds").glob("*.tfrecord")
    # Written by another tool (our writer refuses such a claim).
    lie = tk.encode_example({"image": [encode_image(image, "JPEG")], "image/height": [10**6],
                             "image/width": [10**6], "image/channels": [3]})
    with tk.RecordWriter(tmp_path / "lie.tfrecord") as writer:
        for record in [*tk.read_records(shard), lie]:
            writer.write(record)
    loader = tk.load_numpy_dataset(str(tmp_path / "lie.tfrecord"), batch_size=5,
                                   sampling=tk.InOrder(), read=tk.ReadOptions(schema=schema))
    batch = next(iter(loader))
    assert batch["image"]["values"].shape == (5, 20, 24, 3)
    assert batch["image"]["lengths"].tolist()[-1] == [20, 24]
