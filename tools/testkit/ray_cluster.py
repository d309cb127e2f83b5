"""A real local Ray instance for tests (Ray is imported only when the helper runs).

rl-core does not depend on Ray: the packages whose tests need a cluster (rl-buffers,
rl-collectors, rl-llm) use this helper in a module-scoped pytest fixture.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

__all__ = ["RAY_TEST_ENV", "local_ray_cluster"]

# RAY_ENABLE_UV_RUN_RUNTIME_ENV=0: under `uv run pytest` Ray would otherwise start each worker
# through `uv run` in an uploaded copy of the working tree (about 50 s for the first actor
# instead of 1 s); the workers then run the driver's interpreter. Ray reads these when it is
# imported, so the helper sets them before importing Ray and restores them on exit.
RAY_TEST_ENV = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
}


@contextmanager
def local_ray_cluster(
    prefix: str = "rl-ray-",
    *,
    num_cpus: int = 2,
    object_store_mb: int = 100,
    skip_reason: str | None = None,
) -> Iterator[ModuleType]:
    """Starts one local Ray instance on loopback in a fresh temp dir; yields the ``ray``
    module and shuts the instance down (and removes the dir) on exit.

    Without Ray installed, the calling test is skipped (``pytest.importorskip``) with
    ``skip_reason`` (say which extra installs it).

    Args:
        prefix: the temp dir's name prefix (which package's tests started the instance).

    Keyword Args:
        num_cpus: CPUs the instance offers its tasks and actors.
        object_store_mb: the object store's size in MiB.
        skip_reason: the skip message when Ray is missing.

    Examples:
        >>> import pytest
        >>> @pytest.fixture(scope="module")
        ... def ray_cluster():
        ...     with local_ray_cluster("rlc-ray-", skip_reason='pip install "rl-collectors[ray]"') as ray:
        ...         yield ray
    """
    import pytest  # a test helper: only tests call it

    saved = {name: os.environ.get(name) for name in RAY_TEST_ENV}
    os.environ.update(RAY_TEST_ENV)
    temp_dir = None
    try:
        ray = pytest.importorskip("ray", reason=skip_reason)
        temp_dir = tempfile.mkdtemp(prefix=prefix)
        ray.init(
            address="local",
            num_cpus=num_cpus,
            _node_ip_address="127.0.0.1",
            _temp_dir=temp_dir,
            include_dashboard=False,
            object_store_memory=object_store_mb * 1024**2,
            log_to_driver=False,
        )
        try:
            yield ray
        finally:
            ray.shutdown()
    finally:
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
