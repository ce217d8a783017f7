"""The compiled extensions (the Example codec, the resize kernel): each optional, each with a
pure-Python or NumPy twin giving the same results. ``TFRECORDKIT_PURE_PYTHON=1`` makes every
one of them the twin (what runs without a compiler)."""

from __future__ import annotations

import importlib
import os
from typing import Any

__all__ = ["load_compiled"]


def load_compiled(module: str) -> Any:
    """The compiled module ``module``, or None (not built, or ``TFRECORDKIT_PURE_PYTHON``
    set)."""
    if os.environ.get("TFRECORDKIT_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        return importlib.import_module(module)
    except ImportError:
        return None
