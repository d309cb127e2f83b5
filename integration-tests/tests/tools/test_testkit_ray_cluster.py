import os
import subprocess
import sys
from pathlib import Path

import pytest


def test_importing_the_helper_leaves_ray_unimported():
    code = (
        "import sys, testkit.ray_cluster as m; "
        "assert 'ray' not in sys.modules, 'ray imported'; print(sorted(m.RAY_TEST_ENV))"
    )
    tools = (
        Path(__file__).resolve().parents[3] / "tools"
    )  # a fresh interpreter: put testkit on its path
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tools), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "RAY_ENABLE_UV_RUN_RUNTIME_ENV" in done.stdout


@pytest.mark.ray
def test_the_cluster_runs_a_task_and_restores_the_environment():
    from testkit.ray_cluster import RAY_TEST_ENV, local_ray_cluster

    before = {name: os.environ.get(name) for name in RAY_TEST_ENV}
    with local_ray_cluster("testkit-ray-", num_cpus=1) as ray:
        assert ray.is_initialized()
        assert ray.get(ray.remote(lambda x: 2 * x).remote(21)) == 42
    assert not ray.is_initialized()
    assert {name: os.environ.get(name) for name in RAY_TEST_ENV} == before
