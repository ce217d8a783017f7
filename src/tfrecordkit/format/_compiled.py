"""The compiled Example codec (``_codec.c``), loaded once for every module of the format layer
that uses it, or None (not built, or ``TFRECORDKIT_PURE_PYTHON`` set)."""

from __future__ import annotations

from typing import Any

from tfrecordkit._native import load_compiled

__all__ = ["CODEC"]

CODEC: Any = load_compiled("tfrecordkit.format._codec")
