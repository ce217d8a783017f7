"""parse_examples: the compiled codec against the protobuf path and against TensorFlow, on
arbitrary valid wire encodings, extreme values, and random or mutated bytes."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests import wire
from tfrecordkit import SchemaError, encode_example
from tfrecordkit.format import _columns
from tfrecordkit.format._columns import (
    RecordSlices,
    _parse_python,
    codec_name,
    parse_example,
    parse_examples,
)
from tfrecordkit.format._spec import KeySpec

COMPILED = codec_name() == "compiled"
SKIP_REASON = ("compiled-codec checks: the pure-Python codec is forced "
               "(TFRECORDKIT_PURE_PYTHON=1)" if os.environ.get("TFRECORDKIT_PURE_PYTHON")
               else "the C codec was not built (no compiler at install)")
needs_compiled = pytest.mark.skipif(not COMPILED, reason=SKIP_REASON)
KINDS = {"bytes": "string", "float": "float32", "int64": "int64"}


def _outcome(parse, records, specs):
    """What a codec makes of a batch: its columns, or the (key, record) of its error."""
    try:
        return "ok", parse(records, specs)
    except SchemaError as err:
        return "error", (err.feature if err.feature != "<record>" else "<record>", err.record)


def _same_columns(a, b):
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        assert x.values.dtype == y.values.dtype and x.values.shape == y.values.shape, key
        if x.values.dtype.kind == "f":
            assert np.array_equal(x.values, y.values, equal_nan=True), key
            assert np.array_equal(np.signbit(x.values), np.signbit(y.values)), key
        else:
            assert np.array_equal(x.values, y.values), key
        assert np.array_equal(x.row_splits, y.row_splits), key
        assert np.array_equal(x.missing, y.missing), key
        assert (x.offsets is None) == (y.offsets is None), key
        if x.offsets is not None:
            assert np.array_equal(x.offsets, y.offsets), key


def _python(records, specs):
    return _parse_python(records, specs, None)


def _agree(records, specs):
    compiled = _outcome(parse_examples, records, specs)
    python = _outcome(_python, records, specs)
    assert compiled[0] == python[0], (compiled, python)
    if compiled[0] == "ok":
        _same_columns(compiled[1], python[1])
    else:
        assert compiled[1] == python[1]
    return compiled


@st.composite
def batches(draw, odd=True):
    """A few arbitrary wire encodings, and specs for keys they may or may not hold."""
    cases = draw(st.lists(wire.examples(odd=odd), min_size=1, max_size=4))
    keys = draw(st.lists(wire.KEYS, unique=True, max_size=4))
    specs = []
    for key in keys:
        dtype = draw(st.sampled_from(["string", "float32", "int64"]))
        shape = draw(st.sampled_from([None, (), (1,), (2,)]))
        default = None
        if shape is not None and draw(st.booleans()):
            count = int(np.prod(shape))
            default = ([b"d"] * count if dtype == "string" else [7] * count) if count else None
        specs.append(wire_spec(key, dtype, shape, default))
    return [c[0] for c in cases], specs


def wire_spec(key, dtype, shape, default):
    return KeySpec(key, dtype, shape, default)


@needs_compiled
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_compiled_and_python_codecs_agree_on_arbitrary_encodings(batch):
    records, specs = batch
    _agree(records, specs)


@needs_compiled
@settings(max_examples=200)
@given(st.lists(wire.examples(), min_size=1, max_size=3))
def test_values_equal_a_full_protobuf_parse(cases):
    """Any layout protobuf accepts is refused (when TensorFlow would refuse or misread it:
    tests/format/test_codec_differential.py) or read with protobuf's values."""
    for wire_bytes, expected, _ in cases:
        if expected is None:  # a map entry protobuf drops: both codecs refuse the record
            with pytest.raises(SchemaError):
                parse_examples([wire_bytes], [])
            continue
        specs = [KeySpec(k, _dtype_of(v), None) for k, v in expected.items()]
        try:
            columns = parse_examples([wire_bytes], specs)
        except SchemaError:
            continue
        for key, value in expected.items():
            got = columns[key].row(0)
            if isinstance(value, np.ndarray):
                assert wire.same_value(np.asarray(got), value), key
            else:
                assert list(got) == list(value), key


def _dtype_of(value):
    if isinstance(value, np.ndarray):
        return "float32" if value.dtype.kind == "f" else "int64"
    return "string"


