"""Monotonic value mixing conditioned on the global state: :class:`QMixer`."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["QMixer"]


class QMixer(nn.Module):
    """QMIX mixer (Rashid et al., 2018): ``Q_tot`` monotonic in every agent's value.

    Hypernetworks map the state to non-negative weights: ``h = elu(q @ |W1(s)| + b1(s))``
    (``W1`` of shape ``[n_agents, embed]``), ``Q_tot = h @ |W2(s)| + V(s)`` with ``V`` a
    two-layer network.

    Args:
        state_shape: shape of the global state (its elements are flattened).
        mixing_embed_dim: width of the mixing layer.
        n_agents: number of agents.

    Keyword Args:
        device: device of the parameters.

    Forward:
        ``chosen_action_value`` ``[*B, n_agents, 1]`` and ``state`` ``[*B, *state_shape]``
        -> ``[*B, 1]``.

    Raises:
        ValueError: the agent values do not end in ``[n_agents, 1]``.

    Examples:
        >>> import torch
        >>> from rl_objectives.mixers import QMixer
        >>> mixer = QMixer((4,), 8, 3)
        >>> mixer(torch.randn(5, 3, 1), torch.randn(5, 4)).shape
        torch.Size([5, 1])
    """

    def __init__(
        self,
        state_shape: tuple[int, ...] | torch.Size,
        mixing_embed_dim: int,
        n_agents: int,
        *,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.state_shape = tuple(state_shape)
        self.state_dim = int(math.prod(self.state_shape))
        self.embed_dim = mixing_embed_dim
        self.n_agents = n_agents
        kw = {"device": device}
        self.hyper_w_1 = nn.Linear(self.state_dim, mixing_embed_dim * n_agents, **kw)
        self.hyper_w_final = nn.Linear(self.state_dim, mixing_embed_dim, **kw)
        self.hyper_b_1 = nn.Linear(self.state_dim, mixing_embed_dim, **kw)
        self.V = nn.Sequential(
            nn.Linear(self.state_dim, mixing_embed_dim, **kw),
            nn.ReLU(),
            nn.Linear(mixing_embed_dim, 1, **kw),
        )

    def forward(self, chosen_action_value: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        if chosen_action_value.shape[-2:] != (self.n_agents, 1):
            raise ValueError(
                f"QMixer: expected agent values of shape [*B, {self.n_agents}, 1], got "
                f"{tuple(chosen_action_value.shape)}."
            )
        batch = chosen_action_value.shape[:-2]
        s = state.reshape(*batch, self.state_dim)
        q = chosen_action_value.reshape(*batch, 1, self.n_agents)
        w1 = self.hyper_w_1(s).abs().reshape(*batch, self.n_agents, self.embed_dim)
        b1 = self.hyper_b_1(s).reshape(*batch, 1, self.embed_dim)
        hidden = F.elu(q @ w1 + b1)
        w_final = self.hyper_w_final(s).abs().reshape(*batch, self.embed_dim, 1)
        v = self.V(s).reshape(*batch, 1, 1)
        return (hidden @ w_final + v).reshape(*batch, 1)
