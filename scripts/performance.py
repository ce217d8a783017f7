"""Renders docs/performance.md from the bench results in bench/results/*.json (what the
bench/ scripts write with --json: figures, medians, spread, the machine, the date and the
command). Run: python scripts/performance.py; tests/test_docs.py checks the page is current.
To refresh a figure, run its command (printed on the page) with --json bench/results/<name>.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "docs" / "performance.md"

HEADER = """# Performance

Every figure on this page is rendered by `scripts/performance.py` from the JSON files in
`bench/results/`, which the bench scripts write (`--json`); each section names the command
that measured it, the date and the machine. A median is of fresh processes run alternately
with the other cases of the same run; the range after it is the lowest and highest run. The
machine is a shared 2-core VM: figures move between runs, ratios taken in one run move less.
"""


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _cell(value: Any, spread: Any) -> str:
    text = _number(value)
    if isinstance(spread, list) and len(spread) == 2 and spread[0] != spread[1]:
        text += f" ({_number(spread[0])}–{_number(spread[1])})"
    return text


def _table(medians: dict[str, Any], spread: dict[str, Any]) -> list[str]:
    rows = list(medians.items())
    keys: list[str] = []
    for _, value in rows:
        if isinstance(value, dict):
            keys += [k for k in value if k not in keys]
    if not keys:  # one figure per case
        lines = ["| case | median |", "|---|---|"]
        lines += [f"| {case} | {_cell(value, spread.get(case))} |" for case, value in rows]
        return lines
    lines = ["| case | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for case, value in rows:
        ranges = spread.get(case, {}) if isinstance(spread.get(case), dict) else {}
        cells = [_cell(value.get(k, "—"), ranges.get(k)) if isinstance(value, dict) else "—"
                 for k in keys]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return lines


def section(name: str, result: dict[str, Any]) -> str:
    """One bench result as markdown."""
    machine = result.get("machine", {})
    lines = [f"## {name}", "",
             f"`{result.get('command', '?')}` — {result.get('date', '?')[:10]}, "
             f"{machine.get('cpus', '?')} CPUs, Python {machine.get('python', '?')}", ""]
    medians = result.get("medians") or result.get("medians_ms") or {}
    if medians:
        if "medians_ms" in result and "medians" not in result:
            lines.append("Milliseconds per image:")
            lines.append("")
        lines += _table(medians, result.get("spread", {}))
        lines.append("")
    ratios = result.get("ratios") or {}
    if ratios:
        lines.append("Ratios, same run: " + "; ".join(
            f"{label} **{value:.2f}×**" for label, value in ratios.items()) + ".")
        lines.append("")
    for label, what in (result.get("catches") or {}).items():
        refused = [f for f, caught in what.items() if caught]
        lines.append(f"`check=\"{label}\"` refuses: {', '.join(refused) or 'none'}.")
    if result.get("catches"):
        lines.append("")
    for label, value in (result.get("check_costs") or {}).items():
        lines.append(f"{label}: {_number(value)}")
    if result.get("check_costs"):
        lines.append("")
    skipped = result.get("skipped") or {}
    for case, why in skipped.items():
        lines.append(f"- {case}: skipped ({why})")
    if skipped:
        lines.append("")
    return "\n".join(lines)


def render() -> str:
    """The whole page from the results on disk."""
    parts = [HEADER]
    for path in sorted(RESULTS.glob("*.json")):
        parts.append(section(path.stem, json.loads(path.read_text())))
    return "\n".join(parts).rstrip() + "\n"


def main() -> int:
    page = render()
    if "--check" in sys.argv[1:]:
        return 0 if PAGE.exists() and PAGE.read_text() == page else 1
    PAGE.write_text(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
