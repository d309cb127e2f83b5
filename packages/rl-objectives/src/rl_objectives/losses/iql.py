"""Implicit Q-learning: :class:`IQLLoss`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import QEnsembleLossBase

__all__ = ["IQLLoss"]


class IQLLoss(QEnsembleLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """IQL (Kostrikov et al., 2021), for offline data; ``q(s, a) = min_i Q_target_i(s, a)``:

    - ``loss_value = mean(|tau - 1(q - V(s) < 0)| * (q - V(s)) ** 2)`` (expectile ``tau``);
    - ``loss_qvalue = sum_i mean(d(Q_i(s, a), r + gamma * (1 - terminated) * V(s')))``;
    - ``loss_actor = -mean(min(exp(beta * (q - V(s))), 100) * log_pi(a | s))`` (advantage-
      weighted regression with ``beta = temperature``; ``q`` and ``V`` are constants there).

    The arguments it shares with the SAC family are described on
    :class:`~rl_objectives.losses._soft_q.QEnsembleLossBase` (IQL has no temperature, no
    ``delay_actor``); IQL adds:

    Args:
        value_network: a state-value module writing ``"state_value"``.

    Keyword Args:
        temperature: ``beta``.
        expectile: ``tau`` in ``[0, 1]`` (``1`` weighs only the data whose ``q`` exceeds
            ``V``, pushing ``V`` to their maximum).

    Examples:
        >>> import torch
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
        >>> v = ValueOperator(MLP(3, 1, num_cells=8), ["observation"])
        >>> q = ValueOperator(MLP(4, 1, num_cells=8), ["observation", "action"])
        >>> head = torch.nn.Sequential(MLP(3, 2, num_cells=8), NormalParamExtractor())
        >>> pi = ProbabilisticActor(
        ...     TensorDictModule(head, ["observation"], ["loc", "scale"]),
        ...     in_keys=["loc", "scale"],
        ...     distribution_class=TanhNormal,
        ... )
        >>> from rl_objectives import IQLLoss
        >>> loss = IQLLoss(pi, q, v, expectile=0.7, temperature=3.0)
        >>> from tensordict import TensorDict
        >>> offline = TensorDict(
        ...     {
        ...         "observation": torch.randn(7, 3),
        ...         "action": torch.rand(7, 1) * 1.8 - 0.9,
        ...         ("next", "observation"): torch.randn(7, 3),
        ...         ("next", "reward"): torch.randn(7, 1),
        ...         ("next", "done"): torch.zeros(7, 1, dtype=torch.bool),
        ...         ("next", "terminated"): torch.zeros(7, 1, dtype=torch.bool),
        ...     },
        ...     batch_size=[7],
        ... )
        >>> loss(offline)["loss_value"].ndim
        0
    """

    @dataclass
    class _AcceptedKeys(QEnsembleLossBase._AcceptedKeys):
        value: NestedKey = K.STATE_VALUE

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
        if not 0.0 <= expectile <= 1.0:
            raise ValueError(
                f"{type(self).__name__}: expected expectile in [0, 1], got {expectile}."
            )
        super().__init__()
        self.delay_qvalue = delay_qvalue
        self.separate_losses = bool(separate_losses)
        self._init_actor_and_critics(actor_network, qvalue_network, num_qvalue_nets)
        self.convert_to_functional(value_network, "value_network")
        self.temperature = float(temperature)
        self.expectile = float(expectile)
        self._init_estimator(loss_function=loss_function, gamma=gamma, reduction=reduction)

    def _q_data(self, td: TensorDictBase, params: TensorDictBase) -> torch.Tensor:
        """``Q_i(s, a_data)`` for every critic: ``[K, *B, 1]``."""
        return self._q(td, params)

    def _action_for_log_prob(self, td: TensorDictBase) -> torch.Tensor:
        """The data action as the actor's distribution scores it."""
        return td.get(self.tensor_keys.action)

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
        with torch.no_grad():
            q_params = self._bootstrap_params("qvalue_network")
            q_data = self._q_data(tensordict, q_params).amin(0)
        value = self._v(tensordict, self._critic_params("value_network"))
        diff = q_data - value
        weight = (self.expectile - (diff < 0).to(diff.dtype)).abs()
        loss_value = weight * diff.pow(2)
        # actor: advantage-weighted log-likelihood of the data actions
        dist = C.get_dist(self, "actor_network", tensordict)
        log_prob = C.aggregate_log_prob(
            dist.log_prob(self._action_for_log_prob(tensordict)), q_data
        )
        exp_adv = torch.exp(C.squeeze_feature(diff.detach()) * self.temperature).clamp(max=100.0)
        loss_actor = -(exp_adv * log_prob)
        # critics
        against = ("actor_network", "value_network")
        pred = self._q_data(tensordict, self._critic_params("qvalue_network", against))
        with torch.no_grad():
            next_value = self._v(tensordict.get(K.NEXT), self._detached("value_network"))
            target = C.bootstrap_target(self, tensordict, next_value)
        return self._losses(
            loss_actor=loss_actor,
            loss_qvalue=self._critic_loss(tensordict, pred, target),
            loss_value=loss_value,
            entropy=-log_prob.detach().mean(),
        )
