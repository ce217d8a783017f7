"""Our two codecs against protobuf (upb) and ``tf.io.parse_example`` on wire-level mutations of
valid Examples: padded and overlong varints in tags, lengths and values, wrong wire types, a
malformed list before a valid one, unknown fields, truncations and byte flips.

The rule: a codec of ours accepts a record only if protobuf and TensorFlow both accept it, and
then with their values; the compiled and the pure-Python codec always agree.
"""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from tests.wire import varint
from tfrecordkit.errors import TFRecordKitError
from tfrecordkit.format import KeySpec, codec_name, parse_examples
from tfrecordkit.format._columns import _parse_python

pytestmark = pytest.mark.integration
tf = pytest.importorskip("tensorflow")
example_pb2 = pytest.importorskip("tensorflow.core.example.example_pb2")

CASES = 3000
KINDS = {1: "string", 2: "float32", 3: "int64"}
TF_DTYPES = {"string": tf.string, "float32": tf.float32, "int64": tf.int64}


def _varint(n: int, pad: int = 0) -> bytes:
    """``n`` as a varint, padded with ``pad`` extra continuation bytes (non-minimal)."""
    out = bytearray(varint(n))
    for _ in range(pad):
        out[-1] |= 0x80
        out.append(0)
    return bytes(out)


class Writer:
    """Builds an Example's wire bytes, padding varints or bending fields at random."""

    def __init__(self, rng: random.Random, mutate: float) -> None:
        self.rng, self.mutate = rng, mutate

    def pad(self) -> int:
        return self.rng.choice([1, 2, 4, 5, 6, 9]) if self.rng.random() < self.mutate else 0

    def field(self, number: int, payload: bytes) -> bytes:
        wire = 2
        if self.rng.random() < self.mutate / 4:
            wire = self.rng.choice([0, 1, 3, 5, 6, 7])  # the wrong wire type
        return _varint(number << 3 | wire, self.pad()) + _varint(len(payload), self.pad()) \
            + payload

    def values(self, kind: int, values: list) -> bytes:
        rng = self.rng
        if kind == 1:
            return b"".join(self.field(1, v) for v in values)
        if kind == 2:
            packed = struct.pack(f"<{len(values)}f", *values)
            if rng.random() < self.mutate / 3:
                packed = packed[: max(0, len(packed) - rng.randint(1, 3))]  # not 4k bytes
            if rng.random() < 0.3:  # unpacked fixed32 values
                return b"".join(_varint(1 << 3 | 5) + struct.pack("<f", v) for v in values)
            return self.field(1, packed)
        packed = b"".join(_varint(v, self.rng.choice([0, 0, 0, 3, 5])
                                  if rng.random() < self.mutate else 0) for v in values)
        if rng.random() < 0.3:  # unpacked varints
            return b"".join(_varint(1 << 3 | 0) + _varint(v) for v in values)
        return self.field(1, packed)

    def feature(self, kind: int, values: list) -> bytes:
        body = b""
        if self.rng.random() < self.mutate / 2:  # another list first, maybe malformed
            other = self.rng.choice([k for k in KINDS if k != kind])
            body += self.field(other, self.values(other, _values(self.rng, other)))
            if self.rng.random() < 0.5:
                body = body[:-1] + b"\xff"
        body += self.field(kind, self.values(kind, values))
        if self.rng.random() < self.mutate / 3:  # an unknown field
            body += _varint(9 << 3 | 0) + _varint(self.rng.randrange(1 << 40))
        return body

    def example(self, features: dict[str, tuple[int, list]]) -> bytes:
        entries = b""
        for key, (kind, values) in features.items():
            entry = self.field(1, key.encode()) + self.field(2, self.feature(kind, values))
            entries += self.field(1, entry)
        return self.field(1, entries)


def _values(rng: random.Random, kind: int) -> list:
    n = rng.randint(0, 4)
    if kind == 1:
        return [bytes(rng.randrange(256) for _ in range(rng.randint(0, 5))) for _ in range(n)]
    if kind == 2:
        return [float(np.float32(rng.uniform(-1e6, 1e6))) for _ in range(n)]
    return [rng.randrange(-(2**63), 2**63) for _ in range(n)]


