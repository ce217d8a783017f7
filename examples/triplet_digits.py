"""Metric learning: an embedding trained with a batch-hard triplet loss on P×K batches.

Converts scikit-learn's real digits into a per-class dataset (one shard group per digit),
streams class-balanced batches of P=8 classes × K=8 images with `load_tf_pk_dataset`, and
trains a small Keras embedding with the NaN-safe `batch_hard_triplet_loss`. Prints the loss
per epoch and a nearest-neighbour accuracy on held-out digits before and after training.
Run: python examples/triplet_digits.py [OUT_DIR] [EPOCHS]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

import tfrecordkit as tk

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def convert_digits(out: Path) -> Path:
    from sklearn.datasets import load_digits

    from tfrecordkit import ClassLabel, Image, Schema, ShardOptions, write_dataset

    digits = load_digits()
    images = (digits.images * 16).clip(0, 255).astype(np.uint8)[..., None]
    schema = Schema({"image": Image("png", channels=1),
                     "label": ClassLabel([str(i) for i in range(10)])})
    rows = ({"image": image, "label": int(label)}
            for image, label in zip(images, digits.target, strict=True))
    write_dataset(rows, out, schema,
                  shards=ShardOptions(layout="per_class"), split={"train": 0.8, "test": 0.2},
                  overwrite=True)
    return out


def nearest_neighbour_accuracy(model, train, test) -> float:
    import tensorflow as tf

    def embed(ds):
        xs, ys = [], []
        for images, labels in ds:
            xs.append(model(tf.cast(images, tf.float32), training=False).numpy())
            ys.append(labels.numpy())
        return np.concatenate(xs), np.concatenate(ys)

    (a, la), (b, lb) = embed(train), embed(test)
    nearest = np.argmin(((b[:, None, :] - a[None, :, :]) ** 2).sum(-1), axis=1)
    return float((la[nearest] == lb).mean())


def main(out_dir: str = "demo_output", epochs: int = 8) -> list[float]:
    import tensorflow as tf

    from tfrecordkit import load_tf_dataset
    from tfrecordkit.readers.tf_data import batch_hard_triplet_loss

    tf.keras.utils.set_random_seed(0)
    path = convert_digits(Path(out_dir) / "digits_per_class")
    pk = tk.load_tf_dataset(path, sampling=tk.PK(8, 8, epoch="examples"), seed=0, repeat=True,
                            options=tk.DecodeOptions(as_supervised=True))
    model = tf.keras.Sequential([
        tf.keras.layers.Input((8, 8, 1)), tf.keras.layers.Rescaling(1 / 255),
        tf.keras.layers.Flatten(), tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(16),
        tf.keras.layers.UnitNormalization(),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(3e-3), loss=batch_hard_triplet_loss(0.3))
    train = load_tf_dataset(path, "train", batch_size=256, sampling=tk.InOrder(),
                            options=tk.DecodeOptions(as_supervised=True))
    test = load_tf_dataset(path, "test", batch_size=256, sampling=tk.InOrder(),
                           options=tk.DecodeOptions(as_supervised=True))
    before = nearest_neighbour_accuracy(model, train, test)
    history = model.fit(pk, epochs=epochs, steps_per_epoch=pk.steps_per_epoch, verbose=0,
                        shuffle=False).history["loss"]
    after = nearest_neighbour_accuracy(model, train, test)
    print(f"P×K batches of 8 classes x 8 digits, {pk.steps_per_epoch} steps per epoch")
    print("batch-hard triplet loss per epoch:", " ".join(f"{x:.3f}" for x in history))
    print(f"1-nearest-neighbour accuracy on held-out digits: {before:.2f} before training, "
          f"{after:.2f} after")
    return history


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "demo_output",
         int(sys.argv[2]) if len(sys.argv) > 2 else 8)