@needs_compiled
@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=64))
@example(b"\x0a\x02\x0a\x00")  # a map entry with no key or value
@example(b"\x0c")  # an unmatched end group
@example(b"\x0b\x0c")  # an empty group
@example(b"\x0a\x06\x0a\x04\x0a\x02\xff\xfe")  # a key that is not UTF-8
@example(b"\x08" + b"\xff" * 9 + b"\x7f")  # a ten-byte varint with high bits set
@example(b"\x08" + b"\xff" * 10 + b"\x01")  # an eleven-byte varint
def test_random_bytes_are_accepted_or_rejected_alike_by_both_codecs(data):
    _agree([data], [])
    _agree([data], [KeySpec("", "string", None), KeySpec("x", "int64", None)])


@needs_compiled
@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(wire.examples(), st.data())
def test_mutated_records_are_accepted_or_rejected_alike_by_both_codecs(case, data):
    record = bytearray(case[0])
    for _ in range(data.draw(st.integers(1, 3))):
        if not record:
            break
        at = data.draw(st.integers(0, len(record) - 1))
        action = data.draw(st.sampled_from(["flip", "drop", "insert"]))
        if action == "flip":
            record[at] ^= data.draw(st.integers(1, 255))
        elif action == "drop":
            del record[at]
        else:
            record.insert(at, data.draw(st.integers(0, 255)))
    _agree([bytes(record)], [KeySpec(k, "int64", None) for k in ("x", "label")])


def test_extreme_values_round_trip_in_both_codecs():
    values = {
        "f": np.array([np.nan, np.inf, -np.inf, -0.0, 3.4028235e38, 1e-45], np.float32),
        "i": np.array([-(2**63), 2**63 - 1, 0, -1], np.int64),
        "empty_f": np.array([], np.float32),
        "empty_i": np.array([], np.int64),
        "b": [b"", b"\xff\xfe\x00", "é".encode()],
        "empty_b": [],
    }
    record = encode_example(values)
    specs = [KeySpec("f", "float32", (6,)), KeySpec("i", "int64", None),
             KeySpec("empty_f", "float32", None), KeySpec("empty_i", "int64", (0,)),
             KeySpec("b", "string", (3,)), KeySpec("empty_b", "int64", None)]
    for parse in (parse_examples, _python):
        cols = parse([record] * 3, specs)
        assert np.array_equal(cols["f"].values[1], values["f"], equal_nan=True)
        assert np.signbit(cols["f"].values[2, 3])
        assert cols["i"].row(2).tolist() == values["i"].tolist()
        assert cols["empty_f"].row_splits.tolist() == [0, 0, 0, 0]
        assert cols["empty_i"].values.shape == (3, 0)
        assert cols["b"].to_bytes() == values["b"] * 3
        assert cols["empty_b"].values.size == 0  # an empty bytes list reads as any type


def test_duplicate_keys_keep_the_last_entry():
    first = wire.field(1, 2, wire.field(1, 2, b"x") + wire.field(2, 2, wire.field(
        3, 2, wire.field(1, 2, wire.varint(1)))))
    second = wire.field(1, 2, wire.field(1, 2, b"x") + wire.field(2, 2, wire.field(
        3, 2, wire.field(1, 2, wire.varint(2) + wire.varint(3)))))
    record = wire.field(1, 2, first + second)
    for parse in (parse_examples, _python):
        assert parse([record], [KeySpec("x", "int64", None)])["x"].row(0).tolist() == [2, 3]


def test_errors_name_the_key_and_the_record():
    good = encode_example({"x": [1, 2]})
    bad = encode_example({"x": [1.5]})
    for parse in (parse_examples, _python):
        with pytest.raises(SchemaError, match=r"record 1: feature 'x': key 'x' holds a float32"):
            parse([good, bad], [KeySpec("x", "int64", None)])
        with pytest.raises(SchemaError, match=r"record 0: feature 'x'.*holds 2 value"):
            parse([good], [KeySpec("x", "int64", (3,))])
        with pytest.raises(SchemaError, match=r"record 0: feature 'y'.*missing"):
            parse([good], [KeySpec("y", "int64", ())])
        with pytest.raises(SchemaError, match=r"record 0: feature '<record>'"):
            parse([b"\x0a\x05junk"], [])


