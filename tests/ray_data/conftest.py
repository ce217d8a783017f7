"""A local Ray cluster (2 CPUs) for this package's tests: started by the first test that needs
it and shared by every module here (a start costs ~10 s on this machine), stopped after the
package. A test that needs a cluster of its own (test_worker_death) stops it first; the next
test that asks starts it again. In xdist workers (scripts/test), every test that starts a Ray
cluster, here or elsewhere, is in the xdist group "ray": one worker runs them one at a time."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="package")
def _ray():
    ray = pytest.importorskip("ray")
    yield ray
    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture
def cluster(_ray):
    """The shared cluster (started if none runs); Ray Data's context, progress bars off."""
    if not _ray.is_initialized():
        _ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                  runtime_env={"env_vars": {"TF_CPP_MIN_LOG_LEVEL": "3"}})
    context = _ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    return context
