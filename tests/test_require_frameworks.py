"""``--require-frameworks`` (set by CI): a test that would skip for a missing framework fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = '''
import sys
import pytest

def test_needs_grain():
    sys.modules["grain"] = None  # as if grain were not installed
    pytest.importorskip("grain")

def test_needs_something_else():
    pytest.importorskip("not_a_framework_anyone_has")
'''


def _run(tmp_path, *flags):
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest",
                           "--rootdir", str(tmp_path), "-p", "no:cacheprovider", str(probe),
                           *flags], capture_output=True, text=True, cwd=ROOT, check=False)


def test_a_missing_framework_fails_only_when_required(tmp_path):
    relaxed = _run(tmp_path)
    assert relaxed.returncode == 0 and "2 skipped" in relaxed.stdout
    strict = _run(tmp_path, "--require-frameworks")
    assert strict.returncode == 1, strict.stdout
    assert "1 failed, 1 skipped" in strict.stdout
    assert "--require-frameworks: skipped because Skipped: could not import 'grain'" in (
        strict.stdout)
