"""Feature lists (``tk.FeatureList``): SequenceExamples we write and ones TensorFlow writes,
steps of one shape or of any length, read by every reader in one structure. TensorFlow's
``tf.io.parse_sequence_example`` (``RaggedFeature`` for steps of any length) is the oracle,
both ways: what we write it reads, and what it writes we read."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tfrecordkit as tk
from tfrecordkit.errors import SchemaError

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")

SCHEMA = tk.Schema({
    "id": tk.Scalar("int64"),
    "frames": tk.FeatureList("float32", (2,)),
    "tokens": tk.FeatureList("int64", (None,)),
    "words": tk.FeatureList("string"),
    "bags": tk.FeatureList("string", (None,)),
})
SEQUENCE_SPECS = {
    "frames": tf.io.FixedLenSequenceFeature([2], tf.float32, allow_missing=True),
    "tokens": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
    "words": tf.io.FixedLenSequenceFeature([], tf.string, allow_missing=True),
    "bags": tf.io.RaggedFeature(tf.string, row_splits_dtype=tf.int64),
}


def _row(i: int) -> dict:
    rng = np.random.default_rng(i)
    steps = i % 4
    return {
        "id": i,
        "frames": rng.normal(size=(steps, 2)).astype(np.float32),
        "tokens": [rng.integers(-2**40, 2**40, size=int(rng.integers(0, 4))).tolist()
                   for _ in range(steps)],
        "words": [f"w{i}.{t}" for t in range(steps)],
        "bags": [[bytes([65 + t])] * t for t in range(i % 3)],
    }


def _oracle(record: bytes) -> dict:
    """TensorFlow's values of one SequenceExample: steps as lists of per-step lists."""
    context, lists = tf.io.parse_single_sequence_example(
        record, context_features={"id": tf.io.FixedLenFeature([], tf.int64)},
        sequence_features=SEQUENCE_SPECS)
    out = {"id": int(context["id"])}
    for key, value in lists.items():
        out[key] = value.to_list() if isinstance(value, tf.RaggedTensor) else value.numpy()
    return out


