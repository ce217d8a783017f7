"""Labels as users' arrays come: Keras-style ``(N, 1)`` integer labels become class labels, and
``as_supervised`` on a schema without one says what to write instead."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit import DatasetError, SourceError


@pytest.mark.parametrize("shape", [(40,), (40, 1)])
def test_integer_label_columns_are_class_labels(tmp_path, shape):
    labels = (np.arange(40) % 4).reshape(shape)
    images = np.arange(40 * 4, dtype=np.uint8).reshape(40, 2, 2)
    source = tk.NumpyArrays({"x": images, "label": labels})
    assert source.schema()["label"] == tk.ClassLabel(["0", "1", "2", "3"])
    tk.convert(source, tmp_path / "ds", workers=1)
    got = {}
    for batch in tk.load_numpy_dataset(tmp_path / "ds", batch_size=8, sampling=tk.InOrder()):
        for x, y in zip(batch["x"], batch["label"], strict=True):
            got[x.tobytes()] = int(y)
    assert got == {images[i].tobytes(): int(labels.reshape(-1)[i]) for i in range(40)}


def test_negative_labels_are_refused_by_name():
    with pytest.raises(SourceError, match=r"label.*>= 0"):
        tk.NumpyArrays({"label": np.array([[0], [-1]])}).schema()


def test_other_columns_keep_their_shape():
    source = tk.NumpyArrays({"score": np.zeros((5, 1), dtype=np.int64)})
    assert source.schema()["score"] == tk.Tensor((1,), "int64")


@pytest.mark.integration
def test_as_supervised_without_a_class_label_says_what_to_write(tmp_path):
    pytest.importorskip("tensorflow")
    tk.convert(tk.NumpyArrays({"x": np.zeros((6, 2), np.float32),
                               "score": np.zeros((6, 1), np.int64)}), tmp_path / "ds",
               workers=1)
    with pytest.raises(DatasetError, match=r"'score' holds integers: write it as "
                                           r"tk.ClassLabel\(names\)"):
        tk.load_tf_dataset(tmp_path / "ds", options=tk.DecodeOptions(as_supervised=True))
