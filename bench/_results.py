"""Bench results as JSON: the figures a script measured, with the machine, the date and the
command that measured them (one shape for every script that writes them)."""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
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
        "command": shlex.join([Path(sys.executable).name, *sys.argv]), "machine": machine(),
        **figures}, indent=2))


def add_json_option(parser: Any) -> None:
    """``--json FILE`` on a bench script's argument parser: also write its results there."""
    parser.add_argument("--json", metavar="FILE",
                        help="also write the results as JSON (figures, medians, spread, the "
                             "machine, the date, the command), for scripts/performance.py")


def named(runs: dict[str, list[Any]], names: tuple[str, ...]) -> dict[str, list[dict[str, float]]]:
    """Runs measured as tuples (or lists) of figures, as dicts of ``names``."""
    return {case: [dict(zip(names, run, strict=True)) for run in done]
            for case, done in runs.items()}


def scalar_medians(runs: dict[str, list[float]]
                   ) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Per case, the median of its runs and its lowest and highest run (one figure a run)."""
    import statistics

    return ({case: statistics.median(done) for case, done in runs.items() if done},
            {case: [min(done), max(done)] for case, done in runs.items() if done})


def medians_and_spread(runs: dict[str, list[dict[str, float]]]
                       ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, list[float]]]]:
    """Per case, each figure's median over its runs, and its lowest and highest run (cases
    with no run left out)."""
    import statistics

    median = {case: {k: statistics.median(r[k] for r in done) for k in done[0]}
              for case, done in runs.items() if done}
    spread = {case: {k: [min(r[k] for r in done), max(r[k] for r in done)] for k in done[0]}
              for case, done in runs.items() if done}
    return median, spread


def run_fresh(module: str, call: str, python: str | None = None) -> Any:
    """``<module>.<call>`` (a Python expression) in a fresh process with this directory on the
    path, its JSON-printed result back (``python``: another interpreter, e.g. a peer's own
    environment).

    Raises:
        RuntimeError: the process failed (its last lines of stderr).
    """
    import subprocess

    here = str(Path(__file__).resolve().parent)
    code = (f"import sys, json; sys.path.insert(0, {here!r}); import {module}; "
            f"print(json.dumps({module}.{call}))")
    out = subprocess.run([python or sys.executable, "-c", code], capture_output=True, text=True,
                         check=False, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if out.returncode != 0:
        raise RuntimeError(f"{call} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])
