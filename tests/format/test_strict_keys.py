"""``parse_examples(strict=True)``: a record holding a key no spec names is refused, by the
compiled codec and the protobuf path alike, on any wire encoding of the record."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from tests import wire
from tfrecordkit import SchemaError, encode_example
from tfrecordkit.format._columns import RecordSlices, _parse_python, parse_examples
from tfrecordkit.format._spec import KeySpec

SPECS = [KeySpec("x", "int64", ()), KeySpec("name", "string", None)]


@pytest.mark.parametrize("parse", [parse_examples, _parse_python])
def test_an_undescribed_key_is_refused_naming_it_and_the_record(parse):
    records = [encode_example({"x": [1], "name": [b"a"]}),
               encode_example({"x": [2], "name": [b"b"], "late key": [0.5]})]
    kwargs = {"strict": True} if parse is parse_examples else {}
    args = (None, True) if parse is _parse_python else ()
    with pytest.raises(SchemaError, match=r"record 1: .*holds key 'late key', which the "
                                          r"schema does not describe"):
        parse(records, SPECS, *args, **kwargs)
    parse(records, SPECS, *((None,) if parse is _parse_python else ()))  # not strict: read


def test_keys_the_specs_name_pass_and_a_long_key_is_cut():
    ok = [encode_example({"x": [i], "name": [b"a"] * i}) for i in range(4)]
    assert parse_examples(ok, SPECS, strict=True)["x"].values.tolist() == [0, 1, 2, 3]
    long = encode_example({"x": [1], "name": [], "k" * 500: [1]})
    with pytest.raises(SchemaError, match=r"'k{80}\.\.\.'"):
        parse_examples([long], SPECS, strict=True)
    buffer = b"".join(ok)
    offsets = np.cumsum([0] + [len(r) for r in ok[:-1]])
    slices = RecordSlices(buffer, offsets, np.array([len(r) for r in ok]))
    assert parse_examples(slices, SPECS, strict=True)["x"].values.tolist() == [0, 1, 2, 3]


@settings(max_examples=200, deadline=None)
@given(example=wire.examples())
def test_on_any_wire_encoding_both_codecs_refuse_exactly_records_with_a_key(example):
    """No specs: strict refuses a record iff it holds any key, whatever its layout."""
    record, expected, _ = example
    if expected is None:  # a map entry protobuf would drop a field of: refused anyway
        return
    for parse, loose in ((lambda r: parse_examples(r, [], strict=True),
                          lambda r: parse_examples(r, [])),
                         (lambda r: _parse_python(r, [], None, True),
                          lambda r: _parse_python(r, [], None))):
        try:
            loose([record])
        except SchemaError:  # refused for what it is (as TensorFlow refuses it), strict or not
            continue
        if expected:
            with pytest.raises(SchemaError, match="does not describe"):
                parse([record])
        else:
            assert parse([record]) == {}
