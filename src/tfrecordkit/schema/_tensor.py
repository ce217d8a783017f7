"""N-d arrays stored as raw little-endian bytes (with their shape when it varies), or as
``tf.io.serialize_tensor`` bytes (a TensorProto, which holds its dtype and shape)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from tfrecordkit.errors import SchemaError
from tfrecordkit.format import Column, KeySpec, decode_tensor_proto, encode_tensor_proto
from tfrecordkit.schema._base import (
    DecodeContext,
    Entries,
    EntryEncoder,
    Feature,
    _bytes_scalar_encoder,
    _check_narrowing,
    _entry,
    _scalar,
    hf_list,
    hf_value,
)
from tfrecordkit.schema._layout import FeatureLayout, LayoutOptions, axes_of

__all__ = ["Tensor", "serialized_tensor_feature"]


@dataclass(frozen=True)
class Tensor(Feature):
    """An n-d array; ``None`` dims vary per record. ``encoding="raw"`` stores its
    little-endian bytes (and its shape when it varies); ``"proto"`` stores what
    ``tf.io.serialize_tensor`` writes (the per-class triplet tutorial's float images),
    read back as ``tf.io.parse_tensor`` reads it, dtype and shape checked; ``"list"`` stores
    its values flat in an int64 or float list (as TFDS and the TFRecord tutorial store
    fixed-size vectors; only the first dimension may vary)."""

    shape: tuple[int | None, ...] = ()
    dtype: str = "float32"
    encoding: str = "raw"
    kind: ClassVar[str] = "tensor"
    tf_decoder: ClassVar[str | None] = "tfrecordkit.readers.tf_data._ops:decode_tensor"

    def decodes_per_example(self) -> bool:
        return self.variable or self.encoding == "proto"

    _ENCODINGS: ClassVar[tuple[str, ...]] = ("raw", "proto", "list")

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        try:
            dtype = np.dtype(self.dtype)
        except TypeError:
            raise SchemaError("<tensor>", f"unknown dtype {self.dtype!r}") from None
        if dtype.kind not in "biuf":
            raise SchemaError("<tensor>", f"dtype must be boolean, integer or float; got {dtype}")
        object.__setattr__(self, "dtype", dtype.name)
        if any(d is not None and (not isinstance(d, int) or d < 0) for d in self.shape):
            raise SchemaError("<tensor>", f"shape dims must be ints >= 0 or None; got {self.shape}")
        if self.encoding not in self._ENCODINGS:
            raise SchemaError("<tensor>", f"encoding must be one of {self._ENCODINGS}; "
                                          f"got {self.encoding!r}")
        if self.encoding == "list" and None in self.shape[1:]:
            raise SchemaError("<tensor>", f"a list-encoded tensor may leave only its first "
                                          f"dimension open; got {self.shape}")

    @property
    def list_kind(self) -> Literal["float", "int64"]:
        """The Example list a list-encoded tensor's values are stored in."""
        return "float" if np.dtype(self.dtype).kind == "f" else "int64"

    @classmethod
    def from_json(cls, params: dict[str, Any], rebuild: Callable[[Any], Feature]) -> Feature:
        return cls(**{**params, "shape": tuple(params.get("shape", ()))})

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if self.encoding == "raw":
            del out["encoding"]  # as datasets written before there was a choice
        return out

    @property
    def variable(self) -> bool:
        return any(d is None for d in self.shape)

    @property
    def format_need(self) -> tuple[int, str] | None:
        if self.encoding == "raw":
            return None
        return 7, "Tensors stored as a TensorProto or a list"

    def layout(self, name: str, options: LayoutOptions) -> FeatureLayout:
        return FeatureLayout(name, "numbers", np.dtype(self.dtype), self.shape,
                             axes_of(self.shape))

    def hf_feature(self) -> dict[str, Any] | None:
        entry = hf_value(self.dtype)
        for size in reversed(self.shape):
            entry = hf_list(entry, size)
        return entry

    def key_specs(self, name: str) -> list[KeySpec]:
        if self.encoding == "list":
            size = None if self.variable else math.prod(self.shape)  # type: ignore[arg-type]
            return [KeySpec(name, "float32" if self.list_kind == "float" else "int64",
                            None if size is None else (size,))]
        specs = [KeySpec(name, "string", ())]
        if self.variable and self.encoding == "raw":
            specs.append(KeySpec(f"{name}/shape", "int64", (len(self.shape),)))
        return specs

    def entry_encoder(self, name: str) -> EntryEncoder:
        encode_bytes = _bytes_scalar_encoder(name)
        shape_key = f"{name}/shape"
        little = np.dtype(self.dtype).newbyteorder("<")

        def encode(value: Any) -> Entries:
            try:
                array = np.asarray(value)
            except (TypeError, ValueError) as err:
                raise SchemaError(name, f"not an array: {err}") from None
            if array.ndim != len(self.shape) or any(
                want is not None and want != got for want, got in zip(self.shape, array.shape,
                                                                       strict=True)
            ):
                raise SchemaError(name, f"shape {array.shape} does not fit {self.shape}")
            target = np.dtype(self.dtype)
            if array.dtype != target and not np.can_cast(
                array.dtype, target, casting="same_kind"
            ) and not (array.dtype.kind in "iub" and target.kind in "iu"):
                raise SchemaError(name, f"dtype {array.dtype} does not fit {self.dtype}")
            if not np.can_cast(array.dtype, self.dtype, casting="safe"):
                _check_narrowing(name, array, self.dtype)
            if self.encoding == "proto":
                return [*encode_bytes(encode_tensor_proto(array.astype(self.dtype)))]
            if self.encoding == "list":
                flat = array.astype(self.dtype).reshape(-1)
                return [_entry(name, self.list_kind, flat.astype(
                    np.float32 if self.list_kind == "float" else np.int64).tolist())]
            entries = [*encode_bytes(np.ascontiguousarray(array, dtype=little).tobytes())]
            if self.variable:
                entries.append(_entry(shape_key, "int64", list(array.shape)))
            return entries

        return encode

    def decode(self, name: str, features: Mapping[str, Any]) -> np.ndarray:
        if self.encoding == "proto":
            return self._decode_proto(name, _scalar(features, name))
        if self.encoding == "list":
            return self._decode_list(name, features.get(name))
        shape: tuple[int, ...] = (
            tuple(features[f"{name}/shape"].tolist()) if self.variable
            else tuple(int(d) for d in self.shape)  # type: ignore[arg-type]  # fixed: no None
        )
        data = _scalar(features, name)
        fits = len(shape) == len(self.shape) and all(
            d >= 0 and (want is None or want == d) for d, want in zip(shape, self.shape,
                                                                      strict=False))
        itemsize = np.dtype(self.dtype).itemsize
        if not fits or int(np.prod(np.array(shape, dtype=np.int64))) * itemsize != len(data):
            raise SchemaError(name, f"{len(data)} bytes with stored shape {shape} do not fit "
                                    f"{self.dtype} {self.shape}")
        return np.frombuffer(data, dtype=np.dtype(self.dtype).newbyteorder("<")).astype(
            self.dtype).reshape(shape)

    def decode_column(self, name: str, columns: Mapping[str, Column], n: int,
                      where: Callable[[int], Any], context: DecodeContext) -> Any:
        if self.encoding == "raw" and not self.variable and n:
            # Fixed-shape raw arrays, every one the right size: the batch is the parsed
            # bytes seen as ``(n, *shape)``, no per-record copies.
            column = columns[name]
            shape = tuple(int(d) for d in self.shape)  # type: ignore[arg-type]
            size = math.prod(shape) * np.dtype(self.dtype).itemsize
            offsets = column.offsets
            if (size and offsets is not None and len(offsets) == n + 1
                    and not column.missing.any() and int(offsets[0]) == 0
                    and bool((np.diff(offsets) == size).all())):
                little = np.dtype(self.dtype).newbyteorder("<")
                return column.values[: n * size].view(little).reshape((n, *shape)).astype(
                    self.dtype, copy=False)
        return super().decode_column(name, columns, n, where, context)

    def _decode_proto(self, name: str, data: bytes) -> np.ndarray:
        try:
            array = decode_tensor_proto(data)
        except ValueError as err:
            raise SchemaError(name, f"not a serialized tensor: {err}") from None
        if array.dtype != np.dtype(self.dtype) or array.ndim != len(self.shape) or any(
                want is not None and want != got
                for want, got in zip(self.shape, array.shape, strict=True)):
            raise SchemaError(name, f"a serialized {array.dtype} tensor of shape "
                                    f"{array.shape} does not fit {self.dtype} {self.shape}")
        return array


    def _decode_list(self, name: str, values: Any) -> np.ndarray:
        flat = np.asarray(values if values is not None else [], dtype=(
            np.float32 if self.list_kind == "float" else np.int64)).reshape(-1)
        rest = math.prod(self.shape[1:])  # type: ignore[arg-type]
        if (not self.shape and flat.size != 1) or (self.shape and (
                (rest == 0 and flat.size) or (rest and flat.size % rest) or (
                    self.shape[0] is not None and flat.size != self.shape[0] * rest))):
            raise SchemaError(name, f"{flat.size} values do not fit {self.shape}")
        shape = ((-1, *(int(d) for d in self.shape[1:] if d is not None))
                 if self.shape and rest else tuple(d or 0 for d in self.shape))
        return flat.astype(self.dtype).reshape(shape)


def serialized_tensor_feature(values: list[bytes]) -> Tensor | None:
    """The ``Tensor(encoding="proto")`` that reads every one of ``values`` (a sample of one
    key's ``tf.io.serialize_tensor`` bytes): their one dtype and rank, a dimension ``None``
    where they differ; None if some value is not a numeric serialized tensor, or they
    disagree on dtype or rank."""
    try:
        arrays = [decode_tensor_proto(v) for v in values]
    except ValueError:
        return None
    if not arrays or len({a.dtype for a in arrays}) != 1 or len({a.ndim for a in arrays}) != 1:
        return None
    if arrays[0].dtype == object:
        return None
    shape = tuple(sizes.pop() if len(sizes) == 1 else None
                  for sizes in (set(d) for d in zip(*(a.shape for a in arrays), strict=True)))
    return Tensor(shape, arrays[0].dtype.name, encoding="proto")
