"""RayTransform and RayModuleTransform: a transform that runs in a Ray actor."""

from __future__ import annotations

import os
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform
from rl_envs.transforms.module import ModuleTransform

_RAY_HINT = 'pip install "rl-envs[ray]"'


def _ray() -> Any:
    try:
        import ray
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(f"RayTransform needs Ray: {_RAY_HINT}") from err
    return ray


class _TransformHost:
    """The Ray actor's object: one transform, built in the actor, and its methods by name."""

    def __init__(self, factory: Any, kwargs: dict[str, Any]) -> None:
        self.transform = factory(**kwargs)

    def keys(self) -> tuple[list, list, list, list, bool]:
        t = self.transform
        return (
            list(t.in_keys),
            list(t.out_keys),
            list(t.in_keys_inv),
            list(t.out_keys_inv),
            bool(t.has_inverse),
        )

    def call(self, name: str, *args: Any) -> Any:
        return getattr(self.transform, name)(*args)

    def pid(self) -> int:
        return os.getpid()


class RayTransform(Transform):
    """A transform whose work runs in a Ray actor (TorchRL's ``RayTransform`` base).

    The actor holds the transform a subclass builds (:meth:`_make_transform`); this local
    object sits in the env (its container, parent and keys are local) and sends each call of
    the transform's paths and spec maps to the actor (``ray.get``): the data travels to the
    actor on the CPU and comes back on ``device`` when one is given. Several envs (or
    ``ParallelEnv`` workers) can share one actor by name (``actor_name``): an actor of that
    name already running is reused. Ray starts a local instance on first use unless
    ``ray.init`` ran before.

    Subclasses implement :meth:`_make_transform` (a picklable callable building the
    transform in the actor from the constructor's remaining keyword arguments).

    Args:
        num_cpus: CPUs reserved for the actor (keyword-only).
        num_gpus: GPUs reserved for the actor (keyword-only).
        device: where outputs are put back locally (keyword-only).
        actor_name: the actor's name, to share it (keyword-only).
        **kwargs: the arguments of the transform built in the actor.

    Raises:
        ImportError: Ray is not installed (``pip install "rl-envs[ray]"``).
    """

    def __init__(
        self,
        *,
        num_cpus: float | None = None,
        num_gpus: float | None = None,
        device: torch.device | str | None = None,
        actor_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        if type(self)._make_transform is RayTransform._make_transform:
            raise TypeError(
                f"{type(self).__name__}: RayTransform is a base; build a subclass that implements "
                f"_make_transform(**kwargs) (RayModuleTransform runs a ModuleTransform)."
            )
        super().__init__()
        ray = _ray()
        self._num_cpus = num_cpus
        self._num_gpus = num_gpus
        self._device = None if device is None else torch.device(device)
        self._actor_name = actor_name
        actor = None
        if actor_name is not None:
            try:
                actor = ray.get_actor(actor_name)
            except ValueError:
                actor = None
        if actor is None:
            options: dict[str, Any] = {}
            if num_cpus is not None:
                options["num_cpus"] = num_cpus
            if num_gpus is not None:
                options["num_gpus"] = num_gpus
            if actor_name is not None:
                options["name"] = actor_name
            remote = ray.remote(_TransformHost)
            if options:
                remote = remote.options(**options)
            actor = remote.remote(type(self)._make_transform, kwargs)
        self.__dict__["_actor"] = actor
        keys = ray.get(actor.keys.remote())
        self.in_keys, self.out_keys, self.in_keys_inv, self.out_keys_inv = keys[:4]
        self._remote_has_inverse = keys[4]

    @staticmethod
    def _make_transform(**kwargs: Any) -> Transform:
        """Builds the transform the actor runs (called in the actor); subclasses implement it."""
        raise NotImplementedError

    # ------------------------------------------------------------------ remote calls
    def _remote(self, name: str, *args: Any) -> Any:
        ray = _ray()
        args = tuple(a.cpu() if isinstance(a, TensorDictBase | Composite) else a for a in args)
        out = ray.get(self._actor.call.remote(name, *args))
        if self._device is not None and isinstance(out, TensorDictBase | Composite):
            out = out.to(self._device)
        return out

    @property
    def actor(self) -> Any:
        """The Ray actor handle."""
        return self._actor

    def actor_pid(self) -> int:
        """The process id of the actor (to check where the work runs)."""
        return _ray().get(self._actor.pid.remote())

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._remote("_call", tensordict)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._remote("forward", tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._remote("_inv_call", tensordict)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._remote("_step", tensordict, next_tensordict)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._remote("_reset", tensordict, tensordict_reset)

    @property
    def has_inverse(self) -> bool:
        return self._remote_has_inverse

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return self._remote("transform_output_spec", output_spec)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return self._remote("transform_input_spec", input_spec)

    def clone(self) -> RayTransform:
        """A local copy that shares the same actor."""
        return super().clone()  # type: ignore[return-value]

    def __deepcopy__(self, memo: dict) -> RayTransform:
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        Transform.__init__(new, self.in_keys, self.out_keys, self.in_keys_inv, self.out_keys_inv)
        for name in ("_num_cpus", "_num_gpus", "_device", "_actor_name", "_remote_has_inverse"):
            setattr(new, name, getattr(self, name))
        new.__dict__["_actor"] = self._actor
        return new

    def close(self) -> None:
        self._remote("close")

    def kill(self) -> None:
        """Ends the actor (every transform sharing it loses it)."""
        _ray().kill(self._actor)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, actor_name={self._actor_name}"


class RayModuleTransform(RayTransform):
    """A :class:`~rl_envs.transforms.ModuleTransform` that runs in a Ray actor (TorchRL's
    ``RayModuleTransform``): the module lives in the actor, and ``update_weights`` sends it new
    weights.

    Args:
        num_cpus, num_gpus, device, actor_name: as :class:`RayTransform` (keyword-only).
        **kwargs: :class:`~rl_envs.transforms.ModuleTransform`'s arguments (``module`` or a
            picklable ``module_factory``, ``no_grad``, ``inverse``, the spec maps).

    Raises:
        ImportError: Ray is not installed (``pip install "rl-envs[ray]"``).
    """

    @staticmethod
    def _make_transform(**kwargs: Any) -> Transform:
        return ModuleTransform(**kwargs)

    def update_weights(self, weights: TensorDictBase | dict[str, torch.Tensor]) -> None:
        """Loads a ``state_dict`` or a TensorDict of parameters into the actor's module."""
        if isinstance(weights, TensorDictBase):
            weights = weights.cpu()
        else:
            weights = {k: v.detach().cpu() for k, v in weights.items()}
        self._remote("update_weights", weights)


__all__ = ["RayModuleTransform", "RayTransform"]
