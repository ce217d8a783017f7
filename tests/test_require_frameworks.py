"""``--require-frameworks`` (set by CI): a test that would skip for a missing framework fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.slow  # runs pytest in a subprocess
def test_a_missing_framework_fails_only_when_required(tmp_path):
    relaxed = _run(tmp_path)
    assert relaxed.returncode == 0 and "2 skipped" in relaxed.stdout
    strict = _run(tmp_path, "--require-frameworks")
    assert strict.returncode == 1, strict.stdout
    assert "1 failed, 1 skipped" in strict.stdout
    assert "--require-frameworks: skipped because Skipped: could not import 'grain'" in (
        strict.stdout)


MODULE_PROBE = '''
import sys
import pytest

sys.modules["torch"] = None  # as if PyTorch were not installed
torch = pytest.importorskip("torch")  # at collection: the whole module would vanish

def test_agreement():
    assert torch is not None
'''

LIBRARY_PROBE = '''
import sys
import pytest

sys.modules["tensorflow"] = None
sys.modules.pop("tfrecordkit.readers.tf_data", None)

def test_needs_the_tf_reader():
    pytest.importorskip("tfrecordkit.readers.tf_data", exc_type=ImportError)
'''


def _run_probe(tmp_path, text, *flags):
    probe = tmp_path / "test_probe_module.py"
    probe.write_text(text)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest",
                           "--rootdir", str(tmp_path), "-p", "no:cacheprovider", str(probe),
                           *flags], capture_output=True, text=True, cwd=ROOT, check=False)


@pytest.mark.slow  # runs pytest in a subprocess
def test_a_module_skipped_at_collection_fails_when_required(tmp_path):
    """A module-level importorskip skipped the whole file at collection and the run exited
    0 even with --require-frameworks (35 test files did that)."""
    relaxed = _run_probe(tmp_path, MODULE_PROBE)
    assert relaxed.returncode in (0, 5) and "1 skipped" in relaxed.stdout, relaxed.stdout
    strict = _run_probe(tmp_path, MODULE_PROBE, "--require-frameworks")
    assert strict.returncode != 0, strict.stdout
    assert "--require-frameworks" in strict.stdout and "could not import 'torch'" in (
        strict.stdout)


@pytest.mark.slow  # runs pytest in a subprocess
def test_the_librarys_framework_modules_count_too(tmp_path):
    relaxed = _run_probe(tmp_path, LIBRARY_PROBE)
    assert relaxed.returncode == 0 and "1 skipped" in relaxed.stdout, relaxed.stdout
    strict = _run_probe(tmp_path, LIBRARY_PROBE, "--require-frameworks")
    assert strict.returncode == 1, strict.stdout
    assert "could not import 'tfrecordkit.readers.tf_data'" in strict.stdout


@pytest.mark.slow  # runs pytest with an xdist worker in a subprocess
def test_skips_fail_in_workers_too(tmp_path):
    """scripts/test runs the suite in xdist workers: a framework skipped at run time or at
    collection there fails the run as it does in one process."""
    strict = _run(tmp_path, "--require-frameworks", "-n", "1")
    assert strict.returncode == 1 and "1 failed, 1 skipped" in strict.stdout, strict.stdout
    strict = _run_probe(tmp_path, MODULE_PROBE, "--require-frameworks", "-n", "1")
    assert strict.returncode != 0, strict.stdout
    assert "could not import 'torch'" in strict.stdout, strict.stdout


@pytest.mark.slow  # runs pytest in a subprocess
def test_the_suite_collects_without_xdist():
    """The Ray tests' ``xdist_group`` marker is registered by the project too: without
    pytest-xdist (``-p no:xdist``), ``--strict-markers`` refused every module that used it."""
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p",
                          "no:cacheprovider", "--collect-only", "-q",
                          "tests/ray_data/test_engine.py"],
                         capture_output=True, text=True, cwd=ROOT, check=False)
    assert out.returncode == 0 and "tests collected" in out.stdout, out.stdout[-2000:]
