"""Truncated Quantile Critics: :class:`TQCLoss` and the quantile Huber loss it trains with."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import SoftQLossBase

__all__ = ["TQCLoss", "quantile_huber_loss"]


def quantile_huber_loss(
    quantiles: torch.Tensor, targets: torch.Tensor, kappa: float = 1.0
) -> torch.Tensor:
    """The quantile Huber loss of every (critic, atom, target atom) triple, per sample.

    With ``M`` atoms at the quantile midpoints ``tau_m = (2m + 1) / (2M)`` (``m = 0..M-1``),
    ``u = target_j - quantile_m`` and the Huber function ``h(u) = u^2 / 2`` for
    ``|u| <= kappa``, ``kappa * (|u| - kappa / 2)`` beyond, the loss of a pair is
    ``|tau_m - 1[u < 0]| * h(u) / kappa``. It is averaged over atoms and targets and summed
    over critics (as TorchRL's ``TQCLoss``, and as the SAC family sums its critics' losses).

    Args:
        quantiles: predicted atoms, ``[N, *B, M]`` (``N`` critics).
        targets: target atoms, ``[*B, T]``, shared by the critics.
        kappa: the Huber threshold. Defaults to 1.

    Returns:
        The loss per sample, ``[*B]``.

    Examples:
        >>> import torch
        >>> from rl_objectives.losses.tqc import quantile_huber_loss
        >>> quantile_huber_loss(torch.zeros(2, 4, 3), torch.ones(4, 5)).shape
        torch.Size([4])
    """
    n_atoms = quantiles.shape[-1]
    tau = (torch.arange(n_atoms, device=quantiles.device, dtype=quantiles.dtype) + 0.5) / n_atoms
    u = targets.unsqueeze(-2) - quantiles.unsqueeze(-1)  # [N, *B, M, T]
    abs_u = u.abs()
    huber = torch.where(abs_u <= kappa, 0.5 * u.pow(2), kappa * (abs_u - 0.5 * kappa)) / kappa
    weight = (tau.unsqueeze(-1) - (u.detach() < 0).to(u.dtype)).abs()
    return (weight * huber).mean(dim=(-2, -1)).sum(0)


class TQCLoss(SoftQLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """TQC (Kuznetsov et al., 2020): an ensemble of ``N`` distributional critics, each
    predicting ``M`` return quantiles, whose pooled target atoms are truncated from the top.

    With ``alpha = exp(log_alpha)`` and ``d = top_quantiles_to_drop_per_net``:

    - target: ``a' ~ pi(s')``; the ``N * M`` target atoms ``Z_target(s', a')`` are pooled and
      sorted, and the smallest ``k = N * (M - d)`` are kept:
      ``y_j = r + gamma * (1 - terminated) * (z_(j) - alpha * log_pi(a' | s'))``;
    - ``loss_qvalue = mean_b quantile_huber_loss(Z(s, a_data), y)`` (summed over critics,
      averaged over atoms and target atoms, as TorchRL; the authors' code also averages over
      critics, an ``N`` times smaller loss);
    - ``loss_actor = mean(alpha * log_pi(a | s) - mean_{n, m} Z_n^m(s, a))`` with
      ``a ~ pi(s)`` reparameterised (critics frozen);
    - ``loss_alpha = -mean(log_alpha * (log_pi(a | s) + target_entropy))``.

    The arguments it shares with the SAC family are described on
    :class:`~rl_objectives.losses._soft_q.SoftQLossBase` (TQC has no ``loss_function`` and
    no ``separate_losses``); here the critic writes ``M`` atoms in the last dim of
    ``state_action_value``, and TQC adds:

    Keyword Args:
        top_quantiles_to_drop_per_net: ``d``, atoms dropped per critic from the pooled
            target (``N * d`` in all).

    Raises:
        ValueError: ``top_quantiles_to_drop_per_net`` is negative, or the critics give no
            more atoms than it (nothing would be left of the target).

    Examples:
        >>> import torch
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
        >>> quantiles = ValueOperator(MLP(4, 10, num_cells=8), ["observation", "action"])
        >>> module = TensorDictModule(
        ...     torch.nn.Sequential(MLP(3, 2, num_cells=8), NormalParamExtractor()),
        ...     ["observation"], ["loc", "scale"],
        ... )
        >>> policy = ProbabilisticActor(module, ["loc", "scale"], distribution_class=TanhNormal)
        >>> from rl_objectives import TQCLoss
        >>> loss = TQCLoss(policy, quantiles, num_qvalue_nets=3, top_quantiles_to_drop_per_net=2)
        >>> from tensordict import TensorDict
        >>> data = TensorDict(
        ...     {"observation": torch.randn(4, 3), "action": torch.zeros(4, 1)}, batch_size=[4]
        ... )
        >>> data["next"] = data.empty().update(
        ...     {"observation": torch.randn(4, 3), "reward": torch.rand(4, 1)}
        ... )
        >>> data["next", "done"] = data["next", "terminated"] = torch.zeros(4, 1, dtype=torch.bool)
        >>> loss(data)["loss_qvalue"].shape
        torch.Size([])
    """

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module | list[nn.Module],
        *,
        num_qvalue_nets: int = 5,
        top_quantiles_to_drop_per_net: int = 2,
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        action_spec: Any = None,
        fixed_alpha: bool = False,
        target_entropy: float | str = "auto",
        delay_actor: bool = False,
        delay_qvalue: bool = True,
        gamma: float | None = None,
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        if isinstance(top_quantiles_to_drop_per_net, bool) or top_quantiles_to_drop_per_net < 0:
            raise ValueError(
                f"TQCLoss: expected top_quantiles_to_drop_per_net >= 0, got "
                f"{top_quantiles_to_drop_per_net!r}."
            )
        self.top_quantiles_to_drop_per_net = int(top_quantiles_to_drop_per_net)
        self.delay_actor, self.delay_qvalue = delay_actor, delay_qvalue
        self._init_actor_and_critics(actor_network, qvalue_network, num_qvalue_nets)
        auto = C.continuous_entropy_target(action_spec)
        self._init_temperature(alpha_init, fixed=fixed_alpha, target=target_entropy, auto=auto)
        self._init_alpha_bounds(min_alpha, max_alpha)
        self._init_estimator(loss_function="l2", gamma=gamma, reduction=reduction)

    def _kept_atoms(self, n_atoms: int) -> int:
        kept = self.num_qvalue_nets * (n_atoms - self.top_quantiles_to_drop_per_net)
        if kept <= 0:
            raise ValueError(
                f"TQCLoss: the critics write {n_atoms} atoms per critic, not more than "
                f"top_quantiles_to_drop_per_net={self.top_quantiles_to_drop_per_net}, so no "
                f"target atom is left. Give the critics more outputs or drop fewer."
            )
        return kept

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_qvalue``, ``loss_alpha``, ``alpha`` and
        ``entropy``; writes ``td_error`` (the largest absolute gap between a critic's mean
        atom and the mean truncated target)."""
        keys = self.tensor_keys
        alpha = self.alpha
        # actor: the whole mixture, critics frozen
        actor_td, log_prob = self._policy_sample(tensordict, self.actor_network_params)
        z_new = self._q(actor_td, self._detached("qvalue_network"))  # [N, *B, M]
        loss_actor = alpha * log_prob - z_new.mean(dim=(0, -1))
        # critics
        pred = self._q(tensordict, self.qvalue_network_params)  # [N, *B, M]
        kept = self._kept_atoms(pred.shape[-1])
        with torch.no_grad():
            next_td = tensordict.get(K.NEXT)
            next_action, next_log_prob = self._sample(
                next_td, self._bootstrap_params("actor_network")
            )
            next_td = next_td.copy().set(keys.action, next_action)
            next_z = self._q(next_td, self._bootstrap_params("qvalue_network"))  # [N, *B, M]
            pooled = next_z.movedim(0, -2).flatten(-2)  # [*B, N * M]
            truncated = pooled.sort(dim=-1).values[..., :kept]
            next_value = truncated - alpha * next_log_prob.unsqueeze(-1)
            target = C.bootstrap_target(self, tensordict, next_value)  # [*B, kept]
        # the priority compares the mean atoms
        self._write_priority(tensordict, pred.mean(-1), target.mean(-1))
        loss_qvalue = quantile_huber_loss(pred, target)
        return self._soft_losses(loss_actor, loss_qvalue, log_prob, alpha)
