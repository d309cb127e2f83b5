"""Multi-agent PPO: :class:`MAPPOLoss` (centralised critic) and :class:`IPPOLoss` (independent).

Both are :class:`~rl_objectives.ClipPPOLoss` on per-agent entries (``[*B, T, n_agents]``
under a group key such as ``"agents"``) with three differences: the default value estimator
is :class:`~rl_objectives.value.MultiAgentGAE`, the advantage is standardised by default with
the agent dim excluded (one mean and deviation per agent), and an optional
:class:`~rl_objectives.value.ValueNorm` rescales the critic regression. The two classes
differ only in the critic one passes (Yu et al. 2022: a critic of the whole team's
observations or state; de Witt et al. 2020: each agent's critic sees its own observation).

Agent masks. When the batch has an entry at ``tensor_keys.mask`` (``("agents", "mask")`` by
default, PettingZoo's key: ``True`` where the agent is alive / acted, shaped
``[*B, T, n_agents]`` with or without a trailing 1), masked-out agents count nowhere: not in
the objective, the entropy, the critic loss, the advantage standardisation nor the value
normaliser's statistics. The means are over the valid entries; ``reduction="none"`` gives 0
at masked entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_objectives.losses import _common as C
from rl_objectives.losses.clip_ppo import ClipPPOLoss
from rl_objectives.utils import ValueEstimators
from rl_objectives.value.value_norm import ValueNorm

__all__ = ["MAPPOLoss", "IPPOLoss"]


def _masked_reduce(value: Tensor, mask: Tensor | None, reduction: str) -> Tensor:
    if mask is None:
        return C.reduce(value, reduction)
    value = torch.where(mask, value, torch.zeros((), dtype=value.dtype, device=value.device))
    if reduction == "mean":
        return value.sum() / mask.sum().clamp_min(1)
    return C.reduce(value, reduction)


class _MultiAgentPPOLoss(ClipPPOLoss):
    """The shared machinery of :class:`MAPPOLoss` and :class:`IPPOLoss` (see the module)."""

    @dataclass
    class _AcceptedKeys(ClipPPOLoss._AcceptedKeys):
        mask: NestedKey = (K.AGENTS, "mask")

    default_value_estimator = ValueEstimators.MAGAE

    def __init__(
        self,
        actor_network: torch.nn.Module,
        critic_network: torch.nn.Module | None = None,
        *,
        value_norm: ValueNorm | None = None,
        entropy_coeff: float | None = 0.01,
        normalize_advantage: bool = True,
        normalize_advantage_exclude_dims: tuple[int, ...] = (-2,),
        **kwargs: Any,
    ) -> None:
        owner = type(self).__name__
        if value_norm is not None and not isinstance(value_norm, ValueNorm):
            raise TypeError(
                f"{owner}: expected value_norm to be a ValueNorm (e.g. PopArtValueNorm()) or "
                f"None, got {type(value_norm).__name__}."
            )
        dims = tuple(normalize_advantage_exclude_dims)
        if any(not isinstance(d, int) or d >= 0 for d in dims):
            raise ValueError(
                f"{owner}: expected normalize_advantage_exclude_dims to hold negative dims "
                f"(counted from the advantage's trailing feature dim, -2 = agents), got {dims}."
            )
        super().__init__(
            actor_network,
            critic_network,
            entropy_coeff=entropy_coeff,
            normalize_advantage=normalize_advantage,
            **kwargs,
        )
        self.normalize_advantage_exclude_dims = dims
        self.value_norm = value_norm  # a submodule: moves with .to() and is in state_dict()

    # Masks and the advantage.

    def _mask(self, td: TensorDictBase, like: Tensor) -> Tensor | None:
        """The agent mask shaped like ``like`` (``[*B, T, n_agents]``), or ``None``."""
        mask = td.get(self.tensor_keys.mask, None)
        if mask is None:
            return None
        mask = C.squeeze_feature(mask.bool())
        if mask.shape != like.shape:
            raise ValueError(
                f"{type(self).__name__}: expected the agent mask at {self.tensor_keys.mask!r} "
                f"with shape {tuple(like.shape)} (or a trailing 1), got {tuple(mask.shape)}."
            )
        return mask

    def _standardise(self, advantage: Tensor, mask: Tensor | None) -> Tensor:
        ndim = advantage.dim()
        keep = {d % ndim for d in self.normalize_advantage_exclude_dims}
        dims = tuple(d for d in range(ndim) if d not in keep)
        if mask is None:
            w = torch.ones_like(advantage)
        else:
            w = mask.reshape(advantage.shape).to(advantage.dtype)
        n = w.sum(dims, keepdim=True)
        mean = (advantage * w).sum(dims, keepdim=True) / n.clamp_min(1)
        var = ((advantage - mean).pow(2) * w).sum(dims, keepdim=True) / (n - 1).clamp_min(1)
        return (advantage - mean) / var.sqrt().clamp_min(1e-6)

    # Terms.

    def _critic_terms_masked(
        self, td: TensorDictBase, mask: Tensor | None, out: dict[str, Tensor]
    ) -> None:
        if not self.has_critic:
            return
        target, value, old_value = self._critic_values(td)
        target = target.detach()
        if self.value_norm is not None:
            self.value_norm.update(target if mask is None else target[mask])
            target = self.value_norm.normalize(target)
            value = self.value_norm.normalize(value)
            if old_value is not None:
                old_value = self.value_norm.normalize(old_value)
        error = C.squeeze_feature(self._critic_error(target, value, old_value, out))
        out["loss_critic"] = self.critic_coeff * _masked_reduce(error, mask, self.reduction)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_objective``, ``loss_entropy``/``entropy`` and ``loss_critic`` (plus
        ClipPPO's diagnostics), each averaged over the valid agent entries."""
        td = tensordict.copy()
        normalize, self.normalize_advantage = self.normalize_advantage, False
        try:
            advantage = self._advantage(td)  # computed (if absent), not yet standardised
        finally:
            self.normalize_advantage = normalize
        flat = C.squeeze_feature(advantage)
        mask = self._mask(td, flat)
        if self.normalize_advantage and advantage.numel() > 1:
            advantage = self._standardise(advantage, mask)
        log_weight, _, dist = self._log_weight(td, advantage)
        out: dict[str, Tensor] = {}
        objective = self._objective(log_weight, C.squeeze_feature(advantage), out)
        out["loss_objective"] = _masked_reduce(objective, mask, self.reduction)
        out["kl_approx"] = _masked_reduce((-log_weight).detach(), mask, "mean")
        if self.entropy_bonus:
            entropy = C.aggregate_log_prob(C.entropy_of(dist, self.samples_mc_entropy), advantage)
            out["entropy"] = _masked_reduce(entropy.detach(), mask, "mean")
            out["loss_entropy"] = -self.entropy_coeff * _masked_reduce(
                entropy, mask, self.reduction
            )
        self._critic_terms_masked(td, mask, out)
        return TensorDict(out)