def _same_steps(got, want, key: str) -> None:
    """A record's steps (array, or list of per-step arrays / lists) against the oracle's."""
    if isinstance(want, np.ndarray):
        if want.dtype == object:
            assert [bytes(g) if not isinstance(g, str) else g.encode() for g in got] == \
                list(want), key
        else:
            np.testing.assert_array_equal(np.asarray(got).reshape(want.shape), want, key)
            assert np.asarray(got).dtype == want.dtype, key
    else:
        assert len(got) == len(want), key
        for step, expected in zip(got, want, strict=True):
            items = step.tolist() if isinstance(step, np.ndarray) else list(step)
            assert [x.encode() if isinstance(x, str) else x for x in items] == \
                list(expected), key


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The same records written by us (a dataset) and by TensorFlow (a glob of files)."""
    root = tmp_path_factory.mktemp("lists")
    rows = [_row(i) for i in range(11)]
    tk.write_dataset(rows, root / "ds", SCHEMA,
                     shards=tk.ShardOptions(shuffle=False, num_shards=2), progress=False)
    with tf.io.TFRecordWriter(str(root / "tf.tfrecord")) as writer:
        for row in rows:
            writer.write(SCHEMA.encode(row))
    return root, rows


def test_tensorflow_reads_what_we_write(written):
    root, rows = written
    records = [r.numpy() for r in tf.data.TFRecordDataset(
        sorted(str(p) for p in (root / "ds").glob("*.tfrecord")))]
    assert len(records) == len(rows)
    for record in records:
        want = _oracle(record)
        row = rows[want["id"]]
        np.testing.assert_array_equal(want["frames"], row["frames"])
        assert want["tokens"] == row["tokens"]
        assert [w.decode() for w in want["words"]] == row["words"]
        assert want["bags"] == row["bags"]


def _per_record(batch: dict, k: int, padded: bool) -> dict:
    """Record ``k`` of a batch: padded values cut by their lengths (and step lengths)."""
    out = {"id": int(np.asarray(batch["id"])[k])}
    for key in SEQUENCE_SPECS:
        value = batch[key]
        if not padded:
            out[key] = value[k]
            continue
        values = np.asarray(value["values"])[k]
        steps = int(np.asarray(value["lengths"])[k][0])
        if "step_lengths" in value:
            widths = np.asarray(value["step_lengths"])[k]
            assert not widths[steps:].any()
            out[key] = [values[t, : widths[t]] for t in range(steps)]
        else:
            out[key] = values[:steps]
    return out


def _tf_numpy(batch: dict) -> dict:
    def one(v):
        if isinstance(v, tf.RaggedTensor):
            return [[s.numpy() if isinstance(s, tf.Tensor) else s.to_list() for s in r]
                    if isinstance(r, tf.RaggedTensor) else r.numpy() for r in v]
        return v.numpy()
    return {k: ({kk: one(vv) for kk, vv in v.items()} if isinstance(v, dict) else one(v))
            for k, v in batch.items()}


@pytest.mark.parametrize("padding", ["pad", "ragged"])
@pytest.mark.parametrize("where", ["ours", "tensorflow's"])
def test_every_reader_equals_parse_sequence_example(written, padding, where):
    from tfrecordkit.readers.torch_data import load_torch_dataset

    root, rows = written
    path = str(root / "ds") if where == "ours" else str(root / "*.tfrecord")
    options = tk.DecodeOptions(padding=padding)
    padded = padding == "pad"
    got = {
        "numpy": list(tk.load_numpy_dataset(path, batch_size=4, sampling=tk.InOrder(),
                                            options=options)),
        "tf.data": [_tf_numpy(b) for b in tk.load_tf_dataset(
            path, batch_size=4, sampling=tk.InOrder(), options=options)],
        "torch": list(load_torch_dataset(path, batch_size=4, sampling=tk.InOrder(),
                                         options=options)),
    }
    source = tk.load_grain_source(path, options=options)
    got["grain"] = [source.collate([source[i] for i in range(s, min(s + 4, len(source)))])
                    for s in range(0, len(source), 4)]
    for reader, batches in got.items():
        seen = []
        for batch in batches:
            for k in range(len(np.asarray(batch["id"]))):
                record = _per_record(batch, k, padded)
                want = _oracle(SCHEMA.encode(rows[record["id"]]))
                for key in SEQUENCE_SPECS:
                    _same_steps([np.asarray(s) if hasattr(s, "numpy") else s
                                 for s in record[key]] if isinstance(record[key], list)
                                else np.asarray(record[key], dtype=object)
                                if key == "words" else np.asarray(record[key]),
                                want[key], f"{reader} {where} record {record['id']} {key}")
                seen.append(record["id"])
        assert sorted(seen) == list(range(len(rows))), reader


def test_padded_batches_carry_lengths_at_both_levels(written):
    root, rows = written
    batch = next(iter(tk.load_numpy_dataset(root / "ds", batch_size=11, sampling=tk.InOrder())))
    tf_batch = next(iter(tk.load_tf_dataset(root / "ds", batch_size=11, sampling=tk.InOrder())))
    tokens = batch["tokens"]
    ids = batch["id"].tolist()
    steps = [len(rows[i]["tokens"]) for i in ids]
    longest = max(len(s) for r in rows for s in r["tokens"])
    assert tokens["values"].shape == (11, max(steps), longest)
    assert tokens["values"].dtype == np.int64
    assert tokens["lengths"][:, 0].tolist() == steps
    for k, i in enumerate(ids):
        widths = [len(s) for s in rows[i]["tokens"]]
        assert tokens["step_lengths"][k].tolist() == widths + [0] * (max(steps) - len(widths))
    for part in ("values", "lengths", "step_lengths"):
        np.testing.assert_array_equal(tf_batch["tokens"][part].numpy(), tokens[part])
    # A padded shape fixes the widths; one too small names the record.
    options = tk.DecodeOptions(padded_shapes={"tokens": (5, 4)})
    fixed = next(iter(tk.load_numpy_dataset(root / "ds", batch_size=11, sampling=tk.InOrder(),
                                            options=options)))
    tf_fixed = next(iter(tk.load_tf_dataset(root / "ds", batch_size=11, sampling=tk.InOrder(),
                                            options=options)))
    assert fixed["tokens"]["values"].shape == (11, 5, 4)
    assert fixed["tokens"]["step_lengths"].shape == (11, 5)
    for part in ("values", "lengths", "step_lengths"):
        np.testing.assert_array_equal(tf_fixed["tokens"][part].numpy(), fixed["tokens"][part])
    small = tk.DecodeOptions(padded_shapes={"tokens": (None, 1)})
    with pytest.raises(SchemaError, match=r"tokens.*padded shape"):
        next(iter(tk.load_numpy_dataset(root / "ds", batch_size=11, sampling=tk.InOrder(),
                                        options=small)))


def test_single_records_and_resume(written):
    root, _rows = written
    grain = tk.load_grain_source(root / "ds")
    singles = list(tk.load_tf_dataset(root / "ds", sampling=tk.InOrder()).as_numpy_iterator())
    for k, single in enumerate(singles):
        mine = grain[k]
        for part in ("values", "lengths", "step_lengths"):
            np.testing.assert_array_equal(mine["tokens"][part], single["tokens"][part])
        assert mine["tokens"]["values"].shape == single["tokens"]["values"].shape
    loader = tk.load_numpy_dataset(root / "ds", batch_size=3, seed=5)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    rest = [b["tokens"]["step_lengths"].tolist() for b in it]
    again = tk.load_numpy_dataset(root / "ds", batch_size=3, seed=5)
    again.load_state_dict(json.loads(json.dumps(state)))
    assert [b["tokens"]["step_lengths"].tolist() for b in again] == rest


def test_adopt_and_inspect_describe_feature_lists(written, tmp_path):
    from tfrecordkit.cli import main

    root, _rows = written
    manifest = tk.adopt([str(root / "tf.tfrecord")], tmp_path / "adopted")
    assert dict(manifest.schema) == {
        "bags": tk.FeatureList("string", (None,)), "frames": tk.FeatureList("float32", (2,)),
        "id": tk.Scalar("int64"), "tokens": tk.FeatureList("int64", (None,)),
        "words": tk.FeatureList("string")}
    ours = next(iter(tk.load_numpy_dataset(root / "ds", batch_size=11, sampling=tk.InOrder())))
    adopted = next(iter(tk.load_numpy_dataset(tmp_path / "adopted", batch_size=11,
                                              sampling=tk.InOrder())))
    order = np.argsort(adopted["id"])
    for key in ("tokens", "frames"):
        for part in ours[key]:
            np.testing.assert_array_equal(adopted[key][part][order], ours[key][part])
    assert main(["inspect", str(root / "tf.tfrecord"), "--json"]) == 0


def test_inspect_names_steps(written, capsys):
    from tfrecordkit.cli import main

    root, _ = written
    assert main(["inspect", str(root / "tf.tfrecord")]) == 0
    out = capsys.readouterr().out
    assert "SequenceExamples" in out
    assert "tokens  int64 list  0..3 steps x 0..3" in out
    assert "tf.io.RaggedFeature(tf.int64)" in out
    assert main(["inspect", str(root / "tf.tfrecord"), "--json"]) == 0
    tokens = json.loads(capsys.readouterr().out)["features"]["tokens"]
    assert tokens["sequence"] and (tokens["min_steps"], tokens["max_steps"]) == (0, 3)


# -- encoding, against TensorFlow's own messages ----------------------------------------------

_steps = st.lists(st.lists(st.integers(-2**63, 2**63 - 1), max_size=4), max_size=4)
_floats = st.floats(width=32, allow_nan=False, allow_infinity=False)
_frames = st.lists(st.lists(_floats, min_size=2, max_size=2), max_size=4)
_words = st.lists(st.binary(max_size=5), max_size=4)
_bags = st.lists(st.lists(st.binary(max_size=3), max_size=3), max_size=3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tokens=_steps, frames=_frames, words=_words, bags=_bags, swap=st.booleans())
def test_encoding_matches_tensorflow_both_ways(tokens, frames, words, bags, swap):
    row = {"id": 3, "tokens": tokens, "frames": np.asarray(frames, np.float32).reshape(-1, 2),
           "words": words, "bags": bags}
    ours = SCHEMA.encode(row)
    want = _oracle(ours)
    assert want["tokens"] == tokens and want["bags"] == bags
    assert list(want["words"]) == words
    np.testing.assert_array_equal(want["frames"], row["frames"])
    # TensorFlow's message (fields in either order on the wire) decodes to the same values.
    ex = tf.train.SequenceExample()
    ex.context.feature["id"].int64_list.value.append(3)
    for key, steps, kind in (("tokens", tokens, "int64_list"), ("frames", frames, "float_list"),
                             ("words", [[w] for w in words], "bytes_list"),
                             ("bags", bags, "bytes_list")):
        feature_list = ex.feature_lists.feature_list[key]
        for step in steps:
            getattr(feature_list.feature.add(), kind).value.extend(step)
    theirs = ex.SerializeToString()
    if swap:  # feature_lists before the context: protobuf reads fields in any order
        context = tf.train.SequenceExample(context=ex.context).SerializeToString()
        theirs = theirs[len(context):] + context if theirs.startswith(context) else theirs
    for decoded in (SCHEMA.decode(theirs), {k: v[0] for k, v in
                                            SCHEMA.decode_batch([theirs]).items()}):
        assert decoded["id"] == 3
        assert [s.tolist() for s in decoded["tokens"]] == tokens
        assert decoded["words"] == words and decoded["bags"] == bags
        np.testing.assert_array_equal(decoded["frames"], row["frames"])


def test_bad_values_and_records_are_named(tmp_path):
    with pytest.raises(SchemaError, match=r"tokens.*step 1.*int64"):
        SCHEMA.encode({**_row(1), "tokens": [[1], [0.5]]})
    with pytest.raises(SchemaError, match=r"frames.*step 0 has shape"):
        SCHEMA.encode({**_row(1), "frames": [[1.0, 2.0, 3.0]]})
    with pytest.raises(SchemaError, match="list of steps"):
        SCHEMA.encode({**_row(1), "words": "abc"})
    with pytest.raises(SchemaError, match="string steps"):
        tk.FeatureList("string", (2,))
    with pytest.raises(SchemaError, match="dtype"):
        tk.FeatureList("uint8")
    # A step of another type in a file: one error naming the file and the record.
    path = tmp_path / "bad.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(3):
            ex = tf.train.SequenceExample()
            ex.context.feature["id"].int64_list.value.append(i)
            step = ex.feature_lists.feature_list["tokens"].feature.add()
            (step.float_list if i == 2 else step.int64_list).value.extend([1, 2][: i + 1])
            writer.write(ex.SerializeToString())
    with pytest.raises(SchemaError, match=r"record 2 .*bad\.tfrecord.*'tokens': step 0 "
                                          r"holds float32"):
        list(tk.load_numpy_dataset(str(path), batch_size=3, sampling=tk.InOrder()))


def test_the_report_and_the_grid_show_feature_lists(written, tmp_path):
    """Looking at the data: the HTML report charts steps and values per step; the grid
    shows the records as a table (no images)."""
    from tfrecordkit.look import dataset_report

    root, _ = written
    for path in (root / "ds", str(root / "*.tfrecord")):
        page = dataset_report(path, "train", sample=11, seed=0)
        assert "tokens: steps" in page and "tokens: values per step" in page
        picture = tk.show_examples(path, "train", n=4, seed=0)
        assert picture.width > 0 and picture.height > 0


def test_pk_batches_and_triplets_carry_feature_lists(tmp_path):
    schema = tk.Schema({"label": tk.ClassLabel(["a", "b", "c"]),
                        "x": tk.FeatureList("int64", (None,)),
                        "f": tk.FeatureList("float32", (2,))})
    rows = [{"label": i % 3, "x": [list(range(t + i)) for t in range(i % 4)],
             "f": np.full((i % 3, 2), i, np.float32)} for i in range(30)]
    tk.write_dataset(rows, tmp_path / "pc", schema,
                     shards=tk.ShardOptions(layout="per_class"), progress=False)
    pk = {"sampling": tk.PK(2, 2), "seed": 3}
    mine = next(iter(tk.load_numpy_dataset(tmp_path / "pc", **pk)))
    theirs = next(iter(tk.load_tf_dataset(tmp_path / "pc", **pk)))
    for key, parts in (("x", ("values", "lengths", "step_lengths")),
                       ("f", ("values", "lengths"))):
        assert set(mine[key]) == set(parts)
        for part in parts:
            np.testing.assert_array_equal(mine[key][part], theirs[key][part].numpy())
    triplets = next(iter(tk.load_numpy_dataset(tmp_path / "pc", batch_size=4,
                                               sampling=tk.Triplets())))
    anchor = triplets["anchor"]
    for k in range(len(anchor["__id"])):
        steps = int(anchor["x"]["lengths"][k][0])
        widths = anchor["x"]["step_lengths"][k][:steps].tolist()
        label = int(anchor["label"][k])
        assert any(r["label"] == label and [len(s) for s in r["x"]] == widths for r in rows)


def _tf_values(data: bytes) -> dict | None:
    """TensorFlow's values of a record for SCHEMA, or None if it refuses the record."""
    try:
        return _oracle(data)
    except (tf.errors.InvalidArgumentError, ValueError):
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(i=st.integers(0, 20), edits=st.lists(
    st.tuples(st.sampled_from(["flip", "drop", "insert"]), st.integers(0, 10**6),
              st.integers(0, 255)), min_size=1, max_size=3))
