"""Renders docs/performance.md and the README's headline table from the bench results in
bench/results/*.json (what the bench/ scripts write with --json: figures, medians, spread, the
machine, the date and the command). Run: python scripts/performance.py; tests/test_docs.py
checks both are current. To refresh a figure, run its command (printed on the page) with
--json bench/results/<name>.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PAGE = ROOT / "docs" / "performance.md"
README = ROOT / "README.md"
#: Figures from before the bench scripts wrote JSON, kept as measured (hand-written markdown).
EARLIER = RESULTS / "earlier.md"
START = "<!-- headline:start (rendered by scripts/performance.py from bench/results/*.json) -->"
END = "<!-- headline:end -->"

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


def _rate(value: float) -> str:
    return f"{value / 1000:.1f}k" if value >= 10_000 else f"{value:,.0f}"


def _random_access(r: dict[str, Any]) -> tuple[str, str, str]:
    m = r["medians"]
    ours = f"`records[i]`: {_rate(m['tk[i]']['fetches_per_s'])} fetches/s, CRC-checked"
    theirs = (f"grain's `ArrayRecordDataSource` ({r['array_record_options']}): "
              f"{_rate(m['ar[i]']['fetches_per_s'])} — **{r['ratios']['tk[i] / ar[i]']:.2f}×**")
    if "tk parsed[i] / mds[i]" in r["ratios"]:  # values, parsed: grain's source[i]
        ours += (f"; parsed to values (grain's `source[i]`): "
                 f"{_rate(m['tk parsed[i]']['fetches_per_s'])}")
        theirs += (f"; MosaicML Streaming's `StreamingDataset[i]`: "
                   f"{_rate(m['mds[i]']['fetches_per_s'])} — "
                   f"**{r['ratios']['tk parsed[i] / mds[i]']:.2f}×**")
    return ("random access, one record at a time (24 KB photos)", ours, theirs)


def _convert_folder(r: dict[str, Any]) -> tuple[str, str, str]:
    m, ratios = r["medians"], r["ratios"]
    tk = m["tk structure"]
    return (f"convert a folder of {r['files']:,} JPEGs (defaults)",
            f"{_rate(tk['files_per_s'])} files/s, peak disk "
            f"{tk['peak_over_final']:.2f}× the dataset",
            f"MosaicML MDS {_rate(m['mds']['files_per_s'])} "
            f"(**{ratios['tk structure / mds']:.2f}×**); a plain `TFRecordWriter` loop "
            f"{_rate(m['loop']['files_per_s'])} (**{ratios['tk structure / loop']:.2f}×**)")


def _photos(r: dict[str, Any]) -> tuple[str, str, str]:
    m, ratios = r["medians"], r["ratios"]
    return ("photos at training size without TensorFlow (decode + resize 224, batch 128)",
            f"`load_numpy_dataset`: {_rate(m['numpy']['rate'])} img/s, "
            f"{ratios['numpy / ceiling']:.2f}× the decode + resize ceiling",
            f"plain tf.data as tutorials write it: {_rate(m['tf.data']['rate'])} "
            f"(**{ratios['numpy / tf.data']:.2f}×**)")


def _first_batch(r: dict[str, Any]) -> tuple[str, str, str]:
    m = r["medians"]
    return ("`load_tf_dataset` time to the first decoded batch", f"{m['tk']:.2f} s",
            f"plain tf.data: {m['plain']:.2f} s (**{r['ratios']['tk / plain']:.2f}×** the time)")


def _report(r: dict[str, Any]) -> tuple[str, str, str]:
    m = r["medians"]["report"]
    return (f"`dataset_report` of {r['records']:,} records in {r['classes']:,} classes",
            f"{m['seconds']:.1f} s, a {m['page_kb'] / 1000:.1f} MB page",
            "target: under 10 s and 5 MB")


def _append(r: dict[str, Any]) -> tuple[str, str, str]:
    m, ratios, scan = r["medians"], r["ratios"], r["duplicate_scan"]
    return (f"append {r['new']:,} photos to a {r['files']:,}-photo dataset",
            f"{m['append new']['seconds']:.2f} s (old shards neither read nor rewritten); "
            f"duplicate scan {scan['from_digests_per_s'] / 1e6:.1f}M records/s",
            f"converting the {r['new']:,} alone: {m['convert new']['seconds']:.2f} s "
            f"(**{ratios['append_new_over_convert_new']:.2f}×** the time); converting the "
            f"grown folder again {m['convert grown']['seconds']:.2f} s")


def _export(r: dict[str, Any]) -> tuple[str, str, str]:
    m, ratios = r["medians"], r["ratios"]
    return (f"export {r['files']:,} photos to WebDataset / Parquet / a Hugging Face dataset",
            f"{_rate(m['ours webdataset']['records_per_s'])} / "
            f"{_rate(m['ours parquet']['records_per_s'])} / "
            f"{_rate(m['ours hf']['records_per_s'])} records/s, read from the shards",
            f"each library's own writer fed the same bytes from memory: `ShardWriter` "
            f"**{ratios['ours webdataset']:.2f}×**, pyarrow's `ParquetWriter` "
            f"**{ratios['ours parquet']:.2f}×**, `Dataset.from_generator` "
            f"**{ratios['ours hf']:.2f}×**")


HEADLINES = {"random_access": _random_access, "convert_folder": _convert_folder,
             "photos": _photos, "first_batch": _first_batch, "report": _report,
             "append": _append, "export": _export}


def headline() -> str:
    """The README's table: seven figures, each from its bench's newest JSON, with its
    command."""
    lines = ["| job | tfrecordkit | the alternative, same run | command |", "|---|---|---|---|"]
    for name, row in HEADLINES.items():
        result = json.loads((RESULTS / f"{name}.json").read_text())
        job, ours, theirs = row(result)
        command = result["command"].replace("bench_output/", "bench/results/")
        lines.append(f"| {job} | {ours} | {theirs} | `{command}` |")
    return "\n".join([START, "", *lines, "",
                      "Medians of alternating fresh processes on a shared 2-core machine, both "
                      "sides on the same files in the same run; every figure with its spread, "
                      "the machine and the date: [`docs/performance.md`](docs/performance.md).",
                      END])


def updated_readme(text: str) -> str:
    """``text`` (the README) with its headline table rendered anew."""
    before, rest = text.split(START, 1)
    return before + headline() + rest.split(END, 1)[1]


def render() -> str:
    """The whole page from the results on disk."""
    parts = [HEADER]
    for path in sorted(RESULTS.glob("*.json")):
        parts.append(section(path.stem, json.loads(path.read_text())))
    if EARLIER.exists():
        parts.append(EARLIER.read_text())
    return "\n".join(parts).rstrip() + "\n"


def main() -> int:
    page = render()
    readme = updated_readme(README.read_text())
    if "--check" in sys.argv[1:]:
        return 0 if PAGE.read_text() == page and README.read_text() == readme else 1
    PAGE.write_text(page)
    README.write_text(readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
