"""Text to token ids: tfrecordkit's vocabulary at conversion vs Keras' TextVectorization.

The tutorial workflow: read text, `TextVectorization(max_tokens=20000).adapt(...)` over the
training texts, then map every text to ids in the input pipeline. tfrecordkit builds the same
kind of vocabulary (lowercased word tokens, 20,000 ids) in the pass before conversion and stores
the ids with each record. Timed, on the same sentences (words drawn, Zipf-distributed, from the
standard library's docstrings: real words), each side once per run:
  keras:  adapt on a tf.data of the texts (batch 1024) + one epoch of ids (map, batch 256)
  ours:   write_dataset with Text(vocabulary=...) + one epoch of load_tf_dataset ids (it also
          writes the dataset to disk, which the Keras side never does)
Prints medians of --runs and the ratio (keras time / ours).

Run: python bench/vocabulary.py [--texts 200000] [--runs 3]
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _results import add_json_option, scalar_medians, write_results

import tfrecordkit as tk


def sentences(n: int, seed: int = 0) -> list[str]:
    import builtins
    import collections
    import itertools
    import json
    import pathlib
    import re

    words: list[str] = []
    for module in (builtins, collections, itertools, json, pathlib, re, os):
        for _, member in inspect.getmembers(module):
            words += re.findall(r"[A-Za-z]+", inspect.getdoc(member) or "")
    vocabulary = sorted(set(w.lower() for w in words))
    rng = np.random.default_rng(seed)
    ranks = np.minimum(rng.zipf(1.3, size=(n, 12)) - 1, len(vocabulary) - 1)
    lengths = rng.integers(4, 13, size=n)
    return [" ".join(vocabulary[r] for r in row[:k]) for row, k in zip(ranks, lengths,
                                                                       strict=True)]


def keras_pipeline(texts: list[str]) -> int:
    import tensorflow as tf

    layer = tf.keras.layers.TextVectorization(max_tokens=20000)
    layer.adapt(tf.data.Dataset.from_tensor_slices(texts).batch(1024))
    ds = tf.data.Dataset.from_tensor_slices(texts).batch(256).map(
        layer, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
    return sum(int(batch.shape[0]) for batch in ds)


def our_pipeline(texts: list[str], folder: Path) -> int:
    schema = tk.Schema({"text": tk.Text(vocabulary=tk.Vocabulary(max_size=20000))})
    tk.write_dataset([{"text": t} for t in texts], folder / "ds", schema,
                     shards=tk.ShardOptions(shuffle=False),
                     overwrite=True)
    ds = tk.load_tf_dataset(folder / "ds", batch_size=256, sampling=tk.InOrder(),
                            options=tk.DecodeOptions(features=["text"]))
    return sum(int(batch["text"]["ids"].shape[0]) for batch in ds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    add_json_option(parser)
    args = parser.parse_args()
    texts = sentences(args.texts)
    times: dict[str, list[float]] = {"keras TextVectorization": [], "tfrecordkit": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            start = time.perf_counter()
            assert keras_pipeline(texts) == len(texts)
            times["keras TextVectorization"].append(time.perf_counter() - start)
            start = time.perf_counter()
            assert our_pipeline(texts, Path(tmp)) == len(texts)
            times["tfrecordkit"].append(time.perf_counter() - start)
    print(f"{len(texts):,} texts, vocabulary of 20,000 ids; medians of {args.runs} runs")
    base = statistics.median(times["keras TextVectorization"])
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<26}{median:>8.2f} s{len(texts) / median:>12,.0f} texts/s"
              f"{base / median:>8.2f}x")
    if args.json:
        rates = {name: [len(texts) / t for t in done] for name, done in times.items()}
        medians, spread = scalar_medians(rates)
        write_results(args.json, "vocabulary", texts=len(texts), runs=args.runs,
                      unit="texts/s", medians=medians, spread=spread, all_runs=rates,
                      ratios={"tfrecordkit / keras TextVectorization":
                              medians["tfrecordkit"] / medians["keras TextVectorization"]})


if __name__ == "__main__":
    main()