class MAPPOLoss(_MultiAgentPPOLoss):
    """Multi-agent PPO with a centralised critic (Yu et al. 2022).

    Decentralised actors (each agent's policy sees its own observation) trained with a
    critic that sees the whole team (``MultiAgentMLP(centralized=True)`` or a module of a
    global ``"state"``), writing per-agent values ``[*B, T, n_agents, 1]``. The loss is
    :class:`~rl_objectives.ClipPPOLoss`'s; see :mod:`rl_objectives.losses.mappo` for what
    differs and for agent masks.

    Args:
        actor_network: the per-agent probabilistic actor.
        critic_network: the centralised value module.

    Keyword Args:
        value_norm: a :class:`~rl_objectives.value.ValueNorm`; the critic loss compares the
            normalised target and prediction, after folding the (valid) targets into its
            statistics. Defaults to ``None``.
        entropy_coeff: defaults to 0.01.
        normalize_advantage: defaults to ``True`` (ClipPPOLoss: ``False``).
        normalize_advantage_exclude_dims: dims of the advantage ``[*B, T, n_agents, 1]``
            kept apart in the standardisation. Defaults to ``(-2,)`` (per agent).
        **kwargs: see :class:`~rl_objectives.ClipPPOLoss` (``clip_epsilon``,
            ``critic_coeff``, ``loss_critic_type``, ``clip_value``, ...).

    Raises:
        TypeError: ``value_norm`` is not a ``ValueNorm``.
        ValueError: a non-negative dim in ``normalize_advantage_exclude_dims``; at the call,
            an agent mask of the wrong shape.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import OneHotCategorical, ProbabilisticActor, ValueOperator
        >>> from rl_objectives.modules import MultiAgentMLP
        >>> from rl_objectives import MAPPOLoss, PopArtValueNorm
        >>> net = MultiAgentMLP(4, 2, n_agents=3, centralized=False, share_params=True)
        >>> actor = ProbabilisticActor(
        ...     TensorDictModule(net, [("agents", "observation")], [("agents", "logits")]),
        ...     [("agents", "logits")], out_keys=[("agents", "action")],
        ...     distribution_class=OneHotCategorical, return_log_prob=True,
        ...     log_prob_key=("agents", "action_log_prob"),
        ... )
        >>> critic = ValueOperator(
        ...     MultiAgentMLP(4, 1, n_agents=3, centralized=True, share_params=True),
        ...     [("agents", "observation")], [("agents", "state_value")],
        ... )
        >>> loss = MAPPOLoss(actor, critic, value_norm=PopArtValueNorm()).set_keys(
        ...     action=("agents", "action"), sample_log_prob=("agents", "action_log_prob"),
        ...     value=("agents", "state_value"), advantage=("agents", "advantage"),
        ...     value_target=("agents", "value_target"),
        ... )
        >>> td = TensorDict(
        ...     agents=TensorDict(observation=torch.randn(8, 3, 4), batch_size=[8, 3]),
        ...     next=TensorDict(
        ...         agents=TensorDict(observation=torch.randn(8, 3, 4), batch_size=[8, 3]),
        ...         reward=torch.randn(8, 1), done=torch.zeros(8, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(8, 1, dtype=torch.bool), batch_size=[8],
        ...     ),
        ...     batch_size=[8],
        ... )
        >>> td = actor(td)
        >>> out = loss(td)
        >>> sorted(k for k in out.keys() if k.startswith("loss"))
        ['loss_critic', 'loss_entropy', 'loss_objective']
    """


