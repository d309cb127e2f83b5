"""Implicit Q-learning: :class:`IQLLoss`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import QEnsembleLossBase
from rl_objectives.utils import distance_loss

__all__ = ["IQLLoss"]


class IQLLoss(QEnsembleLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """IQL (Kostrikov et al., 2021), for offline data; ``q(s, a) = min_i Q_target_i(s, a)``:

    - ``loss_value = mean(|tau - 1(q - V(s) < 0)| * (q - V(s)) ** 2)`` (expectile ``tau``);
    - ``loss_qvalue = sum_i mean(d(Q_i(s, a), r + gamma * (1 - terminated) * V(s')))``;
    - ``loss_actor = -mean(min(exp(beta * (q - V(s))), 100) * log_pi(a | s))`` (advantage-
      weighted regression with ``beta = temperature``; ``q`` and ``V`` are constants there).

    Args:
        actor_network: a probabilistic actor (``get_dist``).
        qvalue_network: a Q module reading ``observation`` and ``action``; the first of
            ``num_qvalue_nets`` critics (the others are re-initialised copies); or a list
            of ``num_qvalue_nets`` such modules, used as they are.
        value_network: a state-value module writing ``"state_value"``.

    Keyword Args:
        num_qvalue_nets: number of critics. Defaults to 2.
        loss_function: for the Q loss. Defaults to ``"smooth_l1"``.
        temperature: ``beta``. Defaults to 1.0.
        expectile: ``tau`` in ``(0, 1)``. Defaults to 0.5.
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
        >>> from rl_objectives import IQLLoss
        >>> net = TensorDictModule(
        ...     torch.nn.Sequential(MLP(3, 2, depth=1, num_cells=8), NormalParamExtractor()),
        ...     ["observation"], ["loc", "scale"],
        ... )
        >>> actor = ProbabilisticActor(net, ["loc", "scale"], distribution_class=TanhNormal)
        >>> q = ValueOperator(MLP(4, 1, depth=1, num_cells=8), ["observation", "action"])
        >>> v = ValueOperator(MLP(3, 1, depth=1, num_cells=8), ["observation"])
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.rand(5, 1) - 0.5,
        ...     next=TensorDict(
        ...         observation=torch.randn(5, 3), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> sorted(k for k in IQLLoss(actor, q, v, expectile=0.7)(td).keys() if k.startswith("loss_"))
        ['loss_actor', 'loss_qvalue', 'loss_value']
    """

    # set up by the shared base (_init_estimator)
    loss_function: str
    gamma: float | None
    reduction: str

    @dataclass
    class _AcceptedKeys:
        action: NestedKey = K.ACTION
        value: NestedKey = K.STATE_VALUE
        state_action_value: NestedKey = K.STATE_ACTION_VALUE
        priority: NestedKey = "td_error"
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module | list[nn.Module],
        value_network: nn.Module,
        *,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        temperature: float = 1.0,
        expectile: float = 0.5,
        delay_qvalue: bool = True,
        gamma: float | None = None,
        reduction: str | None = None,
        separate_losses: bool = False,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        if not 0.0 < expectile < 1.0:
            raise ValueError(f"{owner}: expected expectile in (0, 1), got {expectile}.")
        self._init_actor_and_critics(
            actor_network,
            qvalue_network,
            num_qvalue_nets=num_qvalue_nets,
            delay_qvalue=delay_qvalue,
            separate_losses=separate_losses,
        )
        self.convert_to_functional(value_network, "value_network")
        self.delay_qvalue = delay_qvalue
        self.temperature = float(temperature)
        self.expectile = float(expectile)
        self._init_estimator(loss_function=loss_function, gamma=gamma, reduction=reduction)

    def _q_data(self, td: TensorDictBase, params: TensorDictBase) -> torch.Tensor:
        """``Q_i(s, a_data)`` for every critic: ``[K, *B, 1]``."""
        return self._q(td, params)

    def _v(self, td: TensorDictBase, params: TensorDictBase) -> torch.Tensor:
        with self.use_network("value_network", params=params) as net:
            return C.read_output(net, td, self.tensor_keys.value)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return C.bootstrap_in_keys(
            self,
            tensordict,
            root=("actor_network", "qvalue_network", "value_network"),
            following=("value_network",),
        )

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_qvalue``, ``loss_value`` and ``entropy``; writes
        ``td_error``."""
        keys = self.tensor_keys
        with torch.no_grad():
            q_params = (
                self.target_qvalue_network_params
                if self.delay_qvalue
                else self.qvalue_network_params
            )
            q_data = self._q_data(tensordict, q_params).min(0).values
        value = self._v(tensordict, self._critic_params("value_network"))
        diff = q_data - value
        weight = (self.expectile - (diff < 0).to(diff.dtype)).abs()
        loss_value = weight * diff.pow(2)
        # actor: advantage-weighted log-likelihood of the data actions
        dist = C.get_dist(self, "actor_network", tensordict)
        log_prob = C.aggregate_log_prob(dist.log_prob(tensordict.get(keys.action)), q_data)
        exp_adv = torch.exp(C.squeeze_feature(diff.detach()) * self.temperature).clamp(max=100.0)
        loss_actor = -(exp_adv * log_prob)
        # critics
        against = ("actor_network", "value_network")
        pred = self._q_data(tensordict, self._critic_params("qvalue_network", against))
        with torch.no_grad():
            next_value = self._v(tensordict.get(K.NEXT), self._detached("value_network"))
            target = C.bootstrap_target(self, tensordict, next_value)
        error = distance_loss(pred, target.expand_as(pred), self.loss_function)
        with torch.no_grad():
            td_error = (pred - target).abs().max(0).values
            while td_error.dim() > tensordict.batch_dims:
                td_error = td_error.mean(-1)
            tensordict.set(keys.priority, td_error)
        return TensorDict(
            loss_actor=C.reduce(loss_actor, self.reduction),
            loss_qvalue=C.reduce(error.sum(0), self.reduction),
            loss_value=C.reduce(loss_value, self.reduction),
            entropy=-log_prob.detach().mean(),
        )
