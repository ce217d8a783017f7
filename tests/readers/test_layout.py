"""The batch layout: what each feature looks like in a batch, decided once from the schema and
the decode options (every reader follows it; test_readers_agree.py checks they do)."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit.readers import BatchLayout
from tfrecordkit.readers._decoding import batch_feature, record_values, unbatch_values

SCHEMA = tk.Schema({
    "image": tk.Image("png", channels=3), "sized": tk.Image("png", channels=1, size=(4, 5)),
    "open": tk.Image("png"), "v": tk.Tensor((None, 3), "int16"), "fixed": tk.Tensor((2,)),
    "seq": tk.Sequence(tk.Scalar("int64")), "words": tk.Sequence(tk.Text()),
    "text": tk.Text(), "tok": tk.Text(token_ids=True), "audio": tk.Audio("pcm"),
    "label": tk.ClassLabel(["a", "b"]), "x": tk.Scalar("float32"), "b": tk.Scalar("string"),
})


def test_each_kind_has_its_shape_and_varying_dimensions():
    layout = BatchLayout.of(SCHEMA, tk.DecodeOptions())
    got = {n: (f.kind, f.shape, f.length_axes, f.open_axes) for n, f in layout.features.items()}
    assert got == {
        "image": ("image", (None, None, 3), (0, 1), ()),
        "sized": ("image", (4, 5, 1), (), ()),
        "open": ("image", (None, None, None), (0, 1), (2,)),  # channels must agree
        "v": ("numbers", (None, 3), (0,), ()),
        "fixed": ("numbers", (2,), (), ()),
        "seq": ("numbers", (None,), (0,), ()),
        "words": ("text", (None,), (0,), ()),
        "text": ("text", (), (), ()),
        "tok": ("tokens", (None,), (), ()),
        "audio": ("audio", (None, None), (0,), (1,)),
        "label": ("numbers", (), (), ()),
        "x": ("numbers", (), (), ()),
        "b": ("bytes", (), (), ()),
    }
    assert layout["x"].dtype == np.float32 and layout["label"].dtype == np.int64
    assert layout["v"].dtype == np.int16 and layout["b"].dtype is None


def test_options_change_the_layout_not_the_readers():
    options = tk.DecodeOptions(image_size=(8, 8), image_dtype="float32", text_length=4,
                               padded_shapes={"fixed": (5,), "v": (7, 3)},
                               padding_values={"v": -1})
    layout = BatchLayout.of(SCHEMA, options)
    assert layout["image"].shape == (8, 8, 3) and not layout["image"].varies
    assert layout["image"].dtype == np.float32
    assert layout["fixed"].length_axes == (0,)  # padded to a larger shape: it reports lengths
    assert layout["v"].padded_shape == (7, 3) and layout["v"].fill == -1
    assert layout["tok"].cut_to == 4


def test_bad_options_are_refused_naming_the_feature():
    with pytest.raises(tk.DatasetError, match=r"unknown features \['nope'\]"):
        BatchLayout.of(SCHEMA, tk.DecodeOptions(features=("nope",)))
    with pytest.raises(ValueError, match=r"padded_shapes\['v'\] = \(7,\) has 1 dimension"):
        BatchLayout.of(SCHEMA, tk.DecodeOptions(padded_shapes={"v": (7,)}))
    with pytest.raises(ValueError, match="strings pad to the batch's longest only"):
        BatchLayout.of(SCHEMA, tk.DecodeOptions(padded_shapes={"words": (3,)}))
    with pytest.raises(tk.DatasetError, match=r"none of .* is an image"):
        BatchLayout.of(SCHEMA, tk.DecodeOptions(features=("x",), image_size=(4, 4)))


def test_varying_values_batch_with_lengths_and_come_back_per_record():
    layout = BatchLayout.of(SCHEMA, tk.DecodeOptions())["v"]
    values = [np.ones((n, 3), np.int16) * n for n in (2, 0, 3)]
    batch = batch_feature(layout, values, "pad")
    assert batch["values"].shape == (3, 3, 3) and batch["lengths"].tolist() == [[2], [0], [3]]
    assert batch_feature(layout, values, "ragged")[2].shape == (3, 3)
    one = record_values(layout, values[0], "pad")
    assert one["values"].shape == (2, 3) and one["lengths"].tolist() == [2]
    assert np.array_equal(unbatch_values(layout, one), values[0])


def test_open_channels_that_differ_in_a_batch_are_refused_not_zero_filled():
    layout = BatchLayout.of(SCHEMA, tk.DecodeOptions())["open"]
    grey, colour = np.zeros((4, 4, 1), np.uint8), np.zeros((4, 5, 3), np.uint8)
    with pytest.raises(ValueError, match=r"different channel counts \(\[1, 3\]\)"):
        batch_feature(layout, [grey, colour], "pad")
    assert [a.shape for a in batch_feature(layout, [grey, colour], "ragged")] == [
        (4, 4, 1), (4, 5, 3)]


def test_sequences_of_strings_pad_into_object_arrays():
    layout = BatchLayout.of(SCHEMA, tk.DecodeOptions())["words"]
    batch = batch_feature(layout, [["a", "b"], []], "pad")
    assert batch["values"].tolist() == [["a", "b"], ["", ""]]
    assert batch["lengths"].tolist() == [[2], [0]]


def test_ragged_batches_list_every_feature_with_an_open_dimension():
    layout = BatchLayout.of(SCHEMA, tk.DecodeOptions(image_size=(8, 8), padding="ragged"))
    assert layout["open"].ragged and not layout["open"].varies  # channels open, size fixed
    assert not layout["image"].ragged and layout["audio"].ragged and layout["v"].ragged
    grey, colour = np.zeros((8, 8, 1), np.uint8), np.zeros((8, 8, 3), np.uint8)
    listed = batch_feature(layout["open"], [grey, colour], "ragged")
    assert [a.shape for a in listed] == [(8, 8, 1), (8, 8, 3)]
