"""Reward2GoTransform: discounted returns-to-go of trajectories (the replay-buffer side)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Composite, EnvBase, Transform
from rl_core.keys import DONE, NEXT, REWARD, NestedKey


def reward_to_go(
    reward: torch.Tensor, done: torch.Tensor, gamma: float, time_dim: int
) -> torch.Tensor:
    """``G_t = r_t + gamma * G_{t+1} * (1 - done_t)``: returns-to-go restarted after each done.

    Args:
        reward: rewards with a time dim at ``time_dim``.
        done: flags (broadcastable to ``reward``) ending an episode at step ``t``.
        gamma: the discount.
        time_dim: the time dim (non-negative).

    Returns:
        The returns-to-go, shaped like ``reward``. A trajectory cut before its end (no final
        done) is summed up to its last step.
    """
    out = torch.empty_like(reward)
    keep = (~done.bool()).to(reward.dtype)
    running = torch.zeros_like(reward.select(time_dim, 0))
    for t in range(reward.shape[time_dim] - 1, -1, -1):
        running = reward.select(time_dim, t) + gamma * running * keep.select(time_dim, t)
        out.select(time_dim, t).copy_(running)
    return out


class Reward2GoTransform(Transform):
    """Writes the discounted return-to-go of each step of a trajectory.

    It needs the whole future of each step, so it runs on trajectories (a rollout, or a
    batch written to a replay buffer), never inside an env: the last batch dim of the
    TensorDict is time, and an episode ends after each step whose ``done_key`` is set.

    Args:
        gamma: the discount.
        in_keys: the rewards. Defaults to ``[("next", "reward")]``.
        out_keys: where the returns go. Defaults to ``["reward_to_go"]``.
        done_key: the flag ending an episode. Defaults to ``("next", "done")``.

    Raises:
        ValueError: the transform is put in an env (directly, or within a ``Compose``: on the
            specs); ``ENV_ERR`` is the message.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> traj = TensorDict(batch_size=[4])
        >>> traj["next", "reward"] = torch.ones(4, 1)
        >>> traj["next", "done"] = torch.tensor([[False], [True], [False], [False]])
        >>> Reward2GoTransform(gamma=0.5)(traj)["reward_to_go"].squeeze(-1).tolist()
        [1.5, 1.0, 1.5, 1.0]
    """

    def __init__(
        self,
        gamma: float = 1.0,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        *,
        done_key: NestedKey = (NEXT, DONE),
    ) -> None:
        in_keys = [(NEXT, REWARD)] if in_keys is None else in_keys
        super().__init__(
            in_keys=in_keys, out_keys=["reward_to_go"] if out_keys is None else out_keys
        )
        self.gamma = float(gamma)
        self.done_key = done_key

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.batch_dims == 0:
            raise ValueError(
                "Reward2GoTransform: expected a trajectory (its last batch dim is time), got "
                "batch size ()."
            )
        done = tensordict.get(self.done_key, None)
        if done is None:
            raise KeyError(f"Reward2GoTransform: the trajectory has no {self.done_key!r} entry.")
        time_dim = tensordict.batch_dims - 1
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            reward = tensordict.get(in_key)
            tensordict.set(out_key, reward_to_go(reward, done, self.gamma, time_dim))
        return tensordict

    #: The error of putting the transform in an env (TorchRL's attribute name).
    ENV_ERR = (
        "Reward2GoTransform: it needs future rewards, so it cannot run in an env; apply it to "
        "trajectories such as rollouts or replay-buffer batches"
    )

    def set_container(self, container: Any) -> None:
        if isinstance(container, EnvBase):  # as TorchRL: refused when put in an env
            raise ValueError(self.ENV_ERR)
        super().set_container(container)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        # reached when the transform sits in a Compose that is put in an env
        raise ValueError(self.ENV_ERR)

    def extra_repr(self) -> str:
        return f"gamma={self.gamma}, {super().extra_repr()}"


__all__ = ["Reward2GoTransform", "reward_to_go"]
