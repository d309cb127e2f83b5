"""Randomized ensembled double Q-learning: :class:`REDQLoss`."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import SoftQLossBase

__all__ = ["REDQLoss"]


class REDQLoss(SoftQLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """REDQ (Chen et al., 2021): SAC with a large critic ensemble and random-subset targets.

    - ``loss_actor = mean(alpha * log_pi(a | s) - mean_i Q_i(s, a))`` (all critics, frozen);
    - ``y = r + gamma * (1 - terminated) * (min_{j in M} Q_target_j(s', a') - alpha *
      log_pi(a' | s'))`` with ``M`` a random subset of ``sub_sample_len`` critics drawn at
      each call; ``loss_qvalue = sum_i mean(d(Q_i(s, a_data), y))``;
    - ``loss_alpha = -mean(log_alpha * (log_pi(a | s) + target_entropy))``.

    The arguments it shares with the SAC family are described on
    :class:`~rl_objectives.losses._soft_q.SoftQLossBase` (REDQ has no ``delay_actor`` and
    no alpha bounds); ``num_qvalue_nets`` is the ensemble size ``N``, and REDQ adds:

    Keyword Args:
        sub_sample_len: the subset size ``M`` (``1 <= M <= N``).

    Examples:
        >>> import torch
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential
        >>> from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
        >>> from rl_objectives import REDQLoss
        >>> backbone = TensorDictModule(MLP(3, 2, num_cells=8), ["observation"], ["hidden"])
        >>> split = TensorDictModule(NormalParamExtractor(), ["hidden"], ["loc", "scale"])
        >>> policy = ProbabilisticActor(
        ...     TensorDictSequential(backbone, split), ["loc", "scale"], distribution_class=TanhNormal
        ... )
        >>> critic = ValueOperator(MLP(4, 1, num_cells=8), ["observation", "action"])
        >>> loss = REDQLoss(policy, critic, num_qvalue_nets=6, sub_sample_len=3)
        >>> len(loss.qvalue_network.nets)
        6
        >>> from tensordict import TensorDict
        >>> td = TensorDict(observation=torch.randn(3, 3), action=torch.zeros(3, 1), batch_size=3)
        >>> td["next", "observation"] = torch.randn(3, 3)
        >>> td["next", "reward"] = torch.ones(3, 1)
        >>> td["next", "done"] = td["next", "terminated"] = torch.zeros(3, 1, dtype=torch.bool)
        >>> sorted(loss(td).keys())
        ['alpha', 'entropy', 'loss_actor', 'loss_alpha', 'loss_qvalue']
    """

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module | list[nn.Module],
        *,
        num_qvalue_nets: int = 10,
        sub_sample_len: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        fixed_alpha: bool = False,
        action_spec: Any = None,
        target_entropy: float | str = "auto",
        delay_qvalue: bool = True,
        gamma: float | None = None,
        reduction: str | None = None,
        separate_losses: bool = False,
    ) -> None:
        if not 1 <= sub_sample_len <= num_qvalue_nets:
            raise ValueError(
                f"{type(self).__name__}: expected 1 <= sub_sample_len <= num_qvalue_nets "
                f"({num_qvalue_nets}), got {sub_sample_len}."
            )
        super().__init__()
        self.sub_sample_len = sub_sample_len
        self.delay_qvalue = delay_qvalue
        self.separate_losses = bool(separate_losses)
        self._init_actor_and_critics(actor_network, qvalue_network, num_qvalue_nets)
        auto = C.continuous_entropy_target(action_spec)
        self._init_temperature(alpha_init, fixed=fixed_alpha, target=target_entropy, auto=auto)
        self._init_estimator(loss_function=loss_function, gamma=gamma, reduction=reduction)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_qvalue``, ``loss_alpha``, ``alpha``, ``entropy``;
        writes ``td_error``."""
        keys = self.tensor_keys
        alpha = self.alpha
        actor_td, log_prob = self._policy_sample(tensordict)
        q_new = self._q(actor_td, self._detached("qvalue_network")).mean(0)
        loss_actor = alpha * log_prob - C.squeeze_feature(q_new)
        next_td = tensordict.get(K.NEXT)
        with torch.no_grad():
            next_action, next_log_prob = self._sample(next_td)
            subset = torch.randperm(self.num_qvalue_nets, device=log_prob.device)[
                : self.sub_sample_len
            ]
            q_params = self._bootstrap_params("qvalue_network")
            next_q = self._q(next_td.copy().set(keys.action, next_action), q_params)
            next_value = next_q[subset].amin(0) - alpha * next_log_prob.unsqueeze(-1)
            target = C.bootstrap_target(self, tensordict, next_value)
        pred = self._q(tensordict, self._critic_params("qvalue_network"))
        loss_qvalue = self._critic_loss(tensordict, pred, target)
        return self._soft_losses(loss_actor, loss_qvalue, log_prob, alpha)
