"""PPO with an adaptive KL penalty: :class:`KLPENPPOLoss`."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rl_objectives.losses.ppo import PPOLoss

__all__ = ["KLPENPPOLoss"]


class KLPENPPOLoss(PPOLoss):
    """``loss_objective = -mean(r * A - beta * KL)`` with ``beta`` adapted after each call.

    ``KL`` is the sample estimate ``log_pi_old(a) - log_pi(a)`` of ``KL(pi_old || pi)`` on the
    collected actions (which were drawn from ``pi_old``). After each training-mode forward,
    ``beta`` is multiplied by ``increment`` when the mean KL exceeds ``1.5 * dtarg`` and by
    ``decrement`` when it is below ``dtarg / 1.5``.

    Args and keyword args as :class:`~rl_objectives.PPOLoss`, plus:

    Keyword Args:
        dtarg: target KL. Defaults to 0.01.
        beta: initial penalty weight. Defaults to 1.0.
        increment: factor applied to ``beta`` when the KL is too large. Defaults to 2.
        decrement: factor applied when the KL is too small. Defaults to 0.5.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor
        >>> from rl_objectives import KLPENPPOLoss
        >>> net = TensorDictModule(MLP(3, 2, depth=1, num_cells=8), ["observation"], ["logits"])
        >>> actor = ProbabilisticActor(net, ["logits"], distribution_class=OneHotCategorical)
        >>> loss = KLPENPPOLoss(actor, dtarg=0.01, beta=1.0)
        >>> td = TensorDict(
        ...     observation=torch.randn(4, 3), action=torch.eye(2)[[0, 1, 1, 0]],
        ...     action_log_prob=torch.full((4,), -5.0), advantage=torch.randn(4, 1),
        ...     batch_size=[4],
        ... )
        >>> out = loss(td)
        >>> out["kl"].item() < 0, loss.beta.item()  # tiny KL: beta halves
        (True, 0.5)
    """

    def __init__(
        self,
        actor_network: torch.nn.Module,
        critic_network: torch.nn.Module | None = None,
        *,
        dtarg: float = 0.01,
        beta: float = 1.0,
        increment: float = 2.0,
        decrement: float = 0.5,
        **kwargs: Any,
    ) -> None:
        super().__init__(actor_network, critic_network, **kwargs)
        if not (increment >= 1.0 and 0.0 < decrement <= 1.0):
            raise ValueError(
                f"KLPENPPOLoss: expected increment >= 1 and decrement in (0, 1], got "
                f"increment={increment}, decrement={decrement}."
            )
        self.dtarg = float(dtarg)
        self.increment = float(increment)
        self.decrement = float(decrement)
        self.register_buffer("beta", torch.tensor(float(beta), device=self.device))

    def _objective(self, log_weight: Tensor, advantage: Tensor, out: dict[str, Tensor]) -> Tensor:
        kl = -log_weight
        beta = self.beta.clone()  # the update below must not touch the graph's copy
        objective = -(log_weight.exp() * advantage - beta * kl)
        with torch.no_grad():
            mean_kl = kl.detach().mean()
            out["kl"] = mean_kl
            out["beta"] = beta
            if self.training:
                factor = torch.where(
                    mean_kl > self.dtarg * 1.5,
                    self.increment,
                    torch.where(mean_kl < self.dtarg / 1.5, self.decrement, 1.0),
                )
                self.beta.mul_(factor)
        return objective
