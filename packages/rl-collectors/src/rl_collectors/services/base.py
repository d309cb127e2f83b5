"""ServiceBase: a registry of named services (long-lived remote actors: a tokenizer, a replay
buffer, a reward model) that every worker of a cluster can reach by name."""

from __future__ import annotations

import abc
from typing import Any, Literal, TypeAlias

# TorchRL 0.14's names of the engines a service can run on; RayService implements "ray".
ServiceBackend: TypeAlias = Literal[
    "direct", "thread", "process", "ray", "rpc", "submitit", "monarch", "distributed"
]


class ServiceBase(abc.ABC):
    """A registry of named services: ``register`` starts one, ``get`` (or
    ``registry[name]``) returns a handle to it from any worker, ``list`` names them, ``reset``
    ends them all.

    Subclasses implement the five abstract methods; ``registry[name]`` and
    ``registry[name] = factory`` are derived.
    """

    @abc.abstractmethod
    def register(self, name: str, service_factory: type, *args: Any, **kwargs: Any) -> Any:
        """Starts ``service_factory(*args, **kwargs)`` as the service ``name``; returns its
        handle. Raises ``ValueError`` if ``name`` is taken."""

    @abc.abstractmethod
    def get(self, name: str) -> Any:
        """The handle of the service ``name``; ``KeyError`` if none has that name."""

    @abc.abstractmethod
    def __contains__(self, name: str) -> bool:
        """Whether a service ``name`` is registered."""

    @abc.abstractmethod
    def list(self) -> list[str]:
        """The registered names, sorted."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Ends every registered service and empties the registry."""

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def __setitem__(self, name: str, service_factory: type) -> None:
        self.register(name, service_factory)


__all__ = ["ServiceBackend", "ServiceBase"]
