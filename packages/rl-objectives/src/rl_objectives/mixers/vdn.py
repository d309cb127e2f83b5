"""Value decomposition by sum: :class:`VDNMixer`."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["VDNMixer"]


class VDNMixer(nn.Module):
    """Team value ``Q_tot = sum_i Q_i`` (Sunehag et al., 2017).

    Args:
        n_agents: number of agents.

    Keyword Args:
        device: unused (no parameters); accepted for a uniform mixer signature.

    Forward:
        ``chosen_action_value`` ``[*B, n_agents, 1]`` (and an ignored ``state``) ->
        ``[*B, 1]``.

    Raises:
        ValueError: the input does not end in ``[n_agents, 1]``.

    Examples:
        >>> import torch
        >>> from rl_objectives.mixers import VDNMixer
        >>> VDNMixer(3)(torch.ones(5, 3, 1)).flatten().tolist()
        [3.0, 3.0, 3.0, 3.0, 3.0]
    """

    def __init__(self, n_agents: int, *, device: torch.device | str | None = None) -> None:
        super().__init__()
        self.n_agents = n_agents

    def forward(
        self, chosen_action_value: torch.Tensor, state: torch.Tensor | None = None
    ) -> torch.Tensor:
        if chosen_action_value.shape[-2:] != (self.n_agents, 1):
            raise ValueError(
                f"VDNMixer: expected agent values of shape [*B, {self.n_agents}, 1], got "
                f"{tuple(chosen_action_value.shape)}."
            )
        return chosen_action_value.sum(-2)
