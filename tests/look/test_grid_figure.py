"""The guide's grid picture (docs/guide.md) is what scripts/make_grid_figure.py makes,
byte for byte."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_script_reproduces_the_committed_figure(tmp_path):
    spec = importlib.util.spec_from_file_location("make_grid_figure",
                                                  ROOT / "scripts" / "make_grid_figure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make(tmp_path / "grid.png")
    assert (tmp_path / "grid.png").read_bytes() == (ROOT / "docs" / "img" /
                                                    "digits_grid.png").read_bytes()
    assert "(img/digits_grid.png)" in (ROOT / "docs" / "guide.md").read_text()
