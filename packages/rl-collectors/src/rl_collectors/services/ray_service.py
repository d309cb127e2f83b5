"""RayService: services as named, detached Ray actors in a namespace of their own."""

from __future__ import annotations

import contextlib
from typing import Any

from rl_collectors.services.base import ServiceBase

# ``register``'s keyword arguments that are Ray actor options, not constructor arguments.
RAY_ACTOR_OPTIONS = (
    "num_cpus",
    "num_gpus",
    "memory",
    "object_store_memory",
    "resources",
    "accelerator_type",
    "max_concurrency",
    "max_restarts",
    "max_task_retries",
    "max_pending_calls",
    "scheduling_strategy",
    "runtime_env",
)


class _Registry:
    """A Ray actor: the names registered in one namespace (so that ``list`` shows only
    services, not every named actor)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def add(self, name: str) -> bool:
        """Claims ``name``; ``False`` if it was taken."""
        if name in self.names:
            return False
        self.names.add(name)
        return True

    def remove(self, name: str) -> None:
        self.names.discard(name)

    def list(self) -> list[str]:
        return sorted(self.names)


class RayService(ServiceBase):
    """Services as named, detached Ray actors: registered by one worker, reached by name from
    any process of the cluster (``get_services(namespace=...)[name]``).

    Each service is the actor ``"<namespace>::service::<name>"`` in the Ray namespace
    ``namespace``; a registry actor of the namespace keeps the names. A ``RayService`` built
    where Ray is not initialised starts it (``ray.init(**ray_init_config)``).

    Args:
        ray_init_config: ``ray.init`` arguments when this process has not initialised Ray.
        namespace: the Ray namespace of the services (isolates experiments).

    Raises:
        ImportError: Ray is not installed.
    """

    def __init__(
        self,
        ray_init_config: dict[str, Any] | None = None,
        namespace: str = "torchrl_services",
    ) -> None:
        if not isinstance(namespace, str) or not namespace:
            raise ValueError(
                f"RayService: expected namespace as a non-empty str, got {namespace!r}."
            )
        try:
            import ray
        except ImportError as err:
            raise ImportError('RayService needs Ray: pip install "rl-collectors[ray]"') from err
        self._ray = ray
        self.namespace = namespace
        if not ray.is_initialized():
            ray.init(**{"namespace": namespace, **(ray_init_config or {})})
        self._registry = (
            ray.remote(num_cpus=0)(_Registry)
            .options(
                name=f"{namespace}::_registry",
                namespace=namespace,
                lifetime="detached",
                get_if_exists=True,
            )
            .remote()
        )

    def _actor_name(self, name: str) -> str:
        return f"{self.namespace}::service::{name}"

    def register(self, name: str, service_factory: type, *args: Any, **kwargs: Any) -> Any:
        """Starts ``service_factory(*args, **constructor kwargs)`` as a detached Ray actor
        named after ``name``; Ray actor options among ``kwargs`` (``num_cpus``, ``num_gpus``,
        ``max_concurrency``, ... see ``RAY_ACTOR_OPTIONS``) go to Ray. Returns the actor
        handle.

        Raises:
            TypeError: ``name`` is not a str or ``service_factory`` not a class.
            ValueError: a service ``name`` exists in the namespace.
        """
        ray = self._ray
        if not isinstance(name, str) or not name:
            raise TypeError(f"RayService.register: expected name as a non-empty str, got {name!r}.")
        if not isinstance(service_factory, type):
            raise TypeError(
                f"RayService.register: expected service_factory as a class (Ray makes it an "
                f"actor), got {type(service_factory).__name__}."
            )
        options = {key: kwargs.pop(key) for key in RAY_ACTOR_OPTIONS if key in kwargs}
        if not ray.get(self._registry.add.remote(name)):
            raise ValueError(
                f"RayService.register: a service {name!r} exists in namespace "
                f"{self.namespace!r}; pick another name, get() it, or reset() the registry."
            )
        try:
            return (
                ray.remote(service_factory)
                .options(
                    name=self._actor_name(name),
                    namespace=self.namespace,
                    lifetime="detached",
                    **options,
                )
                .remote(*args, **kwargs)
            )
        except BaseException:
            ray.get(self._registry.remove.remote(name))
            raise

    def get(self, name: str) -> Any:
        """The actor handle of the service ``name``.

        Raises:
            KeyError: no service has that name (the message lists those that do).
            RuntimeError: the service is registered but its actor is gone.
        """
        ray = self._ray
        if name not in self:
            raise KeyError(
                f"RayService.get: no service {name!r} in namespace {self.namespace!r}; "
                f"registered: {self.list()}."
            )
        try:
            return ray.get_actor(self._actor_name(name), namespace=self.namespace)
        except ValueError as err:
            raise RuntimeError(
                f"RayService.get: service {name!r} of namespace {self.namespace!r} is "
                f"registered but its actor is gone (killed or crashed); unregister() it and "
                f"register it again."
            ) from err

    def __contains__(self, name: str) -> bool:
        return name in self.list()

    def list(self) -> list[str]:
        return self._ray.get(self._registry.list.remote())

    def unregister(self, name: str) -> None:
        """Ends the service ``name`` (if its actor still runs) and frees the name."""
        ray = self._ray
        if name not in self:
            raise KeyError(
                f"RayService.unregister: no service {name!r} in namespace {self.namespace!r}."
            )
        with contextlib.suppress(ValueError):  # its actor is gone already
            ray.kill(ray.get_actor(self._actor_name(name), namespace=self.namespace))
        ray.get(self._registry.remove.remote(name))

    def reset(self) -> None:
        """Ends every service of the namespace and frees their names."""
        for name in self.list():
            self.unregister(name)

    def __repr__(self) -> str:
        return f"RayService(namespace={self.namespace!r}, services={self.list()})"


__all__ = ["RayService"]