def test_records_sliced_from_one_buffer_decode_without_copies():
    records = [encode_example({"x": [i, i + 1], "s": [b"v%d" % i]}) for i in range(50)]
    framing = b"HEAD"
    buffer = bytearray()
    offsets, lengths = [], []
    for r in records:
        buffer += framing
        offsets.append(len(buffer))
        lengths.append(len(r))
        buffer += r
    slices = RecordSlices(bytes(buffer), np.array(offsets), np.array(lengths))
    specs = [KeySpec("x", "int64", (2,)), KeySpec("s", "string", ())]
    _same_columns(parse_examples(slices, specs), _python(records, specs))
    with pytest.raises(ValueError, match="outside the buffer"):
        RecordSlices(b"abc", np.array([2]), np.array([5]))


@pytest.mark.integration
@settings(max_examples=100, deadline=None)
@given(st.lists(wire.examples(odd=False), min_size=1, max_size=4))
def test_values_equal_tf_io_parse_example(cases):
    tf = pytest.importorskip("tensorflow")
    records = [c[0] for c in cases if c[1] is not None]
    if not records:
        return
    keys = sorted({k for c in cases if c[1] is not None for k in c[1]})
    kinds = {}
    for c in cases:
        for k, v in (c[1] or {}).items():
            if not (isinstance(v, list) and not v):
                kinds.setdefault(k, _dtype_of(v))
    specs = [KeySpec(k, kinds.get(k, "int64"), None) for k in keys]
    if not specs:  # tf.io.parse_example needs at least one feature
        specs = [KeySpec("absent", "int64", None)]
    ours = _outcome(parse_examples, records, specs)
    description = {s.key: tf.io.RaggedFeature(getattr(tf, s.dtype)) for s in specs}
    try:
        theirs = tf.io.parse_example(tf.constant(records), description)
    except tf.errors.InvalidArgumentError:
        assert ours[0] == "error"
        return
    assert ours[0] == "ok"
    for spec in specs:
        column = ours[1][spec.key]
        ragged = theirs[spec.key]
        assert column.row_splits.tolist() == ragged.row_splits.numpy().tolist()
        if spec.dtype == "string":
            assert column.to_bytes() == ragged.flat_values.numpy().tolist()
        else:
            assert wire.same_value(column.values, ragged.flat_values.numpy())


