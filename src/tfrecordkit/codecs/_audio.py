"""Audio without a framework: the WAV/FLAC codec module and resampling (libsoxr)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tfrecordkit.errors import MissingDependencyError

__all__ = ["load_soundfile", "resample_audio"]


def load_soundfile() -> Any:
    """The ``soundfile`` module, or an error naming the extra to install."""
    try:
        import soundfile
    except ImportError as err:
        raise MissingDependencyError("soundfile", "audio", "encoding or decoding audio") from err
    return soundfile


def resample_audio(samples: np.ndarray, rate: int, target: int) -> np.ndarray:
    """``(frames, channels)`` float32 samples at ``rate`` Hz, resampled to ``target`` Hz
    (libsoxr, high quality); unchanged when the rates are equal."""
    if rate == target or len(samples) == 0:
        return samples
    try:
        import soxr
    except ImportError as err:
        raise MissingDependencyError("soxr", "audio", "resampling audio") from err
    out = soxr.resample(np.ascontiguousarray(samples, np.float32), rate, target, quality="HQ")
    return np.asarray(out, np.float32).reshape(-1, samples.shape[1])