class IPPOLoss(_MultiAgentPPOLoss):
    """Independent PPO (de Witt et al. 2020): each agent's critic sees only its own input.

    The loss is :class:`MAPPOLoss`'s; only the critic differs, built decentralised
    (``MultiAgentMLP(centralized=False)``), so each agent values its own observation.
    Arguments, defaults and agent masks as :class:`MAPPOLoss` (``value_norm`` defaults to
    ``None`` and is rarely used with IPPO).

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import OneHotCategorical, ProbabilisticActor, ValueOperator
        >>> from rl_objectives.modules import MultiAgentMLP
        >>> from rl_objectives import IPPOLoss
        >>> net = MultiAgentMLP(4, 2, n_agents=3, centralized=False, share_params=True)
        >>> actor = ProbabilisticActor(
        ...     TensorDictModule(net, [("agents", "observation")], [("agents", "logits")]),
        ...     [("agents", "logits")], out_keys=[("agents", "action")],
        ...     distribution_class=OneHotCategorical,
        ... )
        >>> critic = ValueOperator(
        ...     MultiAgentMLP(4, 1, n_agents=3, centralized=False, share_params=True),
        ...     [("agents", "observation")], [("agents", "state_value")],
        ... )
        >>> loss = IPPOLoss(actor, critic)
        >>> loss.normalize_advantage, loss.normalize_advantage_exclude_dims
        (True, (-2,))
    """