def test_pure_python_is_chosen_by_the_environment():
    code = ("from tfrecordkit.format._columns import codec_name; print(codec_name())")
    env = {**os.environ, "TFRECORDKIT_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "python"


def _at_level(level, body):
    """``body`` placed inside the Example (0), Features (1), a Feature (3) or an Int64List (4)."""
    if level == 0:
        return body
    if level == 1:
        return wire.field(1, 2, body)
    value = body if level == 3 else wire.field(3, 2, body)
    entry = wire.field(1, 2, b"x") + wire.field(2, 2, value)
    return wire.field(1, 2, wire.field(1, 2, entry))


@pytest.mark.parametrize("level", [0, 1, 3, 4])
def test_nesting_depth_limit_is_protobufs(level):
    for depth in range(94, 103):
        groups = b"\x13" * depth + b"\x14" * depth  # nested groups of an unknown field 2
        _agree([_at_level(level, groups)], [])


def test_large_batches_split_across_threads_give_the_same_columns_and_errors():
    records = [encode_example({"x": list(range(i % 7)), "s": [b"r%d" % i], "f": [i / 3]})
               for i in range(5000)]
    specs = [KeySpec("x", "int64", None), KeySpec("s", "string", ()),
             KeySpec("f", "float32", (1,)), KeySpec("d", "int64", (2,), default=[1, 2])]
    _same_columns(parse_examples(records, specs), _python(records, specs))
    broken = [*records[:4000], encode_example({"x": [1.5]}), *records[4000:]]
    for parse in (parse_examples, _python):
        with pytest.raises(SchemaError, match=r"record 4000: feature 'x'"):
            parse(broken, specs)


class _FillWith:
    """The compiled codec, its fill handed ``saved`` (a scan's findings) of another choice."""

    def __init__(self, codec, saved):
        self.codec, self.saved = codec, saved

    def scan(self, *args):
        return self.codec.scan(*args)

    def fill(self, records, specs, outs, saved=None):
        return self.codec.fill(records, specs, outs, *self.saved(records, specs, saved))


@needs_compiled
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(batches(odd=True), batches(odd=True))
def test_a_fill_reusing_its_scan_equals_one_locating_again(batch, other):
    """The fill reuses where the scan found each key; without that, or handed what a scan of
    other records found (refused, so it locates again), it writes the same columns."""
    from tfrecordkit.format import _columns

    records, specs = batch
    reused = _outcome(parse_examples, records, specs)
    codec = _columns._CODEC
    # Another batch of the same size: same count, other record pointers.
    others = (other[0] * len(records))[: len(records)]
    others_parse = _outcome(parse_examples, others, specs)[0] == "ok"
    for choice in (lambda r, s, saved: (),  # no saved findings: locate again
                   lambda r, s, saved: (codec.scan(others, s, True)[1],) if others_parse
                   else ()):
        _columns._CODEC = _FillWith(codec, choice)
        try:
            again = _outcome(parse_examples, records, specs)
        finally:
            _columns._CODEC = codec
        assert reused[0] == again[0]
        if reused[0] == "ok":
            _same_columns(reused[1], again[1])
        else:
            assert reused[1] == again[1]


@needs_compiled
def test_what_a_scan_found_is_used_only_for_its_own_records_and_keys(monkeypatch):
    """A fill handed another scan's findings (other records, or the same records scanned for
    other keys in the same number) locates the keys again; batches too large to keep the
    findings, or to share their row splits, give the same columns."""
    from tfrecordkit.format import _columns

    records = [encode_example({"a": [i, i + 1], "b": float(i), "c": b"x" * (i % 4)})
               for i in range(40)]
    specs = [KeySpec("a", "int64", (2,)), KeySpec("b", "float32", ()),
             KeySpec("c", "string", None)]
    want = parse_examples(records, specs)
    codec = _columns._CODEC
    swapped = _columns._spec_args([KeySpec("b", "float32", ()), KeySpec("a", "int64", (2,)),
                                   KeySpec("c", "string", None)])
    others = [encode_example({"a": [7, 7], "b": 1.0, "c": b"y"}) for _ in records]
    for found in (codec.scan(records, swapped, True)[1],
                  codec.scan(others, _columns._spec_args(specs), True)[1]):
        handed = _FillWith(codec, lambda r, s, saved, found=found: (found,))
        monkeypatch.setattr(_columns, "_CODEC", handed)
        _same_columns(parse_examples(records, specs), want)
    monkeypatch.setattr(_columns, "_CODEC", codec)
    monkeypatch.setattr(_columns, "_KEEP_MAX", 0)
    monkeypatch.setattr(_columns, "_SHARED_SPLITS_MAX", 0)
    _same_columns(parse_examples(records, specs), want)
    _same_columns(parse_examples(RecordSlices(b"".join(records),
                                              np.cumsum([0] + [len(r) for r in records[:-1]]),
                                              [len(r) for r in records]), specs), want)


# -- one record: parse_example -----------------------------------------------------------------

def _same_value(a, b, key):
    assert type(a) is type(b), (key, a, b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, key
        if a.dtype.kind == "f":
            assert np.array_equal(a, b, equal_nan=True), key
            assert np.array_equal(np.signbit(a), np.signbit(b)), key
        else:
            assert np.array_equal(a, b), key
    elif isinstance(a, np.floating):
        assert np.array_equal(a, b, equal_nan=True) and np.signbit(a) == np.signbit(b), key
    else:
        assert a == b, key


def _one_outcome(parse, record, specs):
    try:
        return "ok", parse(record, specs)
    except SchemaError as err:
        return "error", (err.feature, err.record)


def _one_agrees(record, specs, monkeypatch):
    """parse_example (compiled) against record 0 of parse_examples, and against the
    protobuf path: the same values and types, or the same error."""
    specs = tuple(specs)
    one = _one_outcome(lambda r, s: parse_example(r, s, where="r7"), record, specs)
    batch = _outcome(parse_examples, [record], specs)
    assert one[0] == batch[0], (one, batch)
    with monkeypatch.context() as m:
        m.setattr(_columns, "_CODEC", None)
        python = _one_outcome(lambda r, s: parse_example(r, s, where="r7"), record, specs)
    assert one[0] == python[0], (one, python)
    if one[0] == "error":
        assert one[1] == python[1] and one[1][1] == "r7"
        assert one[1][0] == batch[1][0]
        return
    for spec in specs:
        _same_value(one[1][spec.key], python[1][spec.key], spec.key)
        column = batch[1][spec.key]
        if spec.shape is None:
            expected = column.row(0)
            if spec.dtype == "string":
                assert one[1][spec.key] == list(expected), spec.key
            else:
                _same_value(one[1][spec.key], np.asarray(expected), spec.key)


@needs_compiled
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow,
                                                    HealthCheck.function_scoped_fixture])
