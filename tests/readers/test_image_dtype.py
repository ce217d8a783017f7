"""float32 images (scaled to [0, 1], optionally normalised): the NumPy loader (whose decoding
the PyTorch and grain readers share) and tf.data return the same bits."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import digits_folder


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    root = tmp_path_factory.mktemp("float")
    digits_folder(root / "d", limit_per_class=6)
    tk.convert(tk.ImageFolder(root / "d"), root / "ds", workers=1)
    return root / "ds"


def numpy_images(path, options):
    return {int(i): image for batch in tk.load_numpy_dataset(path, batch_size=12,
                                                             sampling=tk.InOrder(), options=options)
            for i, image in zip(batch["__id"], batch["image"], strict=True)}


def test_float32_is_pixels_over_255_then_normalised(digits):
    raw = numpy_images(digits, tk.DecodeOptions())
    scaled = numpy_images(digits, tk.DecodeOptions(image_dtype="float32"))
    normal = numpy_images(digits, tk.DecodeOptions(image_dtype="float32", mean=0.5, std=0.25))
    for i, image in raw.items():
        assert scaled[i].dtype == np.float32 and 0 <= scaled[i].min() <= scaled[i].max() <= 1
        assert np.array_equal(scaled[i], image.astype(np.float32) / np.float32(255))
        assert np.array_equal(normal[i], (scaled[i] - np.float32(0.5)) / np.float32(0.25))


@pytest.mark.integration
@pytest.mark.parametrize("options", [
    {"image_dtype": "float32"},
    {"image_dtype": "float32", "mean": (0.485,), "std": (0.229,), "image_size": (12, 10),
     "fast_resize": False},
])
def test_tf_data_gives_the_same_bits(tf, digits, options):
    chosen = tk.DecodeOptions(**options)
    ours = sorted(image.tobytes() for image in numpy_images(digits, chosen).values())
    ds = tk.load_tf_dataset(digits, batch_size=12, sampling=tk.InOrder(), options=chosen)
    theirs = sorted(image.tobytes() for batch in ds for image in batch["image"].numpy())
    assert ours == theirs


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="image_dtype"):
        tk.DecodeOptions(image_dtype="float16")
    with pytest.raises(ValueError, match="float32"):
        tk.DecodeOptions(mean=(0.5,))
    with pytest.raises(ValueError, match="above 0"):
        tk.DecodeOptions(image_dtype="float32", std=(0.0,))
    # 0-255 statistics on [0, 1] pixels (every pixel would be about -2): refused with the fix.
    with pytest.raises(ValueError, match=r"0-255 units.*mean=\(0\.4851, 0\.4561, 0\.4063\)"):
        tk.DecodeOptions(image_dtype="float32", mean=(123.7, 116.3, 103.6))
    with pytest.raises(ValueError, match=r"std=\(0\.2294,\)"):
        tk.DecodeOptions(image_dtype="float32", mean=0.5, std=58.5)
    assert tk.DecodeOptions(image_dtype="float32", mean=(0.485, 0.456, 0.406),
                            std=(0.229, 0.224, 0.225)).mean == (0.485, 0.456, 0.406)
