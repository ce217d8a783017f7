"""The compiled resize kernel and its NumPy twin give the same bits, which are
``tf.image.resize``'s (bilinear, half-pixel centres) rounded to uint8."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfrecordkit.codecs import (
    _resize,
    resize_image,
    resize_image_with_pad,
    resize_into,
    resize_kernel_name,
)
from tfrecordkit.errors import OptionError

COMPILED = _resize._KERNEL is not None
needs_kernel = pytest.mark.skipif(
    not COMPILED, reason="the compiled resize kernel is not built"
    + (" (TFRECORDKIT_PURE_PYTHON=1)" if os.environ.get("TFRECORDKIT_PURE_PYTHON") else ""))


def _numpy(pixels: np.ndarray, out: np.ndarray, **options: object) -> np.ndarray:
    """The NumPy twin, whatever is built."""
    kernel, _resize._KERNEL = _resize._KERNEL, None
    try:
        return resize_into(pixels, out, **options)  # type: ignore[arg-type]
    finally:
        _resize._KERNEL = kernel


def test_kernel_name_says_which_runs() -> None:
    assert resize_kernel_name() == ("compiled" if COMPILED else "numpy")


@st.composite
def _cases(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, int]]:
    h, w = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    c = draw(st.sampled_from([1, 2, 3, 4]))
    seed = draw(st.integers(0, 2**32 - 1))
    pixels = np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)
    if draw(st.booleans()):  # few levels: many exact halves to round
        pixels = (pixels > 127).astype(np.uint8) * draw(st.sampled_from([1, 3, 255]))
    return pixels, (draw(st.integers(1, 50)), draw(st.integers(1, 50)))


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(_cases(), st.booleans())
def test_kernel_equals_numpy_twin(case: tuple[np.ndarray, tuple[int, int]], flip: bool) -> None:
    pixels, (height, width) = case
    shape = (height, width, pixels.shape[2])
    ours = resize_into(pixels, np.empty(shape, np.uint8), flip=flip)
    twin = _numpy(pixels, np.empty(shape, np.uint8), flip=flip)
    np.testing.assert_array_equal(ours, twin)


@needs_kernel
@settings(max_examples=150, deadline=None)
@given(_cases(), st.booleans(), st.integers(0, 2**32 - 1))
def test_kernel_scales_to_float_as_numpy_does(case: tuple[np.ndarray, tuple[int, int]],
                                              flip: bool, seed: int) -> None:
    pixels, (height, width) = case
    c = pixels.shape[2]
    rng = np.random.default_rng(seed)
    mean = tuple(float(v) for v in rng.random(rng.choice([1, c])))
    std = tuple(float(v) + 0.05 for v in rng.random(rng.choice([1, c])))
    shape = (height, width, c)
    ours = resize_into(pixels, np.empty(shape, np.float32), flip=flip, mean=mean, std=std)
    twin = _numpy(pixels, np.empty(shape, np.float32), flip=flip, mean=mean, std=std)
    assert ours.tobytes() == twin.tobytes()
    plain = resize_into(pixels, np.empty(shape, np.float32))
    expected = resize_image(pixels, (height, width)).astype(np.float32) / np.float32(255)
    assert plain.tobytes() == expected.tobytes()


def test_halves_round_to_even() -> None:
    pixels = np.array([[[0], [1], [2], [3]]], dtype=np.uint8)  # 1x4, halved: means .5 apart
    out = resize_image(pixels, (1, 2))
    assert out[:, :, 0].tolist() == [[0, 2]]  # 0.5 -> 0, 2.5 -> 2
    np.testing.assert_array_equal(out, _numpy(pixels, np.empty((1, 2, 1), np.uint8)))


def test_windows_and_crops_of_larger_arrays() -> None:
    rng = np.random.default_rng(7)
    photo = rng.integers(0, 256, (50, 70, 3), dtype=np.uint8)
    crop = photo[5:40, 10:61]  # rows apart, as a crop of a decoded image is
    out = np.full((30, 40, 3), 9, np.uint8)
    resize_into(crop, out[3:27, 2:38])
    np.testing.assert_array_equal(out[3:27, 2:38], resize_image(crop.copy(), (24, 36)))
    assert (out[:3] == 9).all() and (out[27:] == 9).all() and (out[:, :2] == 9).all()


def test_bad_shapes_are_refused() -> None:
    pixels = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(ValueError, match="cannot resize"):
        resize_into(pixels, np.zeros((2, 2, 1), np.uint8))
    with pytest.raises(ValueError, match="non-empty uint8"):
        resize_into(np.zeros((0, 4, 3), np.uint8), np.zeros((2, 2, 3), np.uint8))
    with pytest.raises(ValueError, match="float32"):
        resize_into(pixels, np.zeros((2, 2, 3), np.uint8), mean=(0.5,))


@pytest.mark.integration
@settings(max_examples=60, deadline=None)
@given(_cases())
def test_equals_tf_image_resize(case: tuple[np.ndarray, tuple[int, int]]) -> None:
    tf = pytest.importorskip("tensorflow")
    pixels, size = case
    expected = tf.saturate_cast(tf.round(tf.image.resize(pixels, size)), tf.uint8).numpy()
    np.testing.assert_array_equal(resize_image(pixels, size), expected)
    np.testing.assert_array_equal(_numpy(pixels, np.empty((*size, pixels.shape[2]), np.uint8)),
                                  expected)
    try:
        ours = resize_image_with_pad(pixels, size)
    except OptionError:  # scaled to nothing: TensorFlow refuses it too
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.image.resize_with_pad(pixels, *size)
        return
    padded = tf.saturate_cast(tf.round(tf.image.resize_with_pad(pixels, *size)), tf.uint8)
    np.testing.assert_array_equal(ours, padded.numpy())


@pytest.mark.integration
def test_photos_equal_tf_image_resize() -> None:
    tf = pytest.importorskip("tensorflow")
    from skimage import data

    for photo in (data.astronaut(), data.chelsea(), data.camera()[:, :, None], data.coffee()):
        for size in ((224, 224), (97, 301), (600, 500)):
            expected = tf.saturate_cast(tf.round(tf.image.resize(photo, size)), tf.uint8)
            np.testing.assert_array_equal(resize_image(photo, size), expected.numpy())
