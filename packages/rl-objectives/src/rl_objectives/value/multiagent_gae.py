"""GAE for a group of agents: :class:`MultiAgentGAE`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import Tensor, nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_objectives.value.base import ValueEstimatorBase
from rl_objectives.value.gae import GAE

__all__ = ["MultiAgentGAE"]


class MultiAgentGAE(GAE):
    """GAE with per-agent values ``(group, "state_value")`` of shape ``[*B, T, n_agents, 1]``.

    Rewards and done flags are read inside the group (one per agent) when the data has them
    there, else at the root (shared by the team) and broadcast to every agent. The advantage
    and value target are written inside the group.

    Agent masks: where the data has ``(group, "mask")`` (``tensor_keys.mask``; ``True`` where
    the agent is present, ``[*B, T, n_agents]`` with or without a trailing 1, PettingZoo's
    key), an agent absent at the next step of a running episode ends its trajectory there
    (done and terminated: no bootstrap from its next value, no trace across; at a step the env
    already marked done its own flags stand, so a time limit still bootstraps), and the
    advantage and value target of an absent agent are 0. Without the entry nothing changes.

    Args:
        gamma: discount factor in ``[0, 1]``.
        lmbda: trace decay in ``[0, 1]``.
        value_network: writes ``(group, "state_value")`` (e.g. a ``MultiAgentMLP`` critic).

    Keyword Args:
        group: the agent group key. Defaults to ``"agents"``.
        **kwargs: see :class:`~rl_objectives.value.gae.GAE`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.value import MultiAgentGAE
        >>> td = TensorDict(
        ...     agents=TensorDict(state_value=torch.zeros(4, 3, 1), batch_size=[4, 3]),
        ...     next=TensorDict(
        ...         agents=TensorDict(state_value=torch.zeros(4, 3, 1), batch_size=[4, 3]),
        ...         reward=torch.ones(4, 1),  # one team reward
        ...         done=torch.zeros(4, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(4, 1, dtype=torch.bool),
        ...         batch_size=[4],
        ...     ),
        ...     batch_size=[4],
        ... )
        >>> td = MultiAgentGAE(1.0, 1.0, None, skip_existing=True)(td)
        >>> td["agents", "advantage"][:, 0, 0].tolist()
        [4.0, 3.0, 2.0, 1.0]
    """

    @dataclass
    class _AcceptedKeys(ValueEstimatorBase._AcceptedKeys):
        mask: NestedKey = (K.AGENTS, "mask")

    def __init__(
        self,
        gamma: float | Tensor,
        lmbda: float | Tensor,
        value_network: nn.Module | None,
        *,
        group: str = K.AGENTS,
        **kwargs: Any,
    ) -> None:
        super().__init__(gamma, lmbda, value_network, **kwargs)
        self.group = group
        self.set_keys(
            value=(group, K.STATE_VALUE),
            advantage=(group, K.ADVANTAGE),
            value_target=(group, K.VALUE_TARGET),
            mask=(group, "mask"),
        )

    def _mask(self, td: TensorDictBase, like: Tensor) -> Tensor | None:
        mask = td.get(self.tensor_keys.mask, None)
        if mask is None:
            return None
        if mask.numel() != like.numel():
            raise ValueError(
                f"{type(self).__name__}: expected the agent mask at {self.tensor_keys.mask!r} "
                f"to have the value's shape {tuple(like.shape)} (or without its trailing 1), "
                f"got {tuple(mask.shape)}."
            )
        return mask.reshape(like.shape).bool()

    def _estimate(
        self,
        tensordict: TensorDictBase,
        params: TensorDictBase | None,
        target_params: TensorDictBase | None,
    ) -> tuple[Tensor, Tensor]:
        advantage, target = super()._estimate(tensordict, params, target_params)
        mask = self._mask(tensordict, advantage)
        if mask is None:
            return advantage, target
        zero = torch.zeros((), dtype=advantage.dtype, device=advantage.device)
        return torch.where(mask, advantage, zero), torch.where(mask, target, zero)

    def _next_entries(self, tensordict: TensorDictBase, like: Tensor) -> tuple[Tensor, ...]:
        next_td = tensordict.get(K.NEXT)
        keys = next_td.keys(include_nested=True)
        saved = (self.tensor_keys.reward, self.tensor_keys.done, self.tensor_keys.terminated)
        try:
            for name, key in zip(("reward", "done", "terminated"), saved):
                if isinstance(key, str) and (self.group, key) in keys:
                    setattr(self.tensor_keys, name, (self.group, key))
            reward, done, terminated = super()._next_entries(tensordict, like)
        finally:
            self.tensor_keys.reward, self.tensor_keys.done, self.tensor_keys.terminated = saved
        next_mask = self._mask(next_td, like)
        if next_mask is not None:
            # An agent gone at t + 1 of a running episode ended its trajectory at t. At a step
            # the env already ended (a time limit: agents leave with the episode) its flags
            # stand, so a truncated trajectory still bootstraps from its next value.
            gone = ~next_mask & ~done
            done = done | gone
            terminated = terminated | gone
        return reward, done, terminated
