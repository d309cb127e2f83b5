"""Policies that need no network."""

from __future__ import annotations

from tensordict import TensorDictBase

from rl_core.keys import ACTION, NestedKey
from rl_core.specs import Composite, TensorSpec


class RandomPolicy:
    """Writes uniformly random actions drawn from an action spec.

    Args:
        action_spec: a leaf spec (written under ``action_key``) or a Composite of actions.
        action_key: where a leaf spec's action goes. Defaults to ``"action"``.

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_core.envs import RandomPolicy
        >>> from rl_core.specs import Bounded
        >>> policy = RandomPolicy(Bounded(-1.0, 1.0, shape=(4, 2)))
        >>> policy(TensorDict(batch_size=[4]))["action"].shape
        torch.Size([4, 2])
    """

    def __init__(self, action_spec: TensorSpec, action_key: NestedKey = ACTION) -> None:
        if not isinstance(action_spec, TensorSpec):
            raise TypeError(
                f"RandomPolicy: expected a TensorSpec, got {type(action_spec).__name__}."
            )
        self.action_spec = action_spec
        self.action_key = action_key

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        if isinstance(self.action_spec, Composite):
            return tensordict.update(self.action_spec.rand())
        return tensordict.set(self.action_key, self.action_spec.rand())
