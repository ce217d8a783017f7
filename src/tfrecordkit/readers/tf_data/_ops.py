"""In-graph twins of the codecs: parsing specs from a schema, image/audio/tensor/text decoding
as TensorFlow ops, pixel for pixel as the NumPy readers decode."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from collections.abc import Sequence as Names
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from tfrecordkit._constants import LUMA_SHIFT, LUMA_WEIGHTS
from tfrecordkit.codecs import load_soundfile, resample_audio
from tfrecordkit.readers._decoding import DecodeOptions
from tfrecordkit.readers.tf_data._crop import CROP_KEY, crop_window, jpeg_windows, window_of
from tfrecordkit.readers.tf_data._exit import exit_safe
from tfrecordkit.readers.tf_data._placement import TFPlacement, pad_window_tf, place_boxes_tf
from tfrecordkit.schema import (
    BOX_CORNERS,
    Audio,
    Boxes,
    Feature,
    Image,
    KeySpec,
    Scalar,
    Schema,
    Tensor,
    Text,
)

__all__ = ["AUTOTUNE", "TF_COMPRESSION", "Example", "decode_audio", "decode_boxes",
           "decode_image", "decode_image_tensor", "decode_scalar", "decode_tensor", "decode_text",
           "feature_description", "finish_image"]

AUTOTUNE = tf.data.AUTOTUNE
#: A plan's compression as ``TFRecordDataset``'s ``compression_type`` names it.
TF_COMPRESSION = {"gzip": "GZIP", "zlib": "ZLIB", None: ""}
Example = dict[str, Any]
_TF_DTYPES = {"string": tf.string, "int64": tf.int64, "float32": tf.float32}


# -- parsing specs ---------------------------------------------------------------------------


def feature_description(schema: Schema, features: Names[str] | None = None) -> dict[str, Any]:
    """The ``tf.io.parse_example`` spec for a schema (or the named subset of its features).

    Fixed-length keys become ``FixedLenFeature``; variable-length ones ``RaggedFeature``.
    Feature lists (:class:`~tfrecordkit.schema.FeatureList`) become
    ``FixedLenSequenceFeature`` (``RaggedFeature`` for steps of any length): give those to
    ``tf.io.parse_sequence_example`` as its ``sequence_features``.
    """
    return {spec.key: _tf_spec(spec) for spec in schema.key_specs(
        list(features) if features is not None else None)}


def _tf_spec(spec: KeySpec) -> Any:
    dtype = _TF_DTYPES[spec.dtype]
    if spec.sequence:  # a SequenceExample feature list: steps of one shape, or of any length
        if spec.shape is None:
            return tf.io.RaggedFeature(dtype, row_splits_dtype=tf.int64)
        return tf.io.FixedLenSequenceFeature(list(spec.shape), dtype, allow_missing=True)
    if spec.shape is None:
        return tf.io.RaggedFeature(dtype, row_splits_dtype=tf.int64)
    return tf.io.FixedLenFeature(list(spec.shape), dtype)


# -- decoding --------------------------------------------------------------------------------


def _tf_to_channels(image: Any, channels: int | None) -> Any:
    """``[h, w, c]`` uint8 pixels (any c in 1..4) with ``channels`` channels, converted as
    :func:`~tfrecordkit.codecs.convert_channels` converts them (both readers agree)."""
    if channels is None:
        return image
    have = tf.shape(image)[2]
    has_alpha = tf.logical_or(tf.equal(have, 2), tf.equal(have, 4))
    colour = tf.cond(has_alpha, lambda: image[:, :, :-1], lambda: image)
    if channels in (1, 2):
        def luma() -> Any:
            rgb = tf.cast(colour, tf.int32)
            red, green, blue = LUMA_WEIGHTS
            grey = (rgb[:, :, 0] * red + rgb[:, :, 1] * green + rgb[:, :, 2] * blue) // (
                1 << LUMA_SHIFT)
            return tf.cast(grey, tf.uint8)[:, :, None]
        colour = tf.cond(tf.equal(tf.shape(colour)[2], 3), luma, lambda: colour[:, :, :1])
    else:
        colour = tf.cond(tf.equal(tf.shape(colour)[2], 1),
                         lambda: tf.tile(colour, [1, 1, 3]), lambda: colour[:, :, :3])
    if channels in (2, 4):
        alpha = tf.cond(has_alpha, lambda: image[:, :, -1:],
                        lambda: tf.fill(tf.concat([tf.shape(image)[:2], [1]], 0),
                                        tf.constant(255, tf.uint8)))
        colour = tf.concat([colour, alpha], axis=2)
    colour.set_shape([None, None, channels])
    return colour


def decode_image_tensor(data: Any, channels: int | None = None, encoding: str = "auto", *,
                        strict: str | None = None) -> Any:
    """Decode JPEG/PNG (or GIF/BMP) bytes to ``[h, w, c]`` uint8, pixel for pixel as the NumPy
    readers decode them: accurate integer DCT for JPEG (TensorFlow's default is the faster,
    less exact one), and the same channel conversions. ``strict`` (the feature's name): an
    image with more channels than ``channels`` fails, as the NumPy readers refuse it when the
    schema was inferred from a sample (colour or alpha would be lost)."""
    if strict is not None and channels is not None:
        native = decode_image_tensor(data, None, encoding)
        check = tf.debugging.assert_less_equal(
            tf.shape(native)[2], channels,
            message=f"feature {strict!r}: an image with more channels than the inferred "
                    f"schema's {channels}")
        with tf.control_dependencies([check]):
            return _tf_to_channels(tf.identity(native), channels)
    def jpeg() -> Any:
        want = 1 if channels in (1, 2) else 3 if channels in (3, 4) else 0
        image = tf.io.decode_jpeg(data, channels=want, dct_method="INTEGER_ACCURATE")
        return _tf_to_channels(image, channels) if channels in (2, 4) else image

    def other() -> Any:
        image = tf.io.decode_image(data, channels=0, expand_animations=False)
        image.set_shape([None, None, None])
        return _tf_to_channels(image, channels)

    if encoding == "jpeg":
        image = jpeg()
    elif encoding == "png":
        image = _tf_to_channels(tf.io.decode_png(data, channels=0), channels)
    else:
        image = tf.cond(tf.io.is_jpeg(data), jpeg, other)
    image.set_shape([None, None, channels])
    return image


def _decode_image(feature: Image, parsed: Example, name: str, options: DecodeOptions,
                  seed: int = 0, *, placed: dict[str, TFPlacement] | None = None,
                  strict: bool = False) -> Any:
    data = parsed[name]
    if (options.crop is not None and feature.encoding in ("auto", "jpeg") and not strict
            and options.image_size is not None):
        return _decode_window(feature, data, parsed, name, options, seed=seed, placed=placed)
    if feature.encoding == "raw":
        shape = tf.stack([parsed[f"{name}/height"], parsed[f"{name}/width"],
                          parsed[f"{name}/channels"]])
        image = _tf_to_channels(tf.reshape(tf.io.decode_raw(data, tf.uint8), shape),
                                feature.channels)
    else:
        image = decode_image_tensor(data, feature.channels, feature.encoding,
                                    strict=name if strict else None)
    if options.image_size is None and feature.fixed_shape is not None:
        image = tf.ensure_shape(image, feature.fixed_shape)  # a static shape for Keras
    return finish_image(image, parsed, options, seed, placed=placed, name=name)


#: Parsed keys a batch's random crop windows travel under to each example (see
#: :func:`batch_windows`): ``[4]`` window, flip and the JPEG's ``[2]`` size; the ``[4]`` int32
#: widened window to decode, and the window's ``[3]`` begin and size in it.
_WINDOW, _FLIP, _SIZE = "__window/", "__flip/", "__size/"
_WIDENED, _BEGIN, _EXTENT = "__widened/", "__begin/", "__extent/"


def _windowed(feature: Feature, options: DecodeOptions, strict: bool) -> bool:
    """Whether an image is decoded by its crop window (see :func:`_decode_window`)."""
    return (feature.kind == "image" and options.crop is not None and not strict
            and getattr(feature, "encoding", None) in ("auto", "jpeg")
            and options.image_size is not None)


def batch_windows(features: Mapping[str, Feature], parsed: Example, options: DecodeOptions,
                  seed: int, strict: bool = False) -> Example:
    """A parsed batch's random crop windows and flips, one vectorized computation per image
    feature (the JPEGs' sizes read from their headers), for :func:`_decode_window` to use:
    the same windows as per example, without ~150 small ops an image. Non-JPEG rows of an
    ``"auto"`` image get none that is used (they are decoded whole and cut per example)."""
    if options.crop != "random":
        return {}
    out: Example = {}
    for name, feature in features.items():
        if not _windowed(feature, options, strict) or name not in parsed:
            continue
        data = parsed[name]
        keys = parsed.get(CROP_KEY)
        if keys is None:  # records read without keys: epoch 0, record 0
            keys = tf.zeros(tf.stack([tf.size(data), 2]), tf.int64)
        size, windows, flips = jpeg_windows(
            data, keys, seed, options,
            any_format=getattr(feature, "encoding", None) != "jpeg")
        widened, begin, extent = _widened(windows, size)
        out.update({_WINDOW + name: windows, _FLIP + name: flips, _SIZE + name: size,
                    _WIDENED + name: widened, _BEGIN + name: begin, _EXTENT + name: extent})
    return out


def _widened(windows: Any, size: Any) -> tuple[Any, Any, Any]:
    """``[n, 4]`` windows widened by one pixel on each side inside their images (``size``
    ``[n, 2]``), as ``decode_and_crop_jpeg`` takes them, and each window's begin and size in
    its widened one (int32 ``[n, 4]``, ``[n, 3]``, ``[n, 3]``): a batch's arithmetic at once,
    two ops an image left (decode, slice)."""
    top, left = tf.maximum(windows[:, 0] - 1, 0), tf.maximum(windows[:, 1] - 1, 0)
    bottom = tf.minimum(windows[:, 0] + windows[:, 2] + 1, size[:, 0])
    right = tf.minimum(windows[:, 1] + windows[:, 3] + 1, size[:, 1])
    zeros = tf.zeros_like(top)
    widened = tf.stack([top, left, bottom - top, right - left], axis=1)
    begin = tf.stack([windows[:, 0] - top, windows[:, 1] - left, zeros], axis=1)
    extent = tf.stack([windows[:, 2], windows[:, 3], zeros - 1], axis=1)
    return tf.cast(widened, tf.int32), tf.cast(begin, tf.int32), tf.cast(extent, tf.int32)


def _decode_window(feature: Image, data: Any, parsed: Example, name: str,
                   options: DecodeOptions, *, seed: int,
                   placed: dict[str, TFPlacement] | None) -> Any:
    """A crop's pixels: of a JPEG, only its window widened by one pixel on each side is
    decoded (``decode_and_crop_jpeg``) and then cut to the window, which gives a full
    decode's pixels at the window's edges too (without the widening, chroma upsampling
    differs there on ~2 of 5 windows of 4:2:0 and 4:2:2 JPEGs); other formats are decoded
    whole and cut. Then resized and flipped as :func:`finish_image` does."""
    channels = feature.channels
    key = parsed.get(CROP_KEY, tf.zeros([2], tf.int64))

    def jpeg() -> tuple[Any, Any, Any, Any]:
        if _WINDOW + name in parsed:  # computed for the whole batch (batch_windows)
            shape, box, flip = parsed[_SIZE + name], parsed[_WINDOW + name], parsed[_FLIP + name]
            crop, begin, extent = (parsed[k + name] for k in (_WIDENED, _BEGIN, _EXTENT))
        else:
            shape = tf.io.extract_jpeg_shape(data, output_type=tf.int64)
            box, flip = window_of(shape[0], shape[1], key, seed, options)
            crop, begin, extent = (t[0] for t in _widened(box[None], shape[None, :2]))
        want = 1 if channels in (1, 2) else 3 if channels in (3, 4) else 0
        widened = tf.image.decode_and_crop_jpeg(data, crop, channels=want,
                                                dct_method="INTEGER_ACCURATE")
        window = tf.slice(widened, begin, extent)
        if channels in (2, 4):
            window = _tf_to_channels(window, channels)
        window.set_shape([None, None, channels])
        return window, flip, box, shape[:2]

    def whole() -> tuple[Any, Any, Any, Any]:
        image = decode_image_tensor(data, channels, "auto")
        shape = tf.shape(image, out_type=tf.int64)
        box, flip = window_of(shape[0], shape[1], key, seed, options)
        window = image[box[0] : box[0] + box[2], box[1] : box[1] + box[3]]
        window.set_shape([None, None, channels])
        return window, flip, box, shape[:2]

    window, flip, box, size = (jpeg() if feature.encoding == "jpeg"
                               else tf.cond(tf.io.is_jpeg(data), jpeg, whole))
    if placed is not None:
        placed[name] = _placement(size, box, flip, options)
    resized = _resize(window, options.image_size, options.keep_aspect, name or "image")
    return tf.cond(flip, lambda: tf.image.flip_left_right(resized), lambda: resized)


def finish_image(image: Any, parsed: Example, options: DecodeOptions, seed: int = 0, *,
                 placed: dict[str, TFPlacement] | None = None, name: str = "") -> Any:
    """A decoded image cropped, resized and flipped as ``options`` say (the TF-free readers'
    :class:`ImageTransform` steps, in-graph); random windows and flips read the record's crop
    key (``CROP_KEY``, see :mod:`._crop`). ``placed[name]`` receives where its pixels went
    (what boxes tied to it follow)."""
    shape = tf.shape(image, out_type=tf.int64)
    if options.crop is None and not options.flip:
        if placed is not None and options.image_size is not None:
            placed[name] = _placement(shape, tf.stack([0, 0, shape[0], shape[1]]), None,
                                      options)
        return _resize(image, options.image_size, options.keep_aspect, name or "image")
    key = parsed.get(CROP_KEY, tf.zeros([2], tf.int64))
    window, flip, box = crop_window(image, key, seed, options)
    if placed is not None:
        placed[name] = _placement(shape, box, flip, options)
    resized = _resize(window, options.image_size, options.keep_aspect, name or "image")
    return tf.cond(flip, lambda: tf.image.flip_left_right(resized), lambda: resized)


def _placement(shape: Any, window: Any, flip: Any, options: DecodeOptions) -> TFPlacement:
    assert options.image_size is not None
    pad = (pad_window_tf(window[2], window[3], options.image_size) if options.keep_aspect
           else None)
    return TFPlacement(shape[0], shape[1], window, options.image_size, pad, flip,
                       cropped=options.crop is not None)


def _scale_image(image: Any, dtype: str, mean: tuple[float, ...] | None,
                 std: tuple[float, ...] | None) -> Any:
    """float32 in [0, 1], then ``(x - mean) / std``: the NumPy readers' float32 operations."""
    out = tf.cast(image, tf.float32) / tf.constant(255.0, tf.float32)
    if mean is not None:
        out = out - tf.constant(mean, tf.float32)
    if std is not None:
        out = out / tf.constant(std, tf.float32)
    return out


def _resize(image: Any, image_size: tuple[int, int] | None, keep_aspect: bool,
            name: str = "image") -> Any:
    if image_size is None:
        return image
    if keep_aspect:
        shape = tf.shape(image, out_type=tf.int64)
        fitted = pad_window_tf(shape[0], shape[1], image_size)
        check = tf.debugging.assert_positive(
            tf.reduce_min(fitted[2:]), message=f"feature {name!r}: an image scaled to "
            f"{image_size[0]}x{image_size[1]} keeping its aspect ratio would be empty")
        with tf.control_dependencies([check]):
            image = tf.identity(image)
        resized = tf.image.resize_with_pad(image, image_size[0], image_size[1])
    else:
        resized = tf.image.resize(image, image_size)
    return tf.saturate_cast(tf.round(resized), tf.uint8)


def _decode_audio_file(data: bytes) -> tuple[np.ndarray, np.int64]:
    import io

    samples, rate = load_soundfile().read(io.BytesIO(data), dtype="float32", always_2d=True)
    return samples, np.int64(rate)


def _decode_audio(feature: Audio, parsed: Example, name: str,
                  sample_rate: int | None = None) -> Any:
    """``{"samples": [frames, channels] float32, "sample_rate": int64}``, as the TF-free
    loaders give it; resampled (libsoxr, as they do) to ``sample_rate`` when given."""
    channels = tf.cast(parsed[f"{name}/channels"], tf.int64)
    rate = tf.cast(parsed[f"{name}/sample_rate"], tf.int64)
    if feature.encoding == "pcm":
        samples = tf.reshape(parsed[name], tf.stack([-1, tf.maximum(channels, 1)]))
    else:
        samples, rate = tf.numpy_function(exit_safe(_decode_audio_file), [parsed[name]],
                                          [tf.float32, tf.int64], stateful=False)
        samples.set_shape([None, None])
        rate.set_shape([])
    if sample_rate is not None:
        samples = tf.numpy_function(
            exit_safe(lambda s, r: resample_audio(s, int(r), sample_rate) if r > 0 else s),
            [samples, rate], tf.float32, stateful=False)
        samples.set_shape([None, None])
        rate = tf.where(rate > 0, tf.constant(sample_rate, tf.int64), rate)
    return {"samples": samples, "sample_rate": rate}


def _decode_tensor(feature: Tensor, data: Any, shape: Any, batched: bool) -> Any:
    raw_dtype = tf.uint8 if feature.dtype == "bool" else tf.as_dtype(feature.dtype)
    values = tf.io.decode_raw(data, raw_dtype, little_endian=True)
    values = tf.reshape(values, [-1, *feature.shape] if batched else shape)
    if not batched:
        values.set_shape(feature.shape)  # the dimensions the schema fixes are static
    return tf.cast(values, tf.bool) if feature.dtype == "bool" else values


def _token_ids(ids: Any, text_length: int | None, batched: bool) -> dict[str, Any]:
    """Token ids cut to ``text_length``, with a mask that padding will make False."""
    if text_length is not None:
        ids = ids[:, :text_length] if batched else ids[:text_length]
    mask = (tf.ones_like(ids, dtype=tf.bool) if not isinstance(ids, tf.RaggedTensor)
            else tf.ragged.map_flat_values(tf.ones_like, ids, dtype=tf.bool))
    if batched and text_length is not None and isinstance(ids, tf.RaggedTensor):
        ids = ids.to_tensor(shape=[None, text_length])
        mask = mask.to_tensor(shape=[None, text_length])
    return {"ids": ids, "mask": mask}


# -- each kind's in-graph decoding (named by the kind's tf_decoder) ---------------------------


class _How(NamedTuple):
    """How a feature is decoded: over a whole parsed batch or one parsed example."""

    batched: bool
    options: DecodeOptions
    seed: int = 0
    #: One example's images' placements, filled as they decode (``finish_image``), and the
    #: image each boxes feature follows (``BatchLayout.follows``).
    placed: dict[str, TFPlacement] | None = None
    follows: Mapping[str, str] | None = None
    #: The schema was inferred from a sample: what it does not describe fails (images with
    #: more channels than it says), as the NumPy readers refuse it.
    strict: bool = False


def decode_text(feature: Text, parsed: Example, name: str, how: _How) -> Any:
    if feature.has_ids:
        return {"text": parsed[name],
                **_token_ids(parsed[f"{name}/ids"], how.options.text_length, how.batched)}
    return parsed[name]


def decode_tensor(feature: Tensor, parsed: Example, name: str, how: _How) -> Any:
    if feature.encoding == "proto":  # one example at a time (Tensor.decodes_per_example)
        return tf.ensure_shape(tf.io.parse_tensor(parsed[name], tf.as_dtype(feature.dtype)),
                               feature.shape)
    if feature.encoding == "list":
        values = parsed[name]
        if isinstance(values, tf.RaggedTensor):
            values = values.flat_values
        values = tf.reshape(values, [-1, *feature.shape] if how.batched and not feature.variable
                            else [-1, *feature.shape[1:]] if feature.shape else [])
        if not how.batched:
            values.set_shape(feature.shape)
        return tf.cast(values, tf.as_dtype(feature.dtype))
    shape = parsed[f"{name}/shape"] if feature.variable else list(feature.shape)
    return _decode_tensor(feature, parsed[name], shape, how.batched)


def decode_scalar(feature: Scalar, parsed: Example, name: str, how: _How) -> Any:
    value = parsed[name]
    if feature.dtype in ("string", "int64", "float32"):
        return value
    return tf.cast(value, tf.as_dtype(feature.dtype))


def decode_image(feature: Image, parsed: Example, name: str, how: _How) -> Any:
    return _decode_image(feature, parsed, name, how.options, how.seed, placed=how.placed,
                         strict=how.strict)


def decode_audio(feature: Audio, parsed: Example, name: str, how: _How) -> Any:
    return _decode_audio(feature, parsed, name, how.options.sample_rate)


def decode_boxes(feature: Boxes, parsed: Example, name: str, how: _How) -> Any:
    """``{"boxes": [n, 4], "labels": [n]}`` from the Object Detection API's keys (a batch's:
    ragged over the objects), checked as the NumPy decoding checks them."""
    corners = [parsed[f"{name}/bbox/{c}"] for c in BOX_CORNERS]
    labels = parsed[f"{name}/class/label"]
    counts = [c.row_lengths() if how.batched else tf.size(c, tf.int64) for c in corners]
    wanted = labels.row_lengths() if how.batched else tf.size(labels, tf.int64)
    ids = labels.flat_values if how.batched else labels
    checks = [tf.debugging.assert_equal(c, wanted, message=f"feature {name!r}: the box keys "
                                        "need one corner and one label per object")
              for c in counts]
    checks.append(tf.debugging.assert_non_negative(ids, message=f"feature {name!r}: a "
                                                   "negative class id"))
    if feature.names:
        checks.append(tf.debugging.assert_less(ids, tf.constant(len(feature.names), tf.int64),
                                               message=f"feature {name!r}: a class id "
                                                       "outside the class names"))
    fields = {f: parsed[f"{name}/{f}"] for f in feature.fields}
    checks += [tf.debugging.assert_equal(
        values.row_lengths() if how.batched else tf.size(values, tf.int64), wanted,
        message=f"feature {name!r}: per-object field {field!r} needs one value per object")
        for field, values in fields.items()]
    with tf.control_dependencies(checks):
        fields = {f: tf.identity(v) for f, v in fields.items()}
        if how.batched:
            flat = tf.stack([c.flat_values for c in corners], axis=1)
            return {"boxes": tf.RaggedTensor.from_row_splits(flat, labels.row_splits),
                    "labels": tf.identity(labels), **fields}
        value = {"boxes": tf.stack(corners, axis=1), "labels": tf.identity(labels), **fields}
    image = (how.follows or {}).get(name)
    if image is None:
        return value
    if how.placed is None or image not in how.placed:
        raise TypeError(f"boxes {name!r} follow image {image!r}, decoded after them")
    return place_boxes_tf(value, how.placed[image], min_size=how.options.box_min_size,
                          min_area=how.options.box_min_area)


def _as_parsed(feature: Feature, parsed: Example, name: str, how: _How) -> Any:
    return parsed[name]  # int64 class ids, ragged sequences, feature lists' steps


@functools.cache
def _resolved(path: str) -> Callable[[Any, Example, str, _How], Any]:
    """The function a kind's ``tf_decoder`` names (``"module:function"``), imported once."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)  # type: ignore[no-any-return]


def per_example_decode(feature: Feature) -> bool:
    """Whether ``feature`` is decoded one example at a time rather than per batch."""
    return feature.decodes_per_example()


def decode_feature(feature: Feature, parsed: Example, name: str, options: DecodeOptions, *,
                   batched: bool, seed: int = 0) -> Any:
    """The in-graph decoding of ``feature`` from its parsed keys (a batch's, or one
    example's)."""
    return _op(feature)(feature, parsed, name, _How(batched, options, seed))


def _op(feature: Feature) -> Callable[[Any, Example, str, _How], Any]:
    """The in-graph decoding a kind declares (:attr:`~tfrecordkit.schema.Feature.tf_decoder`;
    none: its values as parsed)."""
    path = type(feature).tf_decoder
    return _as_parsed if path is None else _resolved(path)


def decode_parsed_example(features: Mapping[str, Feature], parsed: Example,
                          options: DecodeOptions, *, seed: int = 0,
                          follows: Mapping[str, str] | None = None,
                          strict: bool = False) -> Example:
    """One example's features decoded in-graph, in the order given; the ones that follow
    an image (boxes, ``BatchLayout.follows``) decoded after it and moved as it was."""
    follows = follows or {}
    how = _How(False, options, seed, {}, follows, strict)
    followers = [n for n in features if n in follows]
    out = {n: _op(f)(f, parsed, n, how) for n, f in features.items() if n not in followers}
    out.update({n: _op(features[n])(features[n], parsed, n, how) for n in followers})
    return {n: out[n] for n in features}
