"""Shared fixtures and settings for the test suite."""

from __future__ import annotations

import os
import re
import resource
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

settings.register_profile(
    "default", deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

#: Examples each property test draws in the quick run (``-m "... not slow"``); the full run
#: (CI) draws each test's own count.
QUICK_EXAMPLES = 40

GOLDEN = Path(__file__).parent / "golden"
_CPU_MARK = pytest.StashKey[float]()
#: What pytest.importorskip says when a framework the agreement tests need is missing.
_MISSING_FRAMEWORK = re.compile(
    r"could not import '(tensorflow|torch|torchdata|grain|ray|tfrecordkit\.ray"
    r"|tfrecordkit\.readers\.(tf_data|torch_data|grain_source))\b")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The quick run draws at most :data:`QUICK_EXAMPLES` examples per property test."""
    if "not slow" not in (config.option.markexpr or ""):
        return
    for item in items:
        test = getattr(item, "obj", None)
        current = getattr(test, "_hypothesis_internal_use_settings", None)
        if current is not None and current.max_examples > QUICK_EXAMPLES:
            test._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
                current, max_examples=QUICK_EXAMPLES)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--require-frameworks", action="store_true",
                     help="a test skipped because TensorFlow, PyTorch, grain or Ray is missing "
                          "fails instead (CI sets it: half an agreement test is no test)")
    parser.addoption("--cpu-durations", type=int, default=0, metavar="N",
                     help="list the N tests that cost the most CPU seconds (set-up, call and "
                          "tear-down; the test process's threads and the processes it waited "
                          "for): on a busy machine, wall times tell the load, not the test")


def _cpu_seconds() -> float:
    """CPU seconds of this process (all threads) and of its children that have ended."""
    own, children = (resource.getrusage(who) for who in
                     (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    report = yield
    _fail_missing_framework(report, item.config, "")
    if item.config.getoption("--cpu-durations"):
        # Each phase's report carries the CPU it cost (xdist sends user_properties back).
        now = _cpu_seconds()
        spent, item.stash[_CPU_MARK] = now - item.stash.get(_CPU_MARK, now), now
        report.user_properties = [*report.user_properties, ("cpu_seconds", spent)]
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.config.getoption("--cpu-durations"):
        item.stash[_CPU_MARK] = _cpu_seconds()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """``--cpu-durations=N``: the N tests that cost the most CPU."""
    top = config.getoption("--cpu-durations")
    if not top:
        return
    spent: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            for key, value in getattr(report, "user_properties", ()):
                if key == "cpu_seconds":
                    spent[report.nodeid] = spent.get(report.nodeid, 0.0) + value
    terminalreporter.write_sep("=", f"most CPU, {top} tests (of {sum(spent.values()):.0f} "
                                    f"CPU-s in {len(spent)} tests)")
    for nodeid, seconds in sorted(spent.items(), key=lambda kv: -kv[1])[:top]:
        terminalreporter.write_line(f"{seconds:8.1f}s  {nodeid}")


def _fail_missing_framework(report: pytest.TestReport | pytest.CollectReport,
                            config: pytest.Config, what: str) -> None:
    """Under ``--require-frameworks``, ``report`` failed if it skipped for a missing
    framework (a test, or a whole module at collection: ``what`` names it)."""
    if not (report.skipped and config.getoption("--require-frameworks")):
        return
    reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if _MISSING_FRAMEWORK.search(str(reason)):
        report.outcome = "failed"
        report.longrepr = f"--require-frameworks: {what}skipped because {reason}"


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # type: ignore[no-untyped-def]
    """A module skipped at collection (a module-level ``pytest.importorskip``) for a missing
    framework fails too under ``--require-frameworks``: every test in it would vanish."""
    report = yield
    _fail_missing_framework(report, collector.config, f"{collector.nodeid} ")
    return report


@pytest.fixture
def golden() -> Path:
    """The folder of files written by real TensorFlow (see tests/golden/make_golden.py)."""
    return GOLDEN


@pytest.fixture(scope="session")
def tf():
    """The real TensorFlow module (integration tests only)."""
    return pytest.importorskip("tensorflow")


@pytest.fixture(autouse=True)
def _tensorflow_only_in_integration_tests(request):
    """A test that loads TensorFlow must be marked ``integration`` (the quick run skips those).
    It can only notice the first load in a process: the quick run, where no marked test runs
    first, is where it checks every test."""
    import sys

    loaded = "tensorflow" in sys.modules
    yield
    if not loaded and "tensorflow" in sys.modules and \
            request.node.get_closest_marker("integration") is None:
        pytest.fail("this test loads TensorFlow: mark it @pytest.mark.integration")
