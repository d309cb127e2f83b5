import time

import pytest
from testkit.ray_cluster import local_ray_cluster

from rl_core import TransformedEnv
from rl_llm.envs import DataLoadingPrimer, LLMEnv, RayDataLoadingPrimer

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray instance on loopback for the module, in a fresh temp dir."""
    with local_ray_cluster("rl-llm-ray-") as ray:
        yield ray


def test_envs_share_one_data_loader_served_by_an_actor(ray_cluster):
    rows = [{"query": f"q{i}", "answer": str(i)} for i in range(6)]
    first = TransformedEnv(
        LLMEnv(batch_size=(2,)), RayDataLoadingPrimer(rows, actor_name="shared-data")
    )
    # The second primer connects to the running actor (no data of its own).
    second = TransformedEnv(
        LLMEnv(batch_size=(4,)), RayDataLoadingPrimer(actor_name="shared-data", repeats=2)
    )
    a = list(first.reset()["query"])
    b = list(second.reset()["query"])
    c = list(first.reset()["query"])
    assert a == ["q0", "q1"]
    assert b == ["q2", "q2", "q3", "q3"]
    assert c == ["q4", "q5"]
    assert list(first.reset()["answer"]) == ["0", "1"]  # the next epoch
    first.transform.reset_dataloader()
    assert list(second.reset()["query"]) == ["q0", "q0", "q1", "q1"]
    with pytest.raises(ValueError, match="no actor named 'absent'"):
        RayDataLoadingPrimer(actor_name="absent")
    ray_cluster.kill(ray_cluster.get_actor("shared-data"))


def test_use_ray_service_builds_the_ray_primer_with_its_options(ray_cluster):
    rows = [{"query": f"p{i}"} for i in range(4)]
    # An actor of an earlier test may still be releasing its CPU: start from an idle cluster,
    # so the difference below is this primer's actor alone.
    total = ray_cluster.cluster_resources().get("CPU", 0.0)
    deadline = time.monotonic() + 30
    while ray_cluster.available_resources().get("CPU", 0.0) < total and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    free_before = ray_cluster.available_resources().get("CPU", 0.0)
    assert free_before == total, f"the cluster kept {total - free_before} CPU busy for 30 s"
    primer = DataLoadingPrimer(
        rows,
        use_ray_service=True,
        service_backend_options={"actor_name": "service-data", "num_cpus": 0.5},
    )
    assert type(primer) is RayDataLoadingPrimer
    env = TransformedEnv(LLMEnv(batch_size=(2,)), primer)
    other = TransformedEnv(
        LLMEnv(batch_size=(2,)), DataLoadingPrimer(service_backend="ray", actor_name="service-data")
    )
    assert list(env.reset()["query"]) == ["p0", "p1"]
    assert list(other.reset()["query"]) == ["p2", "p3"]
    # The actor holds the half CPU it asked for.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        free = ray_cluster.available_resources().get("CPU", 0.0)
        if abs(free_before - free - 0.5) < 1e-6:
            break
        time.sleep(0.1)
    assert free_before - free == pytest.approx(0.5)