@given(batches())
def test_one_record_parses_as_its_row_of_a_batch_on_arbitrary_encodings(monkeypatch, batch):
    records, specs = batch
    for record in records:
        _one_agrees(record, specs, monkeypatch)


@needs_compiled
@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow,
                                                    HealthCheck.function_scoped_fixture])
@given(wire.examples(), st.data())
def test_one_mutated_record_is_accepted_or_rejected_as_a_batch_of_it(monkeypatch, case, data):
    record = bytearray(case[0])
    for _ in range(data.draw(st.integers(1, 3))):
        if not record:
            break
        at = data.draw(st.integers(0, len(record) - 1))
        record[at] ^= data.draw(st.integers(1, 255))
    _one_agrees(bytes(record), [KeySpec(k, d, None) for k, d in (
        ("x", "int64"), ("label", "float32"), ("", "string"))], monkeypatch)


def test_one_record_values_are_writable_and_defaults_fill_absent_keys():
    record = encode_example({"a": np.array([1, 2], np.int64), "s": [b"x"]})
    got = parse_example(record, (KeySpec("a", "int64", (2,)), KeySpec("s", "string", ()),
                                 KeySpec("m", "float32", (2,), default=0.5),
                                 KeySpec("t", "string", (), default="none"),
                                 KeySpec("v", "int64", None)))
    assert got["a"].tolist() == [1, 2] and got["s"] == b"x" and got["t"] == b"none"
    assert got["m"].tolist() == [0.5, 0.5] and got["v"].dtype == np.int64 and got["v"].size == 0
    got["a"][0] = 9  # a fresh array, not a view of the record
    got["m"][0] = 9
    with pytest.raises(SchemaError, match="record rec 3: feature 'a': key 'a' holds 2"):
        parse_example(record, (KeySpec("a", "int64", (3,)),), where="rec 3")


@needs_compiled
def test_bytes_columns_split_into_python_bytes_in_one_call():
    records = [encode_example({"s": [b"ab", b"", b"cde"]}), encode_example({"s": [b"\x00" * 5]})]
    column = parse_examples(records, [KeySpec("s", "string", None)])["s"]
    assert column.to_bytes() == [b"ab", b"", b"cde", b"\x00" * 5]
    split = _columns._CODEC.split_bytes
    with pytest.raises(ValueError, match="offsets"):
        split(np.zeros(4, np.uint8), np.array([0, 5], np.int64))  # past the values
    with pytest.raises(ValueError, match="offsets"):
        split(np.zeros(4, np.uint8), np.array([2, 1], np.int64))  # out of order
    assert split(np.frombuffer(b"xyz", np.uint8), np.array([0], np.int64)) == []


@st.composite
def _spans(draw):
    data = draw(st.binary(max_size=200))
    pairs = draw(st.lists(st.tuples(st.integers(0, len(data)), st.integers(0, len(data))),
                          max_size=20))
    spans = [(min(a, b), abs(a - b)) for a, b in pairs]
    return data, spans


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
@given(case=_spans(), room=st.integers(0, 8))
@settings(max_examples=150)
def test_gathered_spans_equal_the_slices_joined(compiled, case, room):
    if compiled and not COMPILED:
        pytest.skip(SKIP_REASON)
    data, spans = case
    want = b"".join(data[o : o + n] for o, n in spans)
    out = np.full(len(want) + room, 7, np.uint8)
    offsets = np.array([o for o, _ in spans], np.int64)
    lengths = np.array([n for _, n in spans], np.int64)
    codec = _columns._CODEC
    _columns._CODEC = codec if compiled else None
    try:
        got = _columns.gather_spans(data, offsets, lengths, out)
        assert bytes(got) == want and (out[len(want):] == 7).all()
        if spans and want:  # a span past the data, or an output a byte too small: refused
            with pytest.raises(ValueError, match="outside the data"):
                _columns.gather_spans(data, offsets + len(data) + 1, lengths, out)
            with pytest.raises(ValueError, match="do not fit"):
                _columns.gather_spans(data, offsets, lengths, out[: len(want) - 1])
    finally:
        _columns._CODEC = codec
