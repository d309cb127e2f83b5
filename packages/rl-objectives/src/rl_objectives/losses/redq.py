"""Randomized ensembled double Q-learning: :class:`REDQLoss`."""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import SoftQLossBase
from rl_objectives.utils import distance_loss

__all__ = ["REDQLoss"]


class REDQLoss(SoftQLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """REDQ (Chen et al., 2021): SAC with a large critic ensemble and random-subset targets.

    - ``loss_actor = mean(alpha * log_pi(a | s) - mean_i Q_i(s, a))`` (all critics, frozen);
    - ``y = r + gamma * (1 - terminated) * (min_{j in M} Q_target_j(s', a') - alpha *
      log_pi(a' | s'))`` with ``M`` a random subset of ``sub_sample_len`` critics drawn at
      each call; ``loss_qvalue = sum_i mean(d(Q_i(s, a_data), y))``;
    - ``loss_alpha = -mean(log_alpha * (log_pi(a | s) + target_entropy))``.

    Args:
        actor_network: a probabilistic actor (``get_dist``), e.g. with ``TanhNormal``.
        qvalue_network: a Q module reading ``observation`` and ``action``; the first of
            ``num_qvalue_nets`` critics (the others are re-initialised copies); or a list
            of ``num_qvalue_nets`` such modules, used as they are.

    Keyword Args:
        num_qvalue_nets: ensemble size ``N``. Defaults to 10.
        sub_sample_len: subset size ``M`` (``1 <= M <= N``). Defaults to 2.
        loss_function: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"smooth_l1"``.
        alpha_init: initial temperature. Defaults to 1.0.
        fixed_alpha: keep alpha constant. Defaults to ``False``.
        action_spec: for ``target_entropy="auto"`` (``-action_dim``).
        target_entropy: a float or ``"auto"``. Defaults to ``"auto"``.
        delay_qvalue: target copies of the critics. Defaults to ``True``.
        gamma: discount (TD(0) estimator by default). Defaults to 0.99.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.
        separate_losses: parameters a critic shares with the actor (a common trunk) are
            trained by the actor loss only: the critic terms see them detached. Defaults to
            ``False`` (every term trains them).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
        >>> from rl_objectives import REDQLoss
        >>> net = TensorDictModule(
        ...     torch.nn.Sequential(MLP(3, 2, depth=1, num_cells=8), NormalParamExtractor()),
        ...     ["observation"], ["loc", "scale"],
        ... )
        >>> actor = ProbabilisticActor(net, ["loc", "scale"], distribution_class=TanhNormal)
        >>> q = ValueOperator(MLP(4, 1, depth=1, num_cells=8), ["observation", "action"])
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.rand(5, 1) - 0.5,
        ...     next=TensorDict(
        ...         observation=torch.randn(5, 3), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> sorted(k for k in REDQLoss(actor, q, num_qvalue_nets=4)(td).keys() if k.startswith("loss_"))
        ['loss_actor', 'loss_alpha', 'loss_qvalue']
    """

    # set up by the shared base (_init_temperature, _init_estimator)
    target_entropy: float | None
    loss_function: str
    gamma: float | None
    reduction: str

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
        super().__init__()
        owner = type(self).__name__
        if not 1 <= sub_sample_len <= num_qvalue_nets:
            raise ValueError(
                f"{owner}: expected 1 <= sub_sample_len <= num_qvalue_nets "
                f"({num_qvalue_nets}), got {sub_sample_len}."
            )
        self._init_actor_and_critics(
            actor_network,
            qvalue_network,
            num_qvalue_nets=num_qvalue_nets,
            delay_qvalue=delay_qvalue,
            separate_losses=separate_losses,
        )
        self.num_qvalue_nets = num_qvalue_nets
        self.sub_sample_len = sub_sample_len
        self.delay_qvalue = delay_qvalue
        self._init_temperature(
            alpha_init,
            fixed_alpha=fixed_alpha,
            target_entropy=target_entropy,
            auto_target_entropy=C.continuous_entropy_target(action_spec),
        )
        self._init_estimator(loss_function=loss_function, gamma=gamma, reduction=reduction)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_qvalue``, ``loss_alpha``, ``alpha``, ``entropy``;
        writes ``td_error``."""
        keys = self.tensor_keys
        batch_dims = tensordict.batch_dims
        alpha = self.log_alpha.detach().exp()
        action, log_prob = C.sample_with_log_prob(
            C.get_dist(self, "actor_network", tensordict), batch_dims
        )
        if self.target_entropy is None:
            self.target_entropy = -float(math.prod(action.shape[batch_dims:]))
        actor_td = tensordict.copy().set(keys.action, action)
        q_new = self._q(actor_td, self._detached("qvalue_network")).mean(0)
        loss_actor = alpha * log_prob - C.squeeze_feature(q_new)
        loss_alpha = -self.log_alpha * (log_prob.detach() + self.target_entropy)
        next_td = tensordict.get(K.NEXT)
        with torch.no_grad():
            next_action, next_log_prob = C.sample_with_log_prob(
                C.get_dist(self, "actor_network", next_td), batch_dims
            )
            subset = torch.randperm(self.num_qvalue_nets, device=action.device)[
                : self.sub_sample_len
            ]
            q_params = (
                self.target_qvalue_network_params
                if self.delay_qvalue
                else self.qvalue_network_params
            )
            next_q = self._q(next_td.copy().set(keys.action, next_action), q_params)
            next_value = next_q[subset].min(0).values - alpha * next_log_prob.unsqueeze(-1)
            target = C.bootstrap_target(self, tensordict, next_value)
        pred = self._q(tensordict, self._critic_params("qvalue_network"))
        error = distance_loss(pred, target.expand_as(pred), self.loss_function)
        with torch.no_grad():
            td_error = (pred - target).abs().max(0).values
            while td_error.dim() > batch_dims:
                td_error = td_error.mean(-1)
            tensordict.set(keys.priority, td_error)
        return TensorDict(
            loss_actor=C.reduce(loss_actor, self.reduction),
            loss_qvalue=C.reduce(error.sum(0), self.reduction),
            loss_alpha=C.reduce(loss_alpha, self.reduction),
            alpha=alpha,
            entropy=-log_prob.detach().mean(),
        )
