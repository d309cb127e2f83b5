"""PPO with the clipped surrogate objective: :class:`ClipPPOLoss`."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rl_objectives.losses.ppo import PPOLoss

__all__ = ["ClipPPOLoss"]


class ClipPPOLoss(PPOLoss):
    """``loss_objective = -mean(min(r * A, clip(r, 1 - eps, 1 + eps) * A))``, ``r`` the ratio.

    Args and keyword args as :class:`~rl_objectives.PPOLoss`, plus:

    Keyword Args:
        clip_epsilon: ``eps``. Defaults to 0.2.
        clip_value: ``True`` clips the value update at ``clip_epsilon``; a float sets another
            bound; ``None``/``False`` does not clip. Defaults to ``None``.

    Diagnostics: ``clip_fraction`` (share of clipped ratios) and ``ESS`` (effective sample
    size of the importance weights, as a fraction of the batch).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor, ValueOperator
        >>> from rl_objectives import ClipPPOLoss
        >>> net = TensorDictModule(MLP(3, 2, depth=1, num_cells=8), ["observation"], ["logits"])
        >>> actor = ProbabilisticActor(net, ["logits"], distribution_class=OneHotCategorical)
        >>> critic = ValueOperator(MLP(3, 1, depth=1, num_cells=8), ["observation"])
        >>> loss = ClipPPOLoss(actor, critic, clip_epsilon=0.1)
        >>> td = TensorDict(
        ...     observation=torch.randn(4, 3), action=torch.eye(2)[[0, 1, 1, 0]],
        ...     action_log_prob=torch.full((4,), -0.7), advantage=torch.randn(4, 1),
        ...     value_target=torch.randn(4, 1), batch_size=[4],
        ... )
        >>> out = loss(td)
        >>> out["loss_objective"].shape, 0 <= out["clip_fraction"].item() <= 1
        (torch.Size([]), True)
    """

    def __init__(
        self,
        actor_network: torch.nn.Module,
        critic_network: torch.nn.Module | None = None,
        *,
        clip_epsilon: float = 0.2,
        clip_value: bool | float | None = None,
        **kwargs: Any,
    ) -> None:
        if clip_value is True:
            clip_value = clip_epsilon
        elif clip_value is False:
            clip_value = None
        super().__init__(actor_network, critic_network, clip_value=clip_value, **kwargs)
        if not 0.0 < clip_epsilon < 1.0:
            raise ValueError(f"ClipPPOLoss: expected clip_epsilon in (0, 1), got {clip_epsilon}.")
        self.clip_epsilon = float(clip_epsilon)

    def _objective(self, log_weight: Tensor, advantage: Tensor, out: dict[str, Tensor]) -> Tensor:
        ratio = log_weight.exp()
        low, high = 1.0 - self.clip_epsilon, 1.0 + self.clip_epsilon
        clipped = ratio.clamp(low, high)
        gain = torch.minimum(ratio * advantage, clipped * advantage)
        with torch.no_grad():
            out["clip_fraction"] = ((ratio < low) | (ratio > high)).float().mean()
            flat = log_weight.detach().reshape(-1)
            log_ess = 2 * torch.logsumexp(flat, 0) - torch.logsumexp(2 * flat, 0)
            out["ESS"] = log_ess.exp() / flat.numel()
        return -gain