def _protobuf(wire: bytes, specs: list[KeySpec]):
    try:
        message = example_pb2.Example.FromString(wire)
    except Exception:
        return None
    out = {}
    for spec in specs:
        feature = message.features.feature.get(spec.key)
        kind = feature.WhichOneof("kind") if feature is not None else None
        if kind is not None and {"bytes_list": "string", "float_list": "float32",
                                 "int64_list": "int64"}[kind] != spec.dtype:
            return None  # parse_example would refuse the type: so must we
        out[spec.key] = [] if kind is None else list(getattr(feature, kind).value)
    return out


def _tensorflow(wire: bytes, specs: list[KeySpec]):
    try:
        parsed = tf.io.parse_example(
            [wire], {s.key: tf.io.RaggedFeature(TF_DTYPES[s.dtype]) for s in specs})
    except (tf.errors.InvalidArgumentError, UnicodeDecodeError):
        return None
    return {key: value.to_list()[0] for key, value in parsed.items()}


def _ours(parse, wire: bytes, specs: list[KeySpec]):
    try:
        columns = parse([wire], specs, None)
    except TFRecordKitError:
        return None
    out = {}
    for spec in specs:
        column = columns[spec.key]
        if spec.dtype == "string":
            out[spec.key] = list(column.to_bytes())  # one record: all its values
        else:
            out[spec.key] = column.values[column.row_splits[0]:column.row_splits[1]].tolist()
    return out


def _same(a: dict, b: dict) -> bool:
    for key, x in a.items():
        y = b[key]
        if len(x) != len(y):
            return False
        for u, v in zip(x, y, strict=True):
            if isinstance(u, float) and (u != v) and not (np.isnan(u) and np.isnan(v)):
                return False
            if not isinstance(u, float) and u != v:
                return False
    return True


def test_our_codecs_accept_only_what_protobuf_and_tensorflow_both_accept():
    assert codec_name() == "compiled" or pytest.skip("the compiled codec is not built")
    rng = random.Random(20261124)
    counts = {"accepted": 0, "refused": 0, "lenient_peers": 0}
    for case in range(CASES):
        features = {f"k{j}": (kind, _values(rng, kind)) for j, kind in
                    enumerate(rng.choice(list(KINDS)) for _ in range(rng.randint(1, 3)))}
        specs = [KeySpec(key, KINDS[kind], None) for key, (kind, _) in features.items()]
        wire = Writer(rng, mutate=0.0 if case % 10 == 0 else 0.04).example(features)
        if case % 7 == 3:
            wire = wire[: rng.randrange(len(wire))]  # truncated
        elif case % 7 == 5:
            flipped = bytearray(wire)
            flipped[rng.randrange(len(wire))] ^= 1 << rng.randrange(8)
            wire = bytes(flipped)
        compiled = _ours(lambda r, s, w: parse_examples(r, s), wire, specs)
        python = _ours(_parse_python, wire, specs)
        assert (compiled is None) == (python is None), (case, wire.hex())
        if compiled is not None:
            assert _same(compiled, python), (case, wire.hex())
        peers = _protobuf(wire, specs), _tensorflow(wire, specs)
        if compiled is None:
            counts["refused"] += 1
            if all(p is not None for p in peers) and _same(*peers):
                counts["lenient_peers"] += 1  # stricter than both: allowed, counted
            continue
        counts["accepted"] += 1
        assert peers[0] is not None, ("protobuf refuses what we accept", case, wire.hex())
        assert peers[1] is not None, ("TensorFlow refuses what we accept", case, wire.hex())
        assert _same(compiled, peers[0]) and _same(compiled, peers[1]), (case, wire.hex())
        if case % 10 == 0 and case % 7 not in (3, 5):  # an unmutated record
            assert compiled == peers[0]
    assert counts["accepted"] > CASES // 5 and counts["refused"] > CASES // 5, counts
    # Stricter than both peers only rarely, and on purpose: a padded tag (no writer pads
    # one; TensorFlow misreads most of them) or a field beside a Feature's value list.
    assert counts["lenient_peers"] < CASES // 25, counts


def test_the_issue_record_is_refused_by_both_codecs():
    wire = bytes.fromhex("0a130a110a0161120c12050a030000001a030a0107")
    specs = [KeySpec("a", "int64", None)]
    assert _ours(lambda r, s, w: parse_examples(r, s), wire, specs) is None
    assert _ours(_parse_python, wire, specs) is None
    assert _protobuf(wire, specs) is None
