"""Conservative Q-learning for continuous actions: :class:`CQLLoss`."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import SoftQLossBase

__all__ = ["CQLLoss"]


class CQLLoss(SoftQLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """CQL(H) (Kumar et al., 2020) on top of SAC, for offline data.

    The SAC terms (``loss_actor``, ``loss_alpha``, ``loss_qvalue``; the backup is
    ``min_i Q_target_i(s', a')`` with ``a' ~ pi(s')``, minus ``alpha * log_pi(a' | s')`` unless
    ``deterministic_backup``), plus the conservative penalty

    ``loss_cql = min_q_weight * sum_i mean(T * logsumexp_j(q_ij / T) - Q_i(s, a_data))``

    where the ``q_ij`` are ``Q_i(s, a_j)`` for ``num_random`` uniform actions (minus their log
    density), ``num_random`` actions from ``pi(s)`` and ``num_random`` from ``pi(s')`` (minus
    their log-probs), ``T = temperature``. The sampled actions carry no gradient; the penalty
    trains the critics only.

    ``max_q_backup=True`` replaces the SAC backup by ``min_i max_j Q_target_i(s', a'_j)`` over
    ``num_random`` actions ``a'_j ~ pi(s')`` (no entropy term, whatever
    ``deterministic_backup`` says).

    ``with_lagrange=True`` tunes the penalty weight ``alpha_prime = exp(log_alpha_prime)``
    (clamped at 1e6; ``log_alpha_prime`` is a parameter starting at 0) by dual descent so that
    the penalty of each critic stays near ``lagrange_thresh``: with ``c_i`` the weighted
    penalty of critic ``i`` above (per sample),

    - ``loss_cql = alpha_prime * sum_i (c_i - lagrange_thresh)`` (``alpha_prime`` detached:
      this term trains the critics);
    - ``loss_alpha_prime = -alpha_prime * (mean_i mean(c_i) - lagrange_thresh)`` (the penalty
      detached: this term trains ``log_alpha_prime`` only, and is a scalar whatever the
      ``reduction``).

    Its value is TorchRL's ``loss_alpha_prime``. Unlike TorchRL, whose ``loss_cql`` is not
    scaled by ``alpha_prime`` and whose ``loss_alpha_prime`` also sends gradient to the
    critics, each term here trains only its own parameters, as in the CQL paper's updates, so
    that the sum of the ``loss_*`` terms can be minimised with one optimizer.

    The arguments it shares with the SAC family are described on
    :class:`~rl_objectives.losses._soft_q.SoftQLossBase` (CQL has no alpha bounds and no
    ``separate_losses``; with ``delay_actor`` the next actions of the backup come from the
    target actor, as in ``SACLoss``); CQL adds:

    Keyword Args:
        action_spec: a ``Bounded`` spec giving the box of the uniform actions (and the
            ``"auto"`` entropy target).
        bounds: ``(low, high)`` instead; defaults to ``(-1, 1)``.
        temperature: ``T``.
        min_q_weight: the weight of the penalty.
        num_random: actions of each kind per state (and of the max backup).
        max_q_backup: back up the max over ``num_random`` next actions.
        with_lagrange: tune ``alpha_prime`` (``log_alpha_prime``).
        lagrange_thresh: the penalty level ``alpha_prime`` aims at.
        deterministic_backup: drop the entropy term from the backup.

    Examples:
        >>> import torch
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
        >>> from rl_core.specs import Bounded
        >>> params = TensorDictModule(
        ...     torch.nn.Sequential(MLP(3, 2, num_cells=8), NormalParamExtractor()),
        ...     in_keys=["observation"],
        ...     out_keys=["loc", "scale"],
        ... )
        >>> from rl_objectives import CQLLoss
        >>> loss = CQLLoss(
        ...     ProbabilisticActor(params, ["loc", "scale"], distribution_class=TanhNormal),
        ...     ValueOperator(MLP(4, 1, num_cells=8), ["observation", "action"]),
        ...     action_spec=Bounded(-2.0, 2.0, (1,)),
        ...     num_random=4,
        ...     with_lagrange=True,
        ... )
        >>> from tensordict import TensorDict
        >>> terminal = torch.tensor([[False], [True]])
        >>> td = TensorDict(
        ...     observation=torch.randn(2, 3),
        ...     action=torch.tensor([[1.5], [-0.5]]),
        ...     next=TensorDict(
        ...         observation=torch.randn(2, 3), reward=torch.zeros(2, 1),
        ...         done=terminal, terminated=terminal, batch_size=[2],
        ...     ),
        ...     batch_size=[2],
        ... )
        >>> [k for k in loss(td).keys() if k.startswith("loss_")]
        ['loss_alpha_prime', 'loss_actor', 'loss_qvalue', 'loss_cql', 'loss_alpha']
    """

    log_alpha_prime: torch.Tensor  # log of the penalty weight (with_lagrange only): a parameter

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module | list[nn.Module],
        *,
        action_spec: Any = None,
        bounds: tuple[float, float] | None = None,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        fixed_alpha: bool = False,
        target_entropy: float | str = "auto",
        temperature: float = 1.0,
        min_q_weight: float = 1.0,
        num_random: int = 10,
        deterministic_backup: bool = True,
        max_q_backup: bool = False,
        with_lagrange: bool = False,
        lagrange_thresh: float = 0.0,
        delay_actor: bool = False,
        delay_qvalue: bool = True,
        gamma: float | None = None,
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        if isinstance(num_random, bool) or not isinstance(num_random, int) or num_random < 1:
            raise ValueError(
                f"{owner}: expected num_random to be a positive int, got {num_random!r}."
            )
        self.delay_actor, self.delay_qvalue = bool(delay_actor), delay_qvalue
        self._init_actor_and_critics(actor_network, qvalue_network, num_qvalue_nets)
        low, high = C.action_bounds(owner, action_spec, bounds) or (-1.0, 1.0)
        self.register_buffer("low", torch.as_tensor(low).float())
        self.register_buffer("high", torch.as_tensor(high).float())
        auto = C.continuous_entropy_target(action_spec)
        self._init_temperature(alpha_init, fixed=fixed_alpha, target=target_entropy, auto=auto)
        self.temperature = float(temperature)
        self.min_q_weight = float(min_q_weight)
        self.num_random = num_random
        self.deterministic_backup = deterministic_backup
        self.max_q_backup = bool(max_q_backup)
        self.with_lagrange = bool(with_lagrange)
        self.target_action_gap = float(lagrange_thresh)  # TorchRL's attribute name
        if self.with_lagrange:
            self.log_alpha_prime = nn.Parameter(torch.zeros(()))
        self._init_estimator(loss_function=loss_function, gamma=gamma, reduction=reduction)

    def _q_at(
        self, td: TensorDictBase, action: torch.Tensor, params: TensorDictBase | None = None
    ) -> torch.Tensor:
        """``Q_i(s, a_j)`` for ``[N, *B, A]`` actions (online by default): ``[K, N, *B, 1]``."""
        repeated = td.expand(action.shape[0], *td.batch_size).clone(False)
        repeated.set(self.tensor_keys.action, action)
        return self._q(repeated, self.qvalue_network_params if params is None else params)

    def _next_value(
        self, next_td: TensorDictBase, alpha: torch.Tensor, batch_dims: int
    ) -> torch.Tensor:
        """The backed-up next-state value ``[*B, 1]`` (no gradient)."""
        keys = self.tensor_keys
        q_params = self._bootstrap_params("qvalue_network")
        actor_params = self._bootstrap_params("actor_network")
        if self.max_q_backup:
            actions, _ = self._sample(next_td, actor_params, sample_shape=(self.num_random,))
            return self._q_at(next_td, actions, q_params).amax(1).amin(0)
        next_action, next_log_prob = self._sample(next_td, actor_params)
        next_value = self._q(next_td.copy().set(keys.action, next_action), q_params).amin(0)
        if not self.deterministic_backup:
            next_value = next_value - alpha * next_log_prob.unsqueeze(-1)
        return next_value

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_qvalue``, ``loss_cql``, ``loss_alpha`` (and
        ``loss_alpha_prime`` with ``with_lagrange``), ``alpha``, ``entropy``; writes
        ``td_error``."""
        keys = self.tensor_keys
        batch_dims = tensordict.batch_dims
        alpha = self.alpha
        # SAC actor and temperature
        actor_td, log_prob = self._policy_sample(tensordict)
        action_new = actor_td.get(keys.action)
        q_new = C.squeeze_feature(self._q(actor_td, self._detached("qvalue_network")).min(0).values)
        loss_actor = alpha * log_prob - q_new
        loss_alpha = self._loss_alpha(log_prob)
        # critics: SAC backup
        next_td = tensordict.get(K.NEXT)
        with torch.no_grad():
            target = C.bootstrap_target(
                self, tensordict, self._next_value(next_td, alpha, batch_dims)
            )
        pred = self._q(tensordict, self.qvalue_network_params)
        loss_qvalue = self._critic_loss(tensordict, pred, target)
        # conservative penalty
        n = self.num_random
        with torch.no_grad():
            shape = (n, *action_new.shape)
            random_action = (
                torch.rand(shape, device=action_new.device) * (self.high - self.low) + self.low
            )
            random_log_density = (
                -torch.log(self.high - self.low).expand(action_new.shape[-1:]).sum()
            )
            curr_action, curr_log_prob = self._sample(tensordict, sample_shape=(n,))
            next_action_n, next_log_prob_n = self._sample(next_td, sample_shape=(n,))
        q_random = self._q_at(tensordict, random_action) - random_log_density
        q_curr = self._q_at(tensordict, curr_action) - curr_log_prob.unsqueeze(-1)
        q_next = self._q_at(tensordict, next_action_n) - next_log_prob_n.unsqueeze(-1)
        stacked = torch.cat([q_random, q_next, q_curr], dim=1) / self.temperature
        penalty = self.min_q_weight * (torch.logsumexp(stacked, dim=1) * self.temperature - pred)
        out: dict[str, torch.Tensor] = {}
        if self.with_lagrange:
            alpha_prime = self.log_alpha_prime.exp().clamp(max=1e6)
            per_critic = penalty.detach().flatten(1).mean(1)
            # a scalar whatever the reduction (reducing a scalar leaves it as it is)
            out["loss_alpha_prime"] = -alpha_prime * (per_critic.mean() - self.target_action_gap)
            loss_cql = alpha_prime.detach() * (penalty - self.target_action_gap).sum(0)
        else:
            loss_cql = penalty.sum(0)
        return self._losses(
            **out,
            loss_actor=loss_actor,
            loss_qvalue=loss_qvalue,
            loss_cql=loss_cql,
            loss_alpha=loss_alpha,
            alpha=alpha,
            entropy=-log_prob.detach().mean(),
        )
