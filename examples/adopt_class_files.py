"""Per-class TFRecord files someone else wrote, with the class only in the file name.

A plain TensorFlow script (as the tutorials write it) stores scikit-learn's real digits as one
file per class, `class_<k>.tfrecord`, each record holding PNG bytes, height and width but no
label, in train/ and test/ folders. `tfrecordkit.adopt(..., class_pattern=r"class_(\\d+)")`
makes them one dataset with two splits without rewriting a byte: every reader then gives each
record its file's class. Class-balanced P×K batches train a Keras embedding with a batch-hard
triplet loss; a 1-nearest-neighbour accuracy on the held-out files is printed before and after.
Run: python examples/adopt_class_files.py [OUT_DIR] [EPOCHS]
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def write_like_the_tutorial(folder: Path, images: np.ndarray, labels: np.ndarray) -> None:
    """One file per class, written with tf.io.TFRecordWriter; no label in the records."""
    import tensorflow as tf
    from PIL import Image

    def feature(value: bytes | int) -> tf.train.Feature:
        if isinstance(value, bytes):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    folder.mkdir(parents=True, exist_ok=True)
    for k in np.unique(labels):
        with tf.io.TFRecordWriter(str(folder / f"class_{k}.tfrecord")) as writer:
            for image in images[labels == k]:
                png = io.BytesIO()
                Image.fromarray(image).save(png, format="PNG")
                example = tf.train.Example(features=tf.train.Features(feature={
                    "image_raw": feature(png.getvalue()), "height": feature(image.shape[0]),
                    "width": feature(image.shape[1])}))
                writer.write(example.SerializeToString())


def split_arrays(path: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """A split's images and labels (each record's file class) through the NumPy loader."""
    import tfrecordkit as tk

    images, labels = [], []
    for batch in tk.load_numpy_dataset(path, split, batch_size=128,
                                       sampling=tk.InOrder(),
                                       options=tk.DecodeOptions(features=["image_raw", "label"])):
        real = batch["__valid"]
        images.append(batch["image_raw"][real])
        labels.append(batch["label"][real])
    return np.concatenate(images), np.concatenate(labels)


def retrieval_accuracy(model, train: tuple[np.ndarray, np.ndarray],
                       test: tuple[np.ndarray, np.ndarray]) -> float:
    """How often a held-out digit's nearest training embedding has its class."""
    known = model.predict(train[0].astype(np.float32), verbose=0)
    queries = model.predict(test[0].astype(np.float32), verbose=0)
    nearest = np.argmax(queries @ known.T, axis=1)  # unit vectors: the most similar
    return float((train[1][nearest] == test[1]).mean())


def main(out_dir: str = "demo_output", epochs: int = 6) -> None:
    import tensorflow as tf
    from sklearn.datasets import load_digits

    import tfrecordkit as tk

    digits = load_digits()
    images = (digits.images * 16).clip(0, 255).astype(np.uint8)
    held_out = np.arange(len(images)) % 5 == 0
    root = Path(out_dir) / "their_digits"
    write_like_the_tutorial(root / "train", images[~held_out], digits.target[~held_out])
    write_like_the_tutorial(root / "test", images[held_out], digits.target[held_out])

    # The two lines that make the files one dataset with two splits (dataset.json + .index
    # files; the files are linked in, not rewritten).
    tk.adopt(root / "train", root / "ds", class_pattern=r"class_(\d+)")
    manifest = tk.adopt(root / "test", root / "ds", split="test", class_pattern=r"class_(\d+)")
    print(f"adopted {sum(len(s.shards) for s in manifest.splits.values())} files, "
          f"{manifest.num_records('train')} + {manifest.num_records('test')} records, "
          f"layout {manifest.layout}; label {manifest.schema['label']}")

    tf.keras.utils.set_random_seed(0)
    features = ["image_raw", "label"]  # the image, and the class taken from the file name
    pk = tk.load_tf_dataset(root / "ds", sampling=tk.PK(8, 8, epoch="examples"), seed=0,
                            repeat=True,
                            options=tk.DecodeOptions(features=features, as_supervised=True))
    model = tf.keras.Sequential([
        tf.keras.layers.Input((8, 8, 1)), tf.keras.layers.Rescaling(1 / 255),
        tf.keras.layers.Flatten(), tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(16), tf.keras.layers.UnitNormalization(),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(3e-3),
                  loss=tk.batch_hard_triplet_loss(0.3))

    train, test = split_arrays(root / "ds", "train"), split_arrays(root / "ds", "test")
    before = retrieval_accuracy(model, train, test)
    history = model.fit(pk, epochs=epochs, steps_per_epoch=pk.steps_per_epoch, verbose=0,
                        shuffle=False).history["loss"]
    after = retrieval_accuracy(model, train, test)
    batch = next(iter(pk))
    print(f"a P×K batch holds classes {sorted(set(batch[1].numpy().tolist()))}, "
          f"{pk.steps_per_epoch} steps per epoch")
    print("batch-hard triplet loss per epoch:", " ".join(f"{x:.3f}" for x in history))
    print(f"1-nearest-neighbour accuracy on the held-out files: {before:.2f} before training, "
          f"{after:.2f} after")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "demo_output",
         int(sys.argv[2]) if len(sys.argv) > 2 else 6)
