"""Text vocabularies: tokenizing, ids with padding and out-of-vocabulary ids, building from the
training split at conversion (stored in the manifest), and readers returning padded ids with a
mask, the same in tf.data and the NumPy loader."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tfrecordkit as tk
from tfrecordkit import SchemaError, SourceError

TRAIN = ["the cat sat on the mat", "The dog sat", "a cat and a dog", "dogs don't sit"]
VAL = ["the zebra sat"]


def test_tokenizers():
    assert tk.Vocabulary().tokenize("The cat's mat, 2 cats!") == ["the", "cat's", "mat", "2",
                                                                  "cats"]
    assert tk.Vocabulary(tokenizer="whitespace", lowercase=False).tokenize("A b,c") == [
        "A", "b,c"]
    assert tk.Vocabulary(tokenizer="chars").tokenize("Ab") == ["a", "b"]
    assert tk.Vocabulary(tokenizer=r"re:\d+").tokenize("a1b22") == ["1", "22"]
    with pytest.raises(SchemaError, match="tokenizer must be one of"):
        tk.Vocabulary(tokenizer="bpe")
    with pytest.raises(SchemaError, match="bad tokenizer pattern"):
        tk.Vocabulary(tokenizer="re:(")


def test_building_keeps_the_most_frequent_then_the_first_seen():
    counts = Counter()
    for line in TRAIN:
        counts.update(tk.Vocabulary().tokenize(line))
    built = tk.Vocabulary(max_size=6).built_from(counts)
    assert built.tokens == ("the", "cat", "sat", "dog")  # 3, then 2s in the order seen
    assert built.size == 6
    assert list(built.ids("the dog flew")) == [2, 5, tk.Vocabulary.OOV]
    assert built.decode([2, 5, 1, 0, 0]) == ["the", "dog", "<unk>"]
    assert tk.Vocabulary(min_count=3).built_from(counts).tokens == ("the",)
    assert tk.Vocabulary.from_json(built.to_json()) == built


def test_a_custom_tokenizer_is_stored_by_name_and_asked_for_again():
    vocabulary = tk.Vocabulary(("ab",), tokenizer=lambda s: s.split("-"))
    assert list(vocabulary.ids("ab-cd")) == [2, 1]
    stored = tk.Vocabulary.from_json(vocabulary.to_json())
    assert stored.tokenizer == "custom" and stored.tokens == ("ab",)
    with pytest.raises(SchemaError, match="custom tokenizer"):
        stored.ids("ab")
    again = dataclasses.replace(stored, tokenizer=lambda s: s.split("-"))
    assert list(again.ids("ab-ab")) == [2, 2]


@given(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), max_size=30))
def test_known_tokens_round_trip(words):
    vocabulary = tk.Vocabulary(("alpha", "beta", "gamma", "delta"))
    ids = vocabulary.ids(" ".join(words))
    assert ids.dtype == np.int64 and vocabulary.decode(ids) == words


def write(tmp_path, **vocabulary):
    records = {"train": [{"text": t, "label": i % 2} for i, t in enumerate(TRAIN)],
               "val": [{"text": t, "label": 0} for t in VAL]}
    schema = tk.Schema({"text": tk.Text(vocabulary=tk.Vocabulary(**vocabulary)),
                        "label": tk.ClassLabel(["a", "b"])})
    return tk.write_dataset(records, tmp_path / "ds", schema, shards=tk.ShardOptions(shuffle=False))


def test_conversion_builds_the_vocabulary_from_the_training_split(tmp_path):
    done = write(tmp_path, max_size=50)
    vocabulary = tk.load_manifest(tmp_path / "ds").schema["text"].vocabulary
    assert vocabulary == done.manifest.schema["text"].vocabulary
    assert vocabulary.tokens[:2] == ("the", "cat") and "zebra" not in vocabulary.tokens
    records = tk.open_split(tmp_path / "ds", "val")
    value = records.schema.decode(records[0])["text"]
    assert value["text"] == "the zebra sat"
    assert vocabulary.decode(value["ids"]) == ["the", "<unk>", "sat"]


@pytest.mark.integration
def test_plain_tensorflow_reads_the_ids(tmp_path):
    tf = pytest.importorskip("tensorflow")
    write(tmp_path)
    vocabulary = tk.load_manifest(tmp_path / "ds").schema["text"].vocabulary
    files = sorted(str(p) for p in (tmp_path / "ds").glob("train-*.tfrecord"))
    spec = {"text": tf.io.FixedLenFeature([], tf.string),
            "text/ids": tf.io.VarLenFeature(tf.int64)}
    for serialized in tf.data.TFRecordDataset(files):
        parsed = tf.io.parse_single_example(serialized, spec)
        text = parsed["text"].numpy().decode()
        assert list(tf.sparse.to_dense(parsed["text/ids"]).numpy()) == list(
            vocabulary.ids(text))


@pytest.mark.integration
@pytest.mark.parametrize("text_length", [None, 4])
def test_readers_give_padded_ids_and_a_mask_and_agree(tmp_path, text_length):
    write(tmp_path)
    vocabulary = tk.load_manifest(tmp_path / "ds").schema["text"].vocabulary
    options = tk.DecodeOptions(text_length=text_length)
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
                                            options=options)))
    ids, mask = batch["text"]["ids"], batch["text"]["mask"]
    width = text_length or max(len(vocabulary.ids(t)) for t in TRAIN)
    assert ids.shape == mask.shape == (4, width) and ids.dtype == np.int64
    for row, m, text in zip(ids, mask, batch["text"]["text"], strict=True):
        want = vocabulary.ids(text)[:width]
        assert list(row[m]) == list(want) and not row[~m].any()
    pytest.importorskip("tensorflow")
    for per_example in (False, True):  # the batched parse, and the per-example map
        chosen = (dataclasses.replace(options, padded_shapes={"label": ()}) if per_example
                  else options)
        got = next(iter(tk.load_tf_dataset(tmp_path / "ds", batch_size=4, sampling=tk.InOrder(),
                                           options=chosen)))
        assert np.array_equal(got["text"]["ids"].numpy(), ids)
        assert np.array_equal(got["text"]["mask"].numpy(), mask)


def test_a_generator_cannot_be_read_twice_to_build_one(tmp_path):
    schema = tk.Schema({"text": tk.Text(vocabulary=tk.Vocabulary())})
    with pytest.raises(SourceError, match="reads the records twice"):
        tk.write_dataset(({"text": t} for t in TRAIN), tmp_path / "ds", schema)
    assert not (tmp_path / "ds" / "dataset.json").exists()
