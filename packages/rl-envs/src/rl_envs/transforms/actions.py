"""ActionScaling and ActionMask: the policy's view of the action space."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Bounded, Composite, TensorSpec, Transform, TransformedEnv
from rl_core.keys import ACTION, ACTION_MASK, NestedKey
from rl_envs.transforms._common import bounds, map_action_leaves


class ActionScaling(Transform):
    """The policy writes actions in ``[-1, 1]``; the env gets them mapped to its bounds.

    The inverse path maps ``a`` to ``low + (a + 1) / 2 * (high - low)`` with the bounds of
    the env's (Bounded, finite) action spec; the action spec shown is ``Bounded(-1, 1)``.

    Args:
        in_keys_inv: the actions. Defaults to ``["action"]``.
        out_keys_inv: the keys the policy writes; default ``in_keys_inv``.

    Raises:
        TypeError: (on the specs) an action spec is not Bounded with finite float bounds.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ActionScaling()
        >>> t.low, t.high = torch.tensor([-2.0]), torch.tensor([2.0])
        >>> t.inv(TensorDict(action=torch.tensor([0.5])))["action"].tolist()
        [1.0]
    """

    def __init__(
        self,
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        out_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(
            in_keys_inv=ACTION if in_keys_inv is None else in_keys_inv, out_keys_inv=out_keys_inv
        )
        if len(self.in_keys_inv) != 1:
            raise ValueError(
                f"ActionScaling: expected one action key, got {self.in_keys_inv}; use one "
                f"ActionScaling per action."
            )
        self.register_buffer("low", None)
        self.register_buffer("high", None)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        if self.low is None:
            raise RuntimeError(
                "ActionScaling: the env bounds are unknown; put the transform in an env."
            )
        low, high = self.low, self.high
        if low.device != value.device:
            low, high = low.to(value.device), high.to(value.device)
        return (low + (value.clamp(-1, 1) + 1) * 0.5 * (high - low)).to(low.dtype)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        found = bounds(spec)
        if found is None or not spec.dtype.is_floating_point:
            raise TypeError(
                f"ActionScaling: the action {key!r} has a {type(spec).__name__} spec of dtype "
                f"{spec.dtype}; expected Bounded with finite float bounds."
            )
        self.low, self.high = found[0].clone(), found[1].clone()
        return Bounded(-1.0, 1.0, shape=spec.shape, device=spec.device, dtype=spec.dtype)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return map_action_leaves(
            input_spec, self.in_keys_inv, self.out_keys_inv, self._map, "ActionScaling"
        )


class ActionMask(Transform):
    """Keeps the env's action spec mask equal to the ``action_mask`` entry it observes.

    After every reset and step, the mask of the (Categorical or OneHot) action spec of the
    env holding this transform is updated, so random actions (``env.rand_action``, rollouts
    without a policy) are legal moves.

    Args:
        action_key: the action. Defaults to ``"action"``.
        mask_key: the observed mask (bool, ``[*batch, n]``). Defaults to ``"action_mask"``.

    Raises:
        KeyError: (on the specs) the env has no such mask observation or action.
        TypeError: (on the specs) the action spec has no mask (not Categorical or OneHot).

    Examples:
        >>> ActionMask().in_keys
        ['action', 'action_mask']
    """

    def __init__(self, action_key: NestedKey = ACTION, mask_key: NestedKey = ACTION_MASK) -> None:
        super().__init__(in_keys=[action_key, mask_key])
        self.action_key = action_key
        self.mask_key = mask_key

    def _env(self) -> TransformedEnv:
        container = self.container
        while container is not None and not isinstance(container, TransformedEnv):
            container = container.container
        if container is None:
            raise RuntimeError("ActionMask: the transform is in no env; it updates env specs.")
        return container

    def _update(self, tensordict: TensorDictBase) -> TensorDictBase:
        mask = tensordict.get(self.mask_key, None)
        if mask is None:
            raise KeyError(f"ActionMask: the env output has no {self.mask_key!r} entry.")
        self._env().full_action_spec[self.action_key].update_mask(mask.to(torch.bool))
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._update(tensordict_reset)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._update(next_tensordict)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        known = output_spec["full_observation_spec"].keys(include_nested=True, leaves_only=True)
        if self.mask_key not in known:
            raise KeyError(
                f"ActionMask: the env has no {self.mask_key!r} observation (it has {known})."
            )
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        actions = input_spec["full_action_spec"]
        if self.action_key not in actions.keys(include_nested=True, leaves_only=True):
            raise KeyError(f"ActionMask: the env has no {self.action_key!r} action.")
        if not hasattr(actions[self.action_key], "update_mask"):
            raise TypeError(
                f"ActionMask: the action {self.action_key!r} has a "
                f"{type(actions[self.action_key]).__name__} spec, which holds no mask; expected "
                f"Categorical or OneHot."
            )
        return input_spec

    def extra_repr(self) -> str:
        return f"action_key={self.action_key!r}, mask_key={self.mask_key!r}"


__all__ = ["ActionMask", "ActionScaling"]
