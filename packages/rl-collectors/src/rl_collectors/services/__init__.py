"""Named services for a cluster (TorchRL 0.14's ``torchrl.services``): ``get_services()``
returns a registry (``RayService``) where one worker registers a service (a class started as a
remote actor) and every other worker reaches it by name.

Examples:
    >>> from rl_collectors.services import RayService, ServiceBase
    >>> issubclass(RayService, ServiceBase)
    True
"""

from __future__ import annotations

from typing import Any

from rl_collectors.services.base import ServiceBackend, ServiceBase
from rl_collectors.services.ray_service import RayService


def get_services(backend: str = "ray", **init_kwargs: Any) -> ServiceBase:
    """The service registry of ``backend`` (only ``"ray"``: a ``RayService``).

    Args:
        backend: the engine; ``"ray"``.
        **init_kwargs: ``RayService``'s arguments (``ray_init_config``, ``namespace``).

    Raises:
        ValueError: another backend.
    """
    if backend != "ray":
        raise ValueError(
            f"get_services: expected backend 'ray' (the only service engine here), got {backend!r}."
        )
    return RayService(**init_kwargs)


__all__ = ["ServiceBackend", "ServiceBase", "RayService", "get_services"]
