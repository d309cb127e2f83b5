"""DiscreteActionProjection: one-hot actions of a larger action set projected onto a smaller."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core import Composite, OneHot, Transform
from rl_core.keys import ACTION, NestedKey


class DiscreteActionProjection(Transform):
    """Lets a policy with ``max_actions`` one-hot actions drive an env that has
    ``num_actions_effective`` (``<= max_actions``), e.g. one policy over several discrete
    tasks with different action counts.

    The env's action spec is shown as ``OneHot(max_actions)``. On the way to the env (the
    inverse path) an action ``i < num_actions_effective`` is passed on as the one-hot ``i`` of
    ``num_actions_effective``; a larger ``i`` is replaced by an action drawn uniformly from
    ``{0, ..., num_actions_effective - 1}`` (torch's global generator). What the policy
    wrote is left as it is. On a plain TensorDict (``include_forward``, e.g. a replay-buffer
    sample) the one-hot actions are re-encoded with ``max_actions`` entries.

    Args:
        num_actions_effective: the env's number of actions.
        max_actions: the policy's number of actions.
        action_key: the action's key. Defaults to ``"action"``.
        include_forward: map actions on plain TensorDicts too. Defaults to ``True``.

    Raises:
        ValueError: counts below 1 or ``max_actions < num_actions_effective``; (at a step) an
            action whose last dim is not ``max_actions``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = DiscreteActionProjection(num_actions_effective=2, max_actions=3)
        >>> td = TensorDict({"action": torch.tensor([0, 1, 0])}, [])
        >>> t.inv(td)["action"].tolist(), td["action"].tolist()
        ([0, 1], [0, 1, 0])
    """

    def __init__(
        self,
        num_actions_effective: int,
        max_actions: int,
        action_key: NestedKey = ACTION,
        include_forward: bool = True,
    ) -> None:
        for name, value in (
            ("num_actions_effective", num_actions_effective),
            ("max_actions", max_actions),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"DiscreteActionProjection: expected {name} to be an int >= 1, got {value!r}."
                )
        if max_actions < num_actions_effective:
            raise ValueError(
                f"DiscreteActionProjection: expected max_actions >= num_actions_effective, got "
                f"max_actions={max_actions} < num_actions_effective={num_actions_effective}."
            )
        super().__init__(
            in_keys=[action_key] if include_forward else [],
            in_keys_inv=[action_key],
        )
        self.num_actions_effective = num_actions_effective
        self.max_actions = max_actions
        self.action_key = action_key

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.one_hot(value.argmax(-1), self.max_actions).to(value.dtype)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        if value.shape[-1] != self.max_actions:
            raise ValueError(
                f"DiscreteActionProjection: expected {self.action_key!r} to be one-hot over "
                f"max_actions={self.max_actions} (last dim {self.max_actions}), got shape "
                f"{tuple(value.shape)}."
            )
        index = value.long().argmax(-1)
        outside = index >= self.num_actions_effective
        if bool(outside.any()):
            drawn = torch.randint(self.num_actions_effective, index.shape, device=index.device)
            index = torch.where(outside, drawn, index)
        return torch.nn.functional.one_hot(index, self.num_actions_effective).to(value.dtype)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        spec = action_spec[self.action_key]
        if spec.shape[-1] != self.num_actions_effective:
            raise ValueError(
                f"DiscreteActionProjection: the env's action {self.action_key!r} has "
                f"{spec.shape[-1]} one-hot entries, expected num_actions_effective="
                f"{self.num_actions_effective}."
            )
        action_spec[self.action_key] = OneHot(
            self.max_actions,
            shape=(*spec.shape[:-1], self.max_actions),
            device=spec.device,
            dtype=spec.dtype,
        )
        return action_spec


__all__ = ["DiscreteActionProjection"]
