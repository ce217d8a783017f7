"""Each feature kind owns its reading: outside ``tfrecordkit/schema/`` no code asks
``isinstance(x, <a Feature subclass>)`` (it asks the kind or ``Schema.of_kind``; tf.data
imports the op the kind names). Names are resolved through each module's imports, so
``torch.Tensor`` or ``collections.abc.Sequence`` are not mistaken for the schema's kinds."""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar  # at module level: a dataclass reads `kind: ClassVar[...]` here

import pytest

import tfrecordkit.schema as schema_package
from tfrecordkit.schema import Feature

PACKAGE = Path(schema_package.__file__).resolve().parent.parent  # src/tfrecordkit
KINDS = {name for name, obj in vars(schema_package).items()
         if inspect.isclass(obj) and issubclass(obj, Feature)}
SCHEMA_MODULES = ("tfrecordkit", "tfrecordkit.schema")


def _bindings(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """Local names bound to a kind (local name -> kind), and local names of the modules
    that export the kinds (``tk``, ``schema``)."""
    kinds: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module in SCHEMA_MODULES or node.module.startswith("tfrecordkit.schema.")):
            for alias in node.names:
                if alias.name in KINDS:
                    kinds[alias.asname or alias.name] = alias.name
                elif alias.name == "schema" and node.module == "tfrecordkit":
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in SCHEMA_MODULES:
                    modules.add(alias.asname or alias.name.split(".")[0])
    return kinds, modules


def _classes(node: ast.expr) -> list[ast.expr]:
    """The classes an isinstance's second argument names (a tuple, ``A | B``, or one)."""
    if isinstance(node, ast.Tuple):
        return [c for e in node.elts for c in _classes(e)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _classes(node.left) + _classes(node.right)
    return [node]


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def kind_checks(source: str) -> list[tuple[int, str]]:
    """``(line, kind)`` of every ``isinstance`` against a Feature subclass in ``source``."""
    tree = ast.parse(source)
    kinds, modules = _bindings(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance" and len(node.args) == 2):
            continue
        for cls in _classes(node.args[1]):
            name = _dotted(cls)
            if name is None:
                continue
            head, _, attr = name.rpartition(".")
            if not head and name in kinds:
                found.append((node.lineno, kinds[name]))
            elif head and attr in KINDS and (head in modules or head.startswith(
                    "tfrecordkit.schema") or head == "tfrecordkit"):
                found.append((node.lineno, attr))
    return found


def test_the_checker_finds_what_it_should_and_nothing_else():
    source = """
import collections.abc
import tensorflow as tf
import torch
import tfrecordkit as tk
from tfrecordkit import schema as s
from tfrecordkit.schema import Image, Audio as Sound
from tfrecordkit.schema._tensor import Tensor
isinstance(a, Image)
isinstance(b, (Sound, int))
isinstance(c, Image | Tensor)
isinstance(d, tk.ClassLabel)
isinstance(e, s.Sequence)
isinstance(f, torch.Tensor)
isinstance(g, tf.Tensor)
isinstance(h, collections.abc.Sequence)
isinstance(i, str | bytes)
"""
    assert kind_checks(source) == [(9, "Image"), (10, "Audio"), (11, "Image"), (11, "Tensor"),
                                   (12, "ClassLabel"), (13, "Sequence")]
    assert {"Image", "Audio", "Text", "Tensor", "Scalar", "ClassLabel", "Sequence",
            "FeatureList"} <= KINDS


def test_no_isinstance_on_feature_kinds_outside_schema():
    offenders = []
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 100 and (PACKAGE / "readers" / "tf_data" / "_ops.py") in modules
    for path in modules:
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "schema":
            continue
        offenders += [f"{relative}:{line} isinstance(..., {kind})"
                      for line, kind in kind_checks(path.read_text())]
    assert offenders == [], ("ask the kind (a Feature method), Schema.of_kind / feature_as, "
                             "or the tf.data op table instead:\n" + "\n".join(offenders))


def test_a_new_kind_registers_itself_and_survives_the_manifest(tmp_path):
    """A kind is one class: defining it (here a Scalar of its own kind) registers it, so a
    manifest naming it rebuilds it and the readers read it (no table to edit)."""
    import numpy as np

    import tfrecordkit as tk

    @dataclass(frozen=True)
    class Stars(tk.Scalar):
        kind: ClassVar[str] = "test_stars"

    assert Feature.registry["test_stars"] is Stars
    assert tk.Scalar.kind == "scalar" and Feature.registry["scalar"] is tk.Scalar
    schema = tk.Schema({"stars": Stars("int64"), "n": tk.Scalar("int64")})
    assert tk.Schema.from_json(schema.to_json()) == schema
    tk.write_dataset(({"stars": i % 5, "n": i} for i in range(12)), tmp_path / "ds", schema,
                     progress=False)
    assert tk.load_manifest(tmp_path / "ds").schema["stars"] == Stars("int64")
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=12,
                                            sampling=tk.InOrder())))
    assert np.array_equal(batch["stars"], batch["n"] % 5)


def doubled(feature, parsed, name, how):
    """The in-graph decoding of the test kind below: its stored values doubled."""
    return parsed[name] * 2


@pytest.mark.integration
def test_a_new_kind_decodes_in_tf_data_from_its_own_module(tmp_path):
    """A kind names its tf.data op itself (``tf_decoder``): the NumPy and tf.data readers
    decode it alike with no table of the library edited."""
    pytest.importorskip("tensorflow")
    import numpy as np

    import tfrecordkit as tk

    @dataclass(frozen=True)
    class Doubled(tk.Scalar):
        kind: ClassVar[str] = "test_doubled"
        tf_decoder: ClassVar[str | None] = "tests.test_feature_kinds:doubled"

        def decode_column(self, name, columns, n, where, context):
            return super().decode_column(name, columns, n, where, context) * 2

    schema = tk.Schema({"d": Doubled("int64"), "n": tk.Scalar("int64")})
    tk.write_dataset(({"d": i, "n": i} for i in range(10)), tmp_path / "ds", schema,
                     progress=False)
    kw = dict(batch_size=10, sampling=tk.InOrder())
    ours = next(iter(tk.load_numpy_dataset(tmp_path / "ds", **kw)))
    theirs = next(iter(tk.load_tf_dataset(tmp_path / "ds", **kw)))
    assert np.array_equal(ours["d"], 2 * ours["n"])
    assert np.array_equal(theirs["d"].numpy(), ours["d"])
