"""Writes the "At a glance" part of docs/api.md: each key entry point's signature and the first
line of its docstring, as plain markdown that reads on GitHub (the rest of the page is the
rendered reference). Run: python scripts/api_glance.py; tests/test_docs.py checks it is current.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

API = Path(__file__).resolve().parent.parent / "docs" / "api.md"
START, END = "<!-- glance:start -->", "<!-- glance:end -->"
ENTRY_POINTS = [
    "convert", "write_dataset", "open_source", "adopt", "load_manifest", "open_split",
    "load_tf_dataset", "load_numpy_dataset", "load_torch_dataset", "load_grain_source",
    "Shuffled", "InOrder", "PK", "Triplets", "DecodeOptions", "ReadOptions", "show_examples",
    "RecordReader", "RecordWriter",
    "encode_example", "decode_example",
]


def _signature(obj: object) -> str:
    """Parameters with their defaults, without annotations (readable in a table)."""
    parts, starred = [], False
    for param in inspect.signature(obj).parameters.values():  # type: ignore[arg-type]
        if param.kind is param.KEYWORD_ONLY and not starred:
            parts.append("*")
            starred = True
        if param.kind is param.VAR_KEYWORD:
            parts.append(f"**{param.name}")
        elif param.default is param.empty:
            parts.append(param.name)
        else:
            parts.append(f"{param.name}={param.default!r}")
    return "(" + ", ".join(parts) + ")"


def glance() -> str:
    import tfrecordkit as tk

    lines = [START, "", "| entry point | what it does |", "|---|---|"]
    for name in ENTRY_POINTS:
        lines.append(_row(tk, name))
    rest = [n for n in tk.__all__ if n not in ENTRY_POINTS and not n.startswith("_")]
    lines += ["", "Every other public name of `tfrecordkit`:", "",
              "| name | what it is |", "|---|---|"]
    lines += [_row(tk, name) for name in sorted(rest, key=str.lower)]
    lines += ["", END]
    return "\n".join(lines)


def _row(tk: object, name: str) -> str:
    """A table row: the name with its signature (functions and classes), and the first
    paragraph of its docstring."""
    obj = getattr(tk, name)
    doc = (inspect.getdoc(obj) or "").split("\n\n")[0].replace("\n", " ")
    try:
        signature = _signature(obj) if callable(obj) else ""
    except (TypeError, ValueError):  # a builtin without a signature
        signature = ""
    signature = signature.replace("|", "\\|")
    if not callable(obj):
        doc = f"`{obj!r}`" if isinstance(obj, str) else doc
    return f"| `tk.{name}{signature}` | {doc.replace('|', '/')} |"


def updated(text: str) -> str:
    """``text`` (docs/api.md) with the glance part replaced by the current one."""
    before, _, rest = text.partition(START)
    _, _, after = rest.partition(END)
    return before + glance() + after


if __name__ == "__main__":
    current = API.read_text()
    new = updated(current)
    if "--check" in sys.argv:
        sys.exit(0 if new == current else "docs/api.md is stale: run scripts/api_glance.py")
    API.write_text(new)
