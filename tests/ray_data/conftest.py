"""A local Ray cluster (2 CPUs) for a module's tests, started and stopped by the module."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()
