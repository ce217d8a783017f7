"""Images of one known shape are decoded straight into the batch's array: the pixels are those
of a plain decode, every image that does not fit its row falls back to the list path (and its
errors), and nothing of an earlier decode shows through."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_image, photos
from tfrecordkit import SchemaError
from tfrecordkit.readers import DecodeOptions
from tfrecordkit.readers._decoding import RecordDecoder
from tfrecordkit.schema import decode_image_bytes


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
    with ThreadPoolExecutor(2) as pool:
        batch = _decoder((16, 20)).decode_batch(records, lambda i: i, pool)
    image = batch["image"]
    assert image.shape == (70, 16, 20, 3) and image.flags.c_contiguous
    loose = tk.Schema({"image": tk.Image("jpeg", channels=3)})
    for k, record in enumerate(records):
        assert np.array_equal(image[k], loose.decode(record)["image"])


def test_an_image_of_another_size_than_the_schema_says_is_refused_as_before():
    """A record the schema's size does not describe (another tool wrote it) in a batch of
    ones it does: the batch is refused naming the shapes, as it was before images were
    decoded in place; on its own the record decodes to its own pixels."""
    records = _records([(16, 20)] * 40 + [(16, 24)] + [(16, 20)] * 5)
    decoder = _decoder((16, 20))
    with ThreadPoolExecutor(2) as pool, pytest.raises(SchemaError, match="different shapes"):
        decoder.decode_batch(records, lambda i: i, pool)
    assert decoder.decode_one(records[40])["image"].shape == (16, 24, 3)


def test_a_loader_reuses_no_pixels_between_batches(tmp_path):
    """Every batch is a new array: batches kept by the caller keep their pixels."""
    image = photos()["astronaut"]
    rows = [{"image": encode_image(np.roll(image[:16, :16], i, axis=1), "JPEG")}
            for i in range(40)]
    tk.write_dataset(rows, tmp_path / "ds", tk.Schema({"image": tk.Image("jpeg", channels=3)}),
                     shards=tk.ShardOptions(shuffle=False))
    assert tk.load_manifest(tmp_path / "ds").schema["image"].size == (16, 16)
    kept = list(tk.load_numpy_dataset(tmp_path / "ds", batch_size=8, shuffle=False))
    assert len({id(b["image"]) for b in kept}) == len(kept) == 5
    for b in kept:
        for i, image_id in enumerate(b["__id"]):
            assert np.array_equal(b["image"][i], decode_image_bytes(rows[image_id]["image"], 3))
