"""Writes the golden files in this folder with real TensorFlow (run: python make_golden.py).

The files are Example records with a JPEG image, an int64 label, float values and UTF-8 text,
written by tf.io.TFRecordWriter uncompressed, GZIP and ZLIB, plus a SequenceExample file.
`expected.json` holds what each record must decode to, so tests can check them without TF.
"""

import base64
import hashlib
import json
import os

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = ["a cat on a mat", "ünïcödé ✓", "", "line one\nline two", "🙂 emoji"]


def make_examples():
    rng = np.random.default_rng(20261121)
    for i, text in enumerate(TEXTS):
        pixels = rng.integers(0, 256, size=(8 + i, 12, 3), dtype=np.uint8)
        jpeg = tf.io.encode_jpeg(pixels, quality=90).numpy()
        floats = rng.normal(size=3 + i).astype(np.float32)
        example = tf.train.Example(features=tf.train.Features(feature={
            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[jpeg])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 3])),
            "scores": tf.train.Feature(float_list=tf.train.FloatList(value=floats)),
            "caption": tf.train.Feature(bytes_list=tf.train.BytesList(value=[text.encode()])),
            "extremes": tf.train.Feature(int64_list=tf.train.Int64List(
                value=[-(2**63), 2**63 - 1, 0])),
        }))
        expected = {
            "image_sha256": hashlib.sha256(jpeg).hexdigest(),
            "label": [i % 3],
            "scores": floats.tolist(),
            "caption": text,
            "extremes": [-(2**63), 2**63 - 1, 0],
        }
        yield example.SerializeToString(), expected


def make_sequence_example():
    example = tf.train.SequenceExample(
        context=tf.train.Features(feature={
            "id": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"clip-7"])),
        }),
        feature_lists=tf.train.FeatureLists(feature_list={
            "tokens": tf.train.FeatureList(feature=[
                tf.train.Feature(int64_list=tf.train.Int64List(value=[1, 2])),
                tf.train.Feature(int64_list=tf.train.Int64List(value=[3])),
            ]),
            "frames": tf.train.FeatureList(feature=[
                tf.train.Feature(float_list=tf.train.FloatList(value=[0.5, -1.25])),
            ]),
        }),
    )
    return example.SerializeToString()


def main():
    records, expected = zip(*make_examples(), strict=True)
    for name, options in [("examples.tfrecord", None), ("examples.tfrecord.gz", "GZIP"),
                          ("examples.tfrecord.zz", "ZLIB")]:
        with tf.io.TFRecordWriter(os.path.join(HERE, name), options=options) as writer:
            for record in records:
                writer.write(record)
    sequence = make_sequence_example()
    with tf.io.TFRecordWriter(os.path.join(HERE, "sequence.tfrecord")) as writer:
        writer.write(sequence)
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump({
            "tensorflow_version": tf.__version__,
            "records_base64": [base64.b64encode(r).decode() for r in records],
            "decoded": list(expected),
        }, f, indent=1)


if __name__ == "__main__":
    main()
