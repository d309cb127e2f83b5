"""``RayModuleTransformScheme``: a trainer's weights to the module of a Ray module transform
(``rl_envs.transforms.RayModuleTransform``), which runs in a Ray actor of its own."""

from __future__ import annotations

from typing import Any

from rl_collectors.weight_sync.scheme import WeightSyncScheme
from rl_collectors.weight_sync.strategy import WeightStrategy


class _TransformTransport:
    """Sends weights to the transform's actor through the transform's ``update_weights``
    (a Ray call that returns once the actor's module holds them)."""

    def __init__(self, transform: Any) -> None:
        self.transform = transform
        self.version = 0

    def send_weights(self, weights: Any, *, version: int) -> None:
        try:
            self.transform.update_weights(weights)
        except Exception as err:
            raise RuntimeError(
                f"RayModuleTransformScheme: sending weights version {version} to the actor of "
                f"{type(self.transform).__name__} failed: {err}"
            ) from err
        self.version = version

    def receive_weights(
        self,
        timeout: float | None = None,
        *,
        model: Any = None,
        strategy: WeightStrategy | None = None,
    ) -> None:
        raise RuntimeError(
            "RayModuleTransformScheme: the transform's actor receives the weights itself "
            "(send loads them into its module); there is no receiving side to run."
        )


class RayModuleTransformScheme(WeightSyncScheme):
    """Weights of a model of the trainer (the ``model`` of ``init_on_sender``) to the module
    that a ``RayModuleTransform`` runs in its Ray actor: ``send`` loads them there (one Ray
    call, returned once the actor holds them), tagged with the scheme's version.

    TorchRL's transform takes the scheme (``RayModuleTransform(..., weight_sync_scheme=)``);
    here the scheme takes the transform (``transform=`` or :meth:`set_transform`: any object
    with ``update_weights(weights)``, so rl-collectors does not import rl-envs). TorchRL's
    scheme opens a ``torch.distributed`` group with the actor; this one uses the
    transform's own Ray call, and ``backend`` is accepted and ignored.

    Args:
        strategy: ``"tensordict"`` or ``"state_dict"``: the form the transform receives.

    Keyword Args:
        backend: TorchRL's process-group backend (ignored).
        transform: the ``RayModuleTransform`` whose module gets the weights.

    Raises:
        TypeError: ``transform`` has no ``update_weights``.
        RuntimeError: ``init_on_sender`` before a transform was set; a send that failed
            (the actor is gone), naming the transform.

    Examples:
        >>> import torch
        >>> from rl_collectors.weight_sync import RayModuleTransformScheme
        >>> class Receiver:  # stands for a RayModuleTransform (its actor needs Ray)
        ...     def update_weights(self, weights):
        ...         self.got = weights
        >>> trainer, receiver = torch.nn.Linear(2, 1), Receiver()
        >>> scheme = RayModuleTransformScheme("state_dict", transform=receiver)
        >>> scheme.init_on_sender(model=trainer)
        >>> scheme.send(), sorted(receiver.got)
        (1, ['bias', 'weight'])
    """

    def __init__(
        self, strategy: str = "tensordict", *, backend: str = "gloo", transform: Any = None
    ) -> None:
        super().__init__(strategy)  # type: ignore[arg-type]
        self.backend = backend
        self._transform: Any = None
        if transform is not None:
            self.set_transform(transform)

    def set_transform(self, transform: Any) -> None:
        """The transform whose actor's module gets the weights (before ``init_on_sender``)."""
        if not callable(getattr(transform, "update_weights", None)):
            raise TypeError(
                f"{type(self).__name__}.set_transform: expected a RayModuleTransform (an object "
                f"with update_weights(weights)), got {type(transform).__name__}."
            )
        self._transform = transform

    @property
    def transform(self) -> Any:
        """The transform set with ``transform=`` or :meth:`set_transform`, or ``None``."""
        return self._transform

    def create_transport(self, *, worker_idx: int, weights: Any) -> _TransformTransport:
        if self._transform is None:
            raise RuntimeError(
                f"{type(self).__name__}.init_on_sender: no transform to send to; build the "
                f"scheme with transform=<RayModuleTransform> or call set_transform first."
            )
        return _TransformTransport(self._transform)


__all__ = ["RayModuleTransformScheme"]
