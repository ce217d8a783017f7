"""Audio: encoded WAV/FLAC bytes or float PCM, with sample rate, frames and channels."""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tfrecordkit.codecs import (
    load_soundfile,
    resample_audio,
    sniff_bytes,
)
from tfrecordkit.errors import SchemaError
from tfrecordkit.format import KeySpec
from tfrecordkit.schema._base import (
    DecodeContext,
    Entries,
    EntryEncoder,
    Feature,
    _bytes_scalar_encoder,
    _entry,
    _int_scalar_encoder,
    _scalar,
)
from tfrecordkit.schema._layout import FeatureLayout, LayoutOptions

__all__ = ["Audio"]


@dataclass(frozen=True)
class Audio(Feature):
    """Audio: encoded ``wav``/``flac`` bytes as they came, or ``pcm`` float32 samples, with
    per-record ``sample_rate``, ``num_samples`` and ``channels``."""

    encoding: str = "wav"
    sample_rate: int | None = None
    kind: ClassVar[str] = "audio"
    tf_decoder: ClassVar[str | None] = "tfrecordkit.readers.tf_data._ops:decode_audio"

    def decodes_per_example(self) -> bool:
        return True

    _ENCODINGS: ClassVar[tuple[str, ...]] = ("wav", "flac", "pcm")

    def __post_init__(self) -> None:
        if self.encoding not in self._ENCODINGS:
            raise SchemaError("<audio>", f"encoding must be one of {self._ENCODINGS}; "
                                         f"got {self.encoding!r}")

    def layout(self, name: str, options: LayoutOptions) -> FeatureLayout:
        return FeatureLayout(name, "audio", np.dtype(np.float32), (None, None), (0,))

    def export_extension(self, data: bytes) -> str | None:
        return None if self.encoding == "pcm" else self.encoding

    def hf_feature(self) -> dict[str, Any] | None:
        return None if self.encoding == "pcm" else {"_type": "Audio", "decode": False}

    def key_specs(self, name: str) -> list[KeySpec]:
        main = (KeySpec(name, "float32", None) if self.encoding == "pcm"
                else KeySpec(name, "string", ()))
        return [main] + [KeySpec(f"{name}/{d}", "int64", ())
                         for d in ("sample_rate", "num_samples", "channels")]

    def entry_encoder(self, name: str) -> EntryEncoder:
        encode_bytes = _bytes_scalar_encoder(name)
        dims = [_int_scalar_encoder(f"{name}/{d}") for d in ("sample_rate", "num_samples",
                                                               "channels")]

        def encode(value: Any) -> Entries:
            if isinstance(value, Mapping) and "bytes" in value:  # from sources
                found = sniff_bytes(value["bytes"])
                if found != self.encoding:
                    raise SchemaError(name, f"bytes are {found}, feature expects {self.encoding}")
                dims_values = (value["sample_rate"], value["num_samples"], value["channels"])
                return [*encode_bytes(value["bytes"]),
                        *(enc(int(v)) for enc, v in zip(dims, dims_values, strict=True))]
            if isinstance(value, Mapping) and "samples" in value:
                samples = np.asarray(value["samples"], dtype=np.float32)
                rate = int(value.get("sample_rate") or self.sample_rate or 0)
            elif isinstance(value, np.ndarray):
                samples, rate = value.astype(np.float32, copy=False), int(self.sample_rate or 0)
            elif isinstance(value, bytes):
                samples, rate = None, 0
            else:
                raise SchemaError(name, f"expected encoded bytes or samples, got "
                                        f"{type(value).__name__}")
            if samples is not None:
                if rate <= 0:
                    raise SchemaError(name, "samples need a sample_rate")
                frames = samples.reshape(samples.shape[0], -1) if samples.ndim else samples
                num, channels = frames.shape[0], (frames.shape[1] if frames.ndim > 1 else 1)
                if self.encoding == "pcm":
                    main = [_entry(name, "float", frames.ravel())]
                else:
                    buffer = io.BytesIO()
                    load_soundfile().write(buffer, frames, rate, format=self.encoding.upper(),
                                       subtype="FLOAT" if self.encoding == "wav" else "PCM_24")
                    main = [*encode_bytes(buffer.getvalue())]
            else:
                data: bytes = value
                found = sniff_bytes(data)
                if found != self.encoding:
                    raise SchemaError(name, f"bytes are {found}, feature expects {self.encoding}")
                try:
                    info = load_soundfile().info(io.BytesIO(data))
                except RuntimeError as err:
                    raise SchemaError(name, f"unreadable audio: {err}") from None
                rate, num, channels = info.samplerate, info.frames, info.channels
                main = [*encode_bytes(data)]
            return [*main, *(enc(v) for enc, v in zip(dims, (rate, num, channels), strict=True))]

        return encode

    def decode_in(self, name: str, features: Mapping[str, Any], context: DecodeContext,
                  row: int) -> dict[str, Any]:
        return self.decode(name, features, sample_rate=context.sample_rate)

    def decode(self, name: str, features: Mapping[str, Any],
               sample_rate: int | None = None) -> dict[str, Any]:
        """``{"samples": (frames, channels) float32, "sample_rate": Hz}``; resampled to
        ``sample_rate`` when given."""
        rate = int(_scalar(features, f"{name}/sample_rate"))
        channels = int(_scalar(features, f"{name}/channels"))
        if self.encoding == "pcm":
            samples = np.asarray(features.get(name, []), np.float32).reshape(-1, max(channels, 1))
        else:
            try:
                samples, rate = load_soundfile().read(io.BytesIO(_scalar(features, name)),
                                                  dtype="float32", always_2d=True)
            except RuntimeError as err:  # libsndfile's errors
                raise SchemaError(name, f"unreadable audio: {err}") from None
        if sample_rate is not None and rate > 0:
            samples, rate = resample_audio(samples, rate, sample_rate), sample_rate
        return {"samples": samples, "sample_rate": rate}
