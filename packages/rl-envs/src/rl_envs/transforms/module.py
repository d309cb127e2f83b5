"""ModuleTransform: a TensorDict module run as a transform (on the forward or inverse path)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Composite, TensorSpec, Transform

SpecMap = TensorSpec | Callable[[Composite], Composite] | None


def _check_spec_map(name: str, value: SpecMap) -> None:
    if value is not None and not isinstance(value, TensorSpec) and not callable(value):
        raise TypeError(
            f"ModuleTransform: expected {name} as a spec, a function of the spec or None, got "
            f"{type(value).__name__}."
        )


def _apply_spec_map(value: SpecMap, spec: Composite) -> Composite:
    if value is None:
        return spec
    if isinstance(value, TensorSpec):
        return value.clone()
    return value(spec)


class ModuleTransform(Transform):
    """Runs a TensorDict module (``tensordict.nn.TensorDictModule`` or any module with
    ``in_keys`` and ``out_keys`` that maps a TensorDict) as a transform (TorchRL's
    ``ModuleTransform``).

    With ``inverse=False`` (the default) the module runs on each reset and step output and on
    TensorDicts given to the transform (its ``in_keys``/``out_keys`` are the module's); with
    ``inverse=True`` it runs on the inverse path, on what the policy writes before the env
    reads it (its ``out_keys_inv`` are the module's ``in_keys``, its ``in_keys_inv`` the
    module's ``out_keys``). The specs are unchanged unless a ``*_spec_transform`` says how:
    a spec (the new ``Composite`` of that group) or a function of the group's ``Composite``.

    With ``device`` the module runs on that device and its outputs come back to the data's.
    To run the module in a Ray actor, build :class:`RayModuleTransform` (TorchRL's
    ``use_ray_service=True`` picks that class inside the constructor; here the class is
    chosen by the caller).

    Args:
        module: the module (keyword-only; exclusive with ``module_factory``).
        module_factory: a callable building it (keyword-only).
        no_grad: run the module under ``torch.no_grad()`` (keyword-only). Defaults to False.
        inverse: run on the inverse path (keyword-only). Defaults to False.
        device: where the module runs (keyword-only).
        use_ray_service: must be False here (keyword-only; see above).

    ``actor_name``, ``num_gpus`` and ``num_cpus`` are :class:`RayModuleTransform`'s settings and
    must be None here; ``observation_spec_transform``, ``action_spec_transform``,
    ``reward_spec_transform``, ``done_spec_transform`` and ``state_spec_transform`` are the spec
    maps (all keyword-only).

    Raises:
        ValueError: neither or both of ``module`` and ``module_factory``, or a Ray setting.
        TypeError: a module without ``in_keys``/``out_keys``, or a spec map of another type.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> double = TensorDictModule(lambda x: 2 * x, in_keys=["observation"], out_keys=["twice"])
        >>> t = ModuleTransform(module=double)
        >>> t(TensorDict(observation=torch.tensor([1.0, 3.0])))["twice"].tolist()
        [2.0, 6.0]
    """

    def __init__(
        self,
        *,
        module: Any = None,
        module_factory: Callable[[], Any] | None = None,
        no_grad: bool = False,
        inverse: bool = False,
        device: torch.device | str | None = None,
        use_ray_service: bool = False,
        actor_name: str | None = None,
        num_gpus: int | None = None,
        num_cpus: int | None = None,
        observation_spec_transform: SpecMap = None,
        action_spec_transform: SpecMap = None,
        reward_spec_transform: SpecMap = None,
        done_spec_transform: SpecMap = None,
        state_spec_transform: SpecMap = None,
    ) -> None:
        if (module is None) == (module_factory is None):
            raise ValueError(
                "ModuleTransform: expected exactly one of module and module_factory, got "
                f"{'both' if module is not None else 'neither'}."
            )
        ray_settings = {
            "use_ray_service": use_ray_service or None,
            "actor_name": actor_name,
            "num_gpus": num_gpus,
            "num_cpus": num_cpus,
        }
        given = [name for name, value in ray_settings.items() if value is not None]
        if given:
            raise ValueError(
                f"ModuleTransform: {given} run the module in a Ray actor; build "
                f"RayModuleTransform(module=..., ...) with them instead (rl_envs.transforms)."
            )
        if module is None:
            if not callable(module_factory):
                raise TypeError(
                    f"ModuleTransform: expected module_factory as a callable, got "
                    f"{type(module_factory).__name__}."
                )
            module = module_factory()
        keys = (getattr(module, "in_keys", None), getattr(module, "out_keys", None))
        if keys[0] is None or keys[1] is None or not callable(module):
            raise TypeError(
                f"ModuleTransform: expected a TensorDict module with in_keys and out_keys "
                f"(e.g. tensordict.nn.TensorDictModule), got {type(module).__name__}."
            )
        specs = {
            "observation_spec_transform": observation_spec_transform,
            "action_spec_transform": action_spec_transform,
            "reward_spec_transform": reward_spec_transform,
            "done_spec_transform": done_spec_transform,
            "state_spec_transform": state_spec_transform,
        }
        for name, value in specs.items():
            _check_spec_map(name, value)
        module_in, module_out = list(keys[0]), list(keys[1])
        super().__init__()
        # The transform's keys are the module's, on the path it runs on.
        self.in_keys, self.out_keys = ([], []) if inverse else (module_in, module_out)
        self.in_keys_inv, self.out_keys_inv = (module_out, module_in) if inverse else ([], [])
        self.module = module
        self.no_grad = bool(no_grad)
        self.inverse = bool(inverse)
        self.device = None if device is None else torch.device(device)
        for name, value in specs.items():
            setattr(self, name, value)

    def _run(self, tensordict: TensorDictBase) -> TensorDictBase:
        context = torch.no_grad() if self.no_grad else nullcontext()
        with context:
            if self.device is None or tensordict.device == self.device:
                return self.module(tensordict)
            out = self.module(tensordict.to(self.device))
            written = self.in_keys_inv if self.inverse else self.out_keys
            for key in written:
                tensordict.set(key, out.get(key).to(tensordict.device))
            return tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict if self.inverse else self._run(tensordict)

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._run(tensordict) if self.inverse else tensordict

    @property
    def has_inverse(self) -> bool:
        return self.inverse

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return _apply_spec_map(self.observation_spec_transform, observation_spec)

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        return _apply_spec_map(self.reward_spec_transform, reward_spec)

    def transform_done_spec(self, done_spec: Composite) -> Composite:
        return _apply_spec_map(self.done_spec_transform, done_spec)

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        return _apply_spec_map(self.action_spec_transform, action_spec)

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        return _apply_spec_map(self.state_spec_transform, state_spec)

    def update_weights(self, weights: TensorDictBase | dict[str, torch.Tensor]) -> None:
        """Loads new weights into the module: a ``state_dict`` or a TensorDict of parameters
        (``TensorDict.from_module`` layout)."""
        if isinstance(weights, TensorDictBase):
            weights.to_module(self.module)
        else:
            self.module.load_state_dict(weights)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, inverse={self.inverse}, no_grad={self.no_grad}"


__all__ = ["ModuleTransform"]
