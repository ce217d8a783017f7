"""Bench results as JSON: the figures a script measured, with the machine, the date and the
command that measured them (one shape for every script that writes them)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {"cpus": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "processor": platform.processor()}


def write_results(path: str | os.PathLike[str], bench: str, **figures: Any) -> None:
    """Write ``figures`` of ``bench`` to ``path`` as JSON, with the machine, date and command."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "bench": bench, "date": datetime.datetime.now(datetime.UTC).isoformat(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]), "machine": machine(),
        **figures}, indent=2))
