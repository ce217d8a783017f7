"""Metric learning over 1,200 classes: per-class shards, P×K batches sampled on the fly, and a
batch-hard triplet loss (the tutorial with 1,425 classes, one TFRecord file per class).

Each class is one of scikit-learn's real 8x8 digit images, seen 6 times with a seeded
change of contrast and strong noise. Conversion writes the per-class layout (a shard group
per class, train/test split stratified: one test image per class). `load_tf_pk_dataset` samples
P=32 classes x K=4 images per batch without opening every class file at once, and a small
Keras embedding trains with `batch_hard_triplet_loss`. Prints the loss per epoch and 1-NN
retrieval accuracy of the test images among the training ones.
Run: python examples/triplet_many_classes.py [OUT_DIR] [EPOCHS]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tfrecordkit as tk

CLASSES = 1200
PER_CLASS = 6


def records(seed: int = 0):
    from sklearn.datasets import load_digits

    rng = np.random.default_rng(seed)
    digits = (load_digits().images * 16).clip(0, 255).astype(np.uint8)
    for label in range(CLASSES):
        base = digits[label]
        for _ in range(PER_CLASS):
            image = base * rng.uniform(0.6, 1.4) + rng.normal(0, 40, size=base.shape)
            yield {"image": image.clip(0, 255).astype(np.uint8)[..., None], "label": label}


def retrieval_accuracy(model, path: Path) -> float:
    import tensorflow as tf

    def embed(split: str):
        xs, ys = [], []
        for images, labels in tk.load_tf_dataset(path, split, batch_size=1024,
                                                 sampling=tk.InOrder(),
                                                 options=tk.DecodeOptions(as_supervised=True)):
            xs.append(model(tf.cast(images, tf.float32), training=False).numpy())
            ys.append(labels.numpy())
        return np.concatenate(xs), np.concatenate(ys)

    (a, la), (b, lb) = embed("train"), embed("test")
    nearest = np.argmax(b @ a.T, axis=1)  # unit vectors: the largest dot is the nearest
    return float((la[nearest] == lb).mean())


def main(out: Path, epochs: int = 3) -> list[float]:
    import tensorflow as tf

    schema = tk.Schema({"image": tk.Image("png", channels=1),
                        "label": tk.ClassLabel([f"c{i}" for i in range(CLASSES)])})
    done = tk.write_dataset(list(records()), out / "many", schema,
                            shards=tk.ShardOptions(layout="per_class"),
                            # exactly one test image per class (every class a query):
                            split={"train": 5 / 6, "test": 1 / 6}, stratify=True,
                            overwrite=True)
    shards = sum(len(s.shards) for s in done.manifest.splits.values())
    print(f"{CLASSES:,} classes x {PER_CLASS} images in {shards:,} per-class shards "
          f"({done.seconds:.1f} s)")
    tf.keras.utils.set_random_seed(0)
    pk = tk.load_tf_dataset(out / "many", sampling=tk.PK(32, 4, epoch="examples"), seed=0,
                            repeat=True, options=tk.DecodeOptions(as_supervised=True))
    model = tf.keras.Sequential([
        tf.keras.layers.Input((8, 8, 1)), tf.keras.layers.Rescaling(1 / 255),
        tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        tf.keras.layers.Flatten(), tf.keras.layers.Dense(64), tf.keras.layers.UnitNormalization(),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(3e-4),
                  loss=tk.batch_hard_triplet_loss(0.1))
    before = retrieval_accuracy(model, out / "many")
    history = model.fit(pk, epochs=epochs, steps_per_epoch=pk.steps_per_epoch, verbose=0,
                        shuffle=False).history["loss"]
    after = retrieval_accuracy(model, out / "many")
    print("batch-hard triplet loss per epoch:", " ".join(f"{x:.3f}" for x in history))
    print(f"1-NN retrieval over {CLASSES:,} classes: {before:.2f} before training, "
          f"{after:.2f} after")
    return history


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()),
         int(sys.argv[2]) if len(sys.argv) > 2 else 3)
