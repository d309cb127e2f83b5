"""TD3 with behaviour cloning, for offline data: :class:`TD3BCLoss`."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_objectives.losses.td3 import TD3Loss

__all__ = ["TD3BCLoss"]


class TD3BCLoss(TD3Loss):
    """TD3+BC (Fujimoto and Gu, 2021): TD3's critics, and an actor loss that stays near the data.

    ``loss_actor = -lmbda * mean(Q_0(s, mu(s))) + mean((mu(s) - a_data) ** 2)`` (the second mean over batch and action dims) with
    ``lmbda = alpha / mean(|Q_0(s, mu(s))|)`` (a constant). Diagnostics ``bc_loss`` and
    ``lmbda``. Everything else as :class:`~rl_objectives.TD3Loss`.

    Keyword Args:
        alpha: the weight of the Q term. Defaults to 2.5.
        **kwargs: see :class:`~rl_objectives.TD3Loss`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, Actor, ValueOperator
        >>> from rl_objectives import TD3BCLoss
        >>> actor = Actor(MLP(3, 1, depth=1, num_cells=8))
        >>> critic = ValueOperator(MLP(4, 1, depth=1, num_cells=8), ["observation", "action"])
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.rand(5, 1),
        ...     next=TensorDict(
        ...         observation=torch.randn(5, 3), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> out = TD3BCLoss(actor, critic, bounds=(-1.0, 1.0), alpha=2.5)(td)
        >>> sorted(k for k in out.keys() if k.startswith("loss_")), out["bc_loss"].shape
        (['loss_actor', 'loss_qvalue'], torch.Size([]))
    """

    def __init__(
        self,
        actor_network: torch.nn.Module,
        qvalue_network: torch.nn.Module,
        *,
        alpha: float = 2.5,
        **kwargs: Any,
    ) -> None:
        super().__init__(actor_network, qvalue_network, **kwargs)
        self.alpha = float(alpha)

    def _actor_loss(
        self, tensordict: TensorDictBase, out: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        actor_td = self._act(tensordict.copy(), self.actor_network_params)
        q_actor = self._q(actor_td, self._detached("qvalue_network"))[0]
        lmbda = self.alpha / q_actor.detach().abs().mean().clamp_min(1e-6)
        action = actor_td.get(self.tensor_keys.action)
        bc = (action - tensordict.get(self.tensor_keys.action)).pow(2)
        bc = bc.reshape(*bc.shape[: tensordict.batch_dims], -1).mean(-1, keepdim=True)
        out["bc_loss"] = bc.detach().mean()
        out["lmbda"] = lmbda
        # per sample: -lmbda * Q + mean_j (mu(s)_j - a_j)^2 (its mean over the batch is the loss)
        return -lmbda * q_actor + bc, q_actor
