"""get_services / RayService on a real local Ray instance: services reached by name from
other Ray workers."""

import sys

import pytest
from testkit.ray_cluster import local_ray_cluster

from rl_collectors.services import RayService, ServiceBase, get_services

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray instance on loopback for the module, in a fresh temp dir."""
    with local_ray_cluster("rlc-ray-", skip_reason='pip install "rl-collectors[ray]"') as ray:
        # pytest's importlib mode imports this module under a name Ray's workers cannot
        # import: its functions and classes travel by value
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        yield ray


class Counter:
    def __init__(self, start: int = 0) -> None:
        self.count = start

    def incr(self) -> int:
        self.count += 1
        return self.count


def test_a_registered_service_is_reached_by_name_from_another_worker(ray_cluster):
    services = get_services(namespace="rlc-test-services")
    assert isinstance(services, RayService)
    assert isinstance(services, ServiceBase)
    try:
        handle = services.register("counter", Counter, 5, num_cpus=0)
        assert ray_cluster.get(handle.incr.remote()) == 6
        assert "counter" in services
        assert services.list() == ["counter"]

        @ray_cluster.remote(num_cpus=0)
        def bump_from_a_worker(namespace):
            # Another process: a fresh registry object, the same service.
            return ray_cluster.get(get_services(namespace=namespace)["counter"].incr.remote())

        assert ray_cluster.get(bump_from_a_worker.remote("rlc-test-services")) == 7
        assert ray_cluster.get(services["counter"].incr.remote()) == 8
        # Namespaces isolate.
        assert "counter" not in get_services(namespace="rlc-other")
        with pytest.raises(ValueError, match="a service 'counter' exists in namespace"):
            services.register("counter", Counter)
        with pytest.raises(KeyError, match=r"no service 'tokenizer' .* registered: \['counter'\]"):
            services.get("tokenizer")
        with pytest.raises(TypeError, match="expected service_factory as a class"):
            services.register("bad", Counter())
        # A service whose actor was killed is named.
        ray_cluster.kill(handle)
        with pytest.raises(RuntimeError, match=r"service 'counter' .* its actor is gone"):
            services.get("counter")
        services.unregister("counter")
        services["counter"] = Counter  # registered again under the freed name
        assert ray_cluster.get(services["counter"].incr.remote()) == 1
    finally:
        services.reset()
    assert services.list() == []
    with pytest.raises(ValueError, match="Failed to look up actor"):  # none left by that name
        ray_cluster.get_actor("rlc-test-services::service::counter", namespace="rlc-test-services")


def test_only_ray_is_a_service_backend():
    with pytest.raises(ValueError, match=r"expected backend 'ray'.*got 'rpc'"):
        get_services("rpc")
