"""The docs read where users look: docs/api.md's glance table is current (the signatures of
the entry points as they are), and scripts/docs builds the site and says where it is."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.integration  # the glance imports every reader, TensorFlow included


def test_the_api_glance_is_current():
    spec = importlib.util.spec_from_file_location("api_glance", ROOT / "scripts" / "api_glance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    current = (ROOT / "docs" / "api.md").read_text()
    assert module.updated(current) == current, "run python scripts/api_glance.py"
    assert "`tk.show_examples(path, split='train', n=16, *, image=None" in current
    readme = (ROOT / "README.md").read_text()
    assert "scripts/docs" in readme and "build/site/index.html" in readme


def test_the_performance_page_is_rendered_from_the_bench_results():
    """docs/performance.md is what scripts/performance.py makes of bench/results/*.json: no
    figure there that no JSON backs."""
    spec = importlib.util.spec_from_file_location("performance",
                                                  ROOT / "scripts" / "performance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == (ROOT / "docs" / "performance.md").read_text(), (
        "run python scripts/performance.py")
    results = sorted(p.stem for p in (ROOT / "bench" / "results").glob("*.json"))
    assert {"random_access", "convert_folder", "first_batch", "photos"} <= set(results)