def test_damaged_sequence_examples_are_refused_or_read_as_tensorflow_reads_them(i, edits):
    """Untrusted bytes: a valid record with a few bytes flipped, dropped or inserted. Our
    decoding raises a SchemaError or gives exactly TensorFlow's values; it never reads a
    record TensorFlow refuses (it may refuse some TensorFlow reads: protobuf's own parser
    refuses a few damaged wire forms TensorFlow's lenient one takes)."""
    data = bytearray(SCHEMA.encode(_row(i)))
    for kind, where, value in edits:
        at = where % (len(data) + (kind == "insert"))
        if kind == "flip" and data:
            data[at % len(data)] ^= value or 1
        elif kind == "drop" and data:
            del data[at % len(data)]
        elif kind == "insert":
            data.insert(at, value)
    record = bytes(data)
    want = _tf_values(record)
    try:
        got = {k: v[0] for k, v in SCHEMA.decode_batch([record]).items()}
    except SchemaError:
        return  # refused: stricter than TensorFlow's parser on damaged wire data is allowed
    assert want is not None, "we read a record TensorFlow refuses"
    assert got["id"] == want["id"]
    np.testing.assert_array_equal(np.asarray(got["frames"]).reshape(want["frames"].shape),
                                  want["frames"])
    assert [s.tolist() for s in got["tokens"]] == want["tokens"]
    assert got["words"] == list(want["words"]) and got["bags"] == want["bags"]

