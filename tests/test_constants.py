"""The numbers several implementations of one algorithm share live once
(tfrecordkit/_constants.py): the compiled code's header is generated from them and current,
and no copy of them is written anywhere else in the package."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from tfrecordkit import _constants

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "tfrecordkit"


def test_the_generated_header_is_current():
    spec = importlib.util.spec_from_file_location("gen", ROOT / "scripts" / "gen_constants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (SRC / "format" / "_constants.h").read_text() == module.render(), (
        "run python scripts/gen_constants.py")


def test_no_shared_number_is_written_twice():
    """The splitmix multipliers, the crop salt, the portable exp's ln 2 halves and the luma
    weights appear as literals only in _constants.py (and its generated header)."""
    numbers = [_constants.SPLITMIX_GAMMA, _constants.SPLITMIX_MUL1, _constants.SPLITMIX_MUL2,
               _constants.CROP_SALT]
    patterns = [re.compile(rf"0x{n:x}".replace("0x", "0x_?"), re.IGNORECASE)
                for n in numbers]
    patterns.append(re.compile(r"0x6372_?6f70", re.IGNORECASE))
    patterns += [re.compile(r"6\.93147180369123816490e-01|1\.90821492927058770002e-10"),
                 re.compile(r"\b9798\b.*\b19235\b")]
    found = []
    for path in SRC.rglob("*"):
        if path.suffix not in (".py", ".c", ".cc", ".h") or path.name.startswith("_constants"):
            continue
        text = path.read_text()
        found += [f"{path.relative_to(SRC)}: {p.pattern}" for p in patterns if p.search(text)]
    assert not found, found
