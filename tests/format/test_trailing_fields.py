"""Unknown fields where TensorFlow and protobuf both read a record alike are skipped, and where
they differ the record is refused, by both codecs: each layout below is probed against
``tf.io.parse_example`` (the oracle), as the docs promise ("unknown fields are skipped")."""

from __future__ import annotations

import struct

import pytest

import tfrecordkit as tk
from tfrecordkit.format._wire import varint

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")


def _ld(field: int, payload: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def _example(feature: bytes) -> bytes:
    return _ld(1, _ld(1, _ld(1, b"x") + _ld(2, feature)))


UNKNOWN = {"varint": varint(5 << 3) + varint(7), "fixed32": varint(5 << 3 | 5) + bytes(4),
           "fixed64": varint(5 << 3 | 1) + bytes(8), "bytes": _ld(5, b"ab"),
           "group": varint(5 << 3 | 3) + varint(5 << 3 | 4)}
LISTS = {
    ("float", "packed"): (2, _ld(1, struct.pack("<2f", 1.5, 2.5))),
    ("float", "unpacked"): (2, b"".join(varint(1 << 3 | 5) + struct.pack("<f", v)
                                        for v in (1.5, 2.5))),
    ("int", "packed"): (3, _ld(1, varint(4) + varint(5))),
    ("int", "unpacked"): (3, varint(8) + varint(4) + varint(8) + varint(5)),
    ("bytes", "one"): (1, _ld(1, b"ab")),
}
DTYPES = {"float": tf.float32, "int": tf.int64, "bytes": tf.string}
CASES = [(kind, form, unknown, where) for (kind, form) in LISTS for unknown in UNKNOWN
         for where in ("list-before", "list-after", "feature-before", "feature-after")]


def _layout(kind: str, form: str, unknown: str, where: str) -> bytes:
    field, values = LISTS[(kind, form)]
    extra = UNKNOWN[unknown]
    if where == "list-before":
        return _example(_ld(field, extra + values))
    if where == "list-after":
        return _example(_ld(field, values + extra))
    if where == "feature-before":
        return _example(extra + _ld(field, values))
    return _example(_ld(field, values) + extra)


def _tensorflow(record: bytes, kind: str) -> list | None:
    try:
        parsed = tf.io.parse_example([record], {"x": tf.io.VarLenFeature(DTYPES[kind])})
    except tf.errors.InvalidArgumentError:
        return None
    return parsed["x"].values.numpy().tolist()


@pytest.mark.parametrize(("kind", "form", "unknown", "where"), CASES)
def test_unknown_fields_are_read_exactly_where_tensorflow_reads_them(kind, form, unknown,
                                                                     where):
    record = _layout(kind, form, unknown, where)
    expected = _tensorflow(record, kind)
    spec = tk.format.KeySpec("x", {"float": "float32", "int": "int64",
                                   "bytes": "string"}[kind], None)
    try:
        ours = tk.format.decode_example(record)["x"]
    except tk.RecordFormatError:
        ours = None
    try:
        column = tk.format.parse_examples([record], [spec])["x"]
        columnar = (column.to_bytes() if kind == "bytes" else column.values.tolist())
    except (tk.SchemaError, tk.RecordFormatError):
        columnar = None
    if expected is None:
        assert ours is None and columnar is None
    else:
        assert list(ours) == expected and list(columnar) == expected
