"""N-d arrays stored as raw little-endian bytes, with their shape when it varies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tfrecordkit.errors import SchemaError
from tfrecordkit.format import KeySpec
from tfrecordkit.schema._base import (
    Entries,
    EntryEncoder,
    Feature,
    _bytes_scalar_encoder,
    _check_narrowing,
    _entry,
    _scalar,
)

__all__ = ["Tensor"]


@dataclass(frozen=True)
class Tensor(Feature):
    """An n-d array stored as raw little-endian bytes; ``None`` dims vary per record."""

    shape: tuple[int | None, ...] = ()
    dtype: str = "float32"
    kind: ClassVar[str] = "tensor"

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

    @property
    def variable(self) -> bool:
        return any(d is None for d in self.shape)

    def key_specs(self, name: str) -> list[KeySpec]:
        specs = [KeySpec(name, "string", ())]
        if self.variable:
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
            entries = [*encode_bytes(np.ascontiguousarray(array, dtype=little).tobytes())]
            if self.variable:
                entries.append(_entry(shape_key, "int64", list(array.shape)))
            return entries

        return encode

    def decode(self, name: str, features: Mapping[str, Any]) -> np.ndarray:
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
