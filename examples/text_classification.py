"""Text classification with the vocabulary tfrecordkit builds and stores at conversion.

The corpus is real text on every machine: the first docstring lines of four standard-library
modules' functions and classes, labelled by module. Conversion splits 80/20 (stratified by
module), builds a 2,000-id vocabulary from the training split only, and stores token ids with
each text. tf.data then gives ids cut and padded to 24 with a mask, and a small Keras model
(embedding, masked average, dense) learns which module a line comes from. No
TextVectorization, no adapt pass, no hand-written parsing.
Run: python examples/text_classification.py [OUT_DIR]
"""

from __future__ import annotations

import inspect
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tfrecordkit as tk

MODULES = ("os", "re", "json", "collections", "itertools", "pathlib", "random", "string")


def corpus() -> list[dict]:
    import importlib

    rows, seen = [], set()
    for label, name in enumerate(MODULES):
        for _, member in inspect.getmembers(importlib.import_module(name), callable):
            doc = inspect.getdoc(member)
            line = doc.splitlines()[0] if doc else ""
            if len(line.split()) >= 3 and line not in seen:  # a line, once, in one module
                seen.add(line)
                rows.append({"text": line, "label": label})
    return rows


def main(out: Path) -> float:
    import tensorflow as tf

    rows = corpus()
    schema = tk.Schema({"text": tk.Text(vocabulary=tk.Vocabulary(max_size=2000)),
                        "label": tk.ClassLabel(list(MODULES))})
    done = tk.write_dataset(rows, out / "docstrings", schema, split={"train": 0.8, "val": 0.2},
                            overwrite=True)
    vocabulary = done.manifest.schema["text"].vocabulary
    print(f"{len(rows)} docstring lines; vocabulary of {vocabulary.size} ids from the "
          f"training split; {done.manifest.splits['val'].records} held out")

    options = tk.DecodeOptions(text_length=24)

    def pairs(split: str, shuffle: bool):
        ds = tk.load_tf_dataset(out / "docstrings", split, batch_size=32,
                                sampling=tk.Shuffled() if shuffle else tk.InOrder(), seed=0,
                                options=options)
        return ds.map(lambda b: ((b["text"]["ids"], b["text"]["mask"]), b["label"]))

    ids = tf.keras.Input((24,), dtype="int64")
    mask = tf.keras.Input((24,), dtype="bool")
    embedded = tf.keras.layers.Embedding(vocabulary.size, 32)(ids)
    weights = tf.keras.layers.Lambda(lambda m: tf.cast(m, "float32")[..., None])(mask)
    pooled = tf.keras.layers.Lambda(
        lambda t: tf.reduce_sum(t[0] * t[1], 1) / tf.maximum(tf.reduce_sum(t[1], 1), 1.0))(
        [embedded, weights])
    logits = tf.keras.layers.Dense(len(MODULES))(pooled)
    model = tf.keras.Model([ids, mask], logits)
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    tf.keras.utils.set_random_seed(0)
    model.fit(pairs("train", True), epochs=15, verbose=0, shuffle=False)
    _, accuracy = model.evaluate(pairs("val", False), verbose=0)
    print(f"held-out accuracy {accuracy:.2f} (chance {1 / len(MODULES):.2f})")
    return float(accuracy)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
