"""Per-step values of a ``tf.train.SequenceExample`` (video frames, audio or sensor steps,
token sequences): a record's feature lists, beside its context features."""

from __future__ import annotations

import collections.abc
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from tfrecordkit.errors import SchemaError
from tfrecordkit.format import Column, KeySpec, feature_wire
from tfrecordkit.schema._base import (
    DecodeContext,
    Entries,
    EntryEncoder,
    Feature,
    _as_bytes,
    _float32_list,
)
from tfrecordkit.schema._layout import FeatureLayout, LayoutOptions, steps_layout

__all__ = ["FeatureList"]

_DTYPES = ("int64", "float32", "string")


@dataclass(frozen=True)
class FeatureList(Feature):
    """A record's steps, any number of them, each a list of ``dtype`` values of ``shape``
    (``()``: one value per step; ``(None,)``: steps of any length), stored as a
    ``tf.train.SequenceExample`` feature list. A schema holding one writes SequenceExamples:
    its other features are their context.

    Values: an array ``(steps, *shape)`` or a list of steps (each a value, or an array of
    ``shape``); with ``shape=(None,)``, a list of 1-D lists or arrays. ``None`` is no steps.
    Read back as ``(steps, *shape)`` arrays (strings: per-step bytes), or for ``(None,)``
    a list of the steps' arrays; batches give ``{"values", "lengths"}`` (and
    ``"step_lengths"`` for steps of any length), or ragged values on request.
    """

    dtype: str = "float32"
    shape: tuple[int | None, ...] = ()
    kind: ClassVar[str] = "feature_list"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        if self.dtype not in _DTYPES:
            raise SchemaError("<feature_list>", f"dtype must be one of {_DTYPES} (what an "
                                                f"Example list holds); got {self.dtype!r}")
        if self.shape != (None,) and any(
                not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in self.shape):
            raise SchemaError("<feature_list>", f"a step's shape is (), fixed sizes >= 1, or "
                                                f"(None,) for steps of any length; got "
                                                f"{self.shape}")
        if self.dtype == "string" and self.shape not in ((), (None,)):
            raise SchemaError("<feature_list>", f"string steps hold one value (shape ()) or "
                                                f"any number (None,); got {self.shape}")

    @property
    def varying_steps(self) -> bool:
        """Whether steps hold any number of values (their lengths are read too)."""
        return self.shape == (None,)

    @property
    def list_kind(self) -> Literal["bytes", "float", "int64"]:
        """The Example list each step is stored in."""
        return {"string": "bytes", "float32": "float", "int64": "int64"}[  # type: ignore[return-value]
            self.dtype]

    @property
    def format_need(self) -> tuple[int, str] | None:
        return 8, "feature lists (SequenceExample records)"

    def layout(self, name: str, options: LayoutOptions) -> FeatureLayout:
        return steps_layout(name, self.dtype, None if self.varying_steps
                            else tuple(int(d) for d in self.shape if d))

    @classmethod
    def from_json(cls, params: dict[str, Any], rebuild: Callable[[Any], Feature]) -> Feature:
        return cls(**{**params, "shape": tuple(params.get("shape", ()))})

    def key_specs(self, name: str) -> list[KeySpec]:
        step = None if self.varying_steps else tuple(int(d) for d in self.shape if d)
        return [KeySpec(name, self.dtype, step, sequence=True)]  # type: ignore[arg-type]

    def entry_encoder(self, name: str) -> EntryEncoder:
        def encode(value: Any) -> Entries:
            return []  # a feature list writes no context entry: see steps_encoder

        return encode

    def steps_encoder(self, name: str) -> Callable[[Any], list[bytes]]:
        """A function turning one value into its steps' serialized ``Feature`` messages."""
        kind = self.list_kind
        width = None if self.varying_steps else math.prod(self.shape)  # type: ignore[arg-type]

        def step_values(t: int, step: Any) -> Any:
            values: Any
            if kind == "bytes":
                items = [step] if width == 1 and isinstance(step, str | bytes | np.bytes_) \
                    else step
                if isinstance(items, str | bytes) or not isinstance(
                        items, collections.abc.Sequence | np.ndarray):
                    raise SchemaError(name, f"step {t}: expected a list of strings, got "
                                            f"{type(items).__name__}")
                values = [_as_bytes(name, v) for v in items]
            else:
                array = np.asarray(step)
                if array.size == 0 and array.dtype.kind not in "SUO":
                    array = array.astype(np.float32 if kind == "float" else np.int64)
                if array.dtype.kind not in ("fiub" if kind == "float" else "iub") or (
                        array.dtype.kind == "u" and array.dtype.itemsize == 8
                        and array.size and int(array.max()) >= 2**63):
                    raise SchemaError(name, f"step {t}: expected {self.dtype} numbers, got "
                                            f"{array.dtype} {step!r:.60}")
                if width is not None and array.shape not in (tuple(self.shape),
                                                             (width,)):
                    raise SchemaError(name, f"step {t} has shape {array.shape}; every step "
                                            f"has shape {self.shape}")
                if width is None and array.ndim != 1:
                    raise SchemaError(name, f"step {t} has shape {array.shape}; steps of any "
                                            "length are 1-D")
                flat = array.reshape(-1)
                values = (_float32_list(name, flat) if kind == "float"
                          else flat.astype(np.int64))
            if width is not None and len(values) != width:
                raise SchemaError(name, f"step {t} holds {len(values)} values; every step "
                                        f"holds {width}")
            return values

        def encode(value: Any) -> list[bytes]:
            if value is None:
                return []
            if isinstance(value, str | bytes) or not isinstance(
                    value, collections.abc.Sequence | np.ndarray):
                raise SchemaError(name, f"expected a list of steps, got {type(value).__name__}")
            return [feature_wire(kind, step_values(t, step)) for t, step in enumerate(value)]

        return encode

    def decode(self, name: str, features: Mapping[str, Any]) -> Any:
        return features.get(name, [])

    def decode_column(self, name: str, columns: Mapping[str, Column], n: int,
                      where: Callable[[int], Any], context: DecodeContext) -> Any:
        return columns[name]  # parsed per record by parse_feature_lists
