"""Generative adversarial imitation learning, discriminator side: :class:`GAILLoss`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase
from torch.nn import functional as F

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C

__all__ = ["GAILLoss"]


class GAILLoss(LossModule):
    """The GAIL discriminator loss (Ho and Ermon, 2016), with an optional gradient penalty.

    The discriminator reads an observation and an action and writes a logit at
    ``discriminator_pred`` (``"d_logits"``): high for expert pairs. ``loss = mean(BCE(D(expert),
    1)) + mean(BCE(D(collector), 0))``. With ``use_grad_penalty``, ``gp_loss = gp_lambda *
    mean((||grad D(x)|| - 1) ** 2)`` on random interpolations of expert and collector pairs is
    added as its own term. The policy is trained elsewhere (e.g. PPO) on the reward
    ``-log(1 - sigmoid(D))``.

    Args:
        discriminator_network: a TensorDict module reading ``expert_observation``-style keys
            ``observation`` and ``action`` and writing ``discriminator_pred``.

    Keyword Args:
        use_grad_penalty: add the gradient penalty. Defaults to ``False``.
        gp_lambda: its weight. Defaults to 10.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import MLP
        >>> from rl_objectives import GAILLoss
        >>> disc = TensorDictModule(MLP(5, 1, depth=1, num_cells=8), ["observation", "action"], ["d_logits"])
        >>> td = TensorDict(
        ...     observation=torch.randn(4, 3), action=torch.randn(4, 2),
        ...     collector=TensorDict(observation=torch.randn(4, 3), action=torch.randn(4, 2), batch_size=[4]),
        ...     batch_size=[4],
        ... )
        >>> sorted(GAILLoss(disc, use_grad_penalty=True)(td).keys())
        ['gp_loss', 'loss']
    """

    @dataclass
    class _AcceptedKeys:
        expert_action: NestedKey = K.ACTION
        expert_observation: NestedKey = K.OBSERVATION
        collector_action: NestedKey = ("collector", K.ACTION)
        collector_observation: NestedKey = ("collector", K.OBSERVATION)
        discriminator_pred: NestedKey = "d_logits"

    def __init__(
        self,
        discriminator_network: torch.nn.Module,
        *,
        use_grad_penalty: bool = False,
        gp_lambda: float = 10.0,
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        self.convert_to_functional(discriminator_network, "discriminator_network")
        self.use_grad_penalty = use_grad_penalty
        self.gp_lambda = float(gp_lambda)
        self.reduction = C.check_reduction(owner, reduction)

    def _logits(self, observation: torch.Tensor, action: torch.Tensor, batch_size) -> torch.Tensor:
        td = TensorDict({K.OBSERVATION: observation, K.ACTION: action}, batch_size=batch_size)
        with self.use_network("discriminator_network") as net:
            return net(td).get(self.tensor_keys.discriminator_pred)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        keys = self.tensor_keys
        return [
            keys.expert_observation,
            keys.expert_action,
            keys.collector_observation,
            keys.collector_action,
        ]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss`` (and ``gp_loss`` with the gradient penalty)."""
        keys = self.tensor_keys
        batch = tensordict.batch_size
        exp_obs, exp_act = (
            tensordict.get(keys.expert_observation),
            tensordict.get(keys.expert_action),
        )
        col_obs = tensordict.get(keys.collector_observation)
        col_act = tensordict.get(keys.collector_action)
        d_expert = self._logits(exp_obs, exp_act, batch)
        d_collector = self._logits(col_obs, col_act, batch)
        loss = F.binary_cross_entropy_with_logits(
            d_expert, torch.ones_like(d_expert), reduction="none"
        ) + F.binary_cross_entropy_with_logits(
            d_collector, torch.zeros_like(d_collector), reduction="none"
        )
        out = {"loss": C.reduce(loss, self.reduction)}
        if self.use_grad_penalty:
            eps = torch.rand(*batch, 1, device=exp_obs.device, dtype=exp_obs.dtype)
            obs = (eps * exp_obs.detach() + (1 - eps) * col_obs.detach()).requires_grad_(True)
            act = (eps * exp_act.detach() + (1 - eps) * col_act.detach()).requires_grad_(True)
            d_mix = self._logits(obs, act, batch)
            g_obs, g_act = torch.autograd.grad(d_mix.sum(), (obs, act), create_graph=True)
            norm = torch.cat([g_obs.reshape(*batch, -1), g_act.reshape(*batch, -1)], -1).norm(
                dim=-1
            )
            out["gp_loss"] = self.gp_lambda * C.reduce((norm - 1).pow(2), self.reduction)
        return TensorDict(out)
