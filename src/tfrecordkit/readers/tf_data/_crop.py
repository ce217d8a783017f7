"""The ImageNet recipe in tf.data with the TF-free readers' pixels: each record is tagged, as it
is read, with its epoch and its id in the split; crop windows and flips come from the library's
pure functions of (seed, epoch, record id) (``tfrecordkit.sampling``), fed to the graph as data;
the window is cut from the full accurate-DCT decode and resized with the readers' arithmetic."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from tfrecordkit.readers._decoding import DecodeOptions
from tfrecordkit.readers.tf_data._graph import graph_only
from tfrecordkit.sampling import center_crop_box, crop_draws, random_crop_box

__all__ = ["CROP_KEY", "EpochCounter", "crop_window", "keyed", "tag_records"]

#: The reserved Example key the tag travels under: ``b"<epoch>,<record id>"``.
CROP_KEY = "__crop_key"
_BYTE = tf.constant([bytes([i]) for i in range(128)])


def keyed(options: DecodeOptions) -> bool:
    """Whether images need each record's (epoch, id): random crops or flips."""
    return options.decode and options.image_size is not None and (
        options.crop == "random" or options.flip)


class EpochCounter:
    """Counts iterations of a dataset: :meth:`starting` goes before the files of an epoch (it
    yields nothing and adds one each time it is iterated, so a dataset iterated again, or
    repeated, is in its next epoch), :meth:`value` reads the count where records are read."""

    def __init__(self) -> None:
        self._count = tf.Variable(-1, dtype=tf.int64, trainable=False)

    def starting(self, files: Any) -> Any:
        """``files`` (a dataset) with the count advanced before its first element."""
        advance = tf.data.Dataset.range(1).map(graph_only(lambda _: self._count.assign_add(1)))
        spec = files.element_spec
        empty = advance.filter(graph_only(lambda _: False)).map(graph_only(
            lambda _: tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype), spec)))
        return empty.concatenate(files)

    def value(self) -> Any:
        return self._count.read_value()


def _byte(n: Any) -> Any:
    """The one-byte varint of a length below 128."""
    return tf.gather(_BYTE, n)


def _wrap(field: bytes, payload: Any) -> Any:
    """``field`` then the payload's length then the payload (every length here < 128)."""
    return tf.strings.join([tf.fill(tf.shape(payload), field),
                            _byte(tf.strings.length(payload)), payload])


def tag_records(records: Any, epoch: Any, ids: Any) -> Any:
    """Serialized Examples (a vector) with a ``CROP_KEY`` bytes feature appended, holding
    ``"<epoch>,<id>"``: concatenated Example messages merge, so the parser reads it as a key
    of the record."""
    text = tf.strings.join([tf.strings.as_string(tf.fill(tf.shape(ids), epoch)),
                            tf.strings.as_string(ids)], separator=",")
    feature = _wrap(b"\x0a", _wrap(b"\x0a", text))  # Feature{bytes_list{value}}
    key = tf.fill(tf.shape(ids), CROP_KEY)
    entry = tf.strings.join([_wrap(b"\x0a", key), _wrap(b"\x12", feature)])
    return tf.strings.join([records, _wrap(b"\x0a", _wrap(b"\x0a", entry))])


def _window(height: Any, width: Any, key: Any, seed: int,
            options: DecodeOptions) -> np.ndarray:
    """``top, left, height, width, flip`` of one record, by the library's functions (those
    the TF-free readers call)."""
    epoch, record = (0, 0)
    if key:
        epoch, record = (int(v) for v in bytes(key).split(b","))
    draws = crop_draws(seed, epoch, np.array([record], np.int64))[0].tolist()
    h, w = int(height), int(width)
    if options.crop == "random":
        box = random_crop_box(h, w, draws, scale=options.crop_scale, ratio=options.crop_ratio,
                              flip=options.flip)
    else:
        assert options.image_size is not None
        box = (center_crop_box(h, w, options.image_size, options.crop_fraction)
               if options.crop == "center" else (0, 0, h, w, 0))
        box = (*box[:4], int(options.flip and draws[-1] < 0.5))
    return np.array(box, np.int64)


def crop_window(image: Any, key: Any, seed: int, options: DecodeOptions
                ) -> tuple[Any, Any, Any]:
    """``image`` (``[h, w, c]`` uint8) cut to the record's window, whether to flip it, and
    the window (``[4]`` int64: top, left, height, width)."""
    shape = tf.shape(image)
    box = tf.numpy_function(lambda h, w, k: _window(h, w, k, seed, options),
                            [shape[0], shape[1], key], tf.int64, stateful=False)
    box.set_shape([5])
    window = image[box[0] : box[0] + box[2], box[1] : box[1] + box[3]]
    return window, tf.cast(box[4], tf.bool), box[:4]
