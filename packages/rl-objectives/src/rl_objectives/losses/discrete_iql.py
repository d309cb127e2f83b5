"""Implicit Q-learning for discrete actions: :class:`DiscreteIQLLoss`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_objectives.losses import _common as C
from rl_objectives.losses.iql import IQLLoss

__all__ = ["DiscreteIQLLoss"]


class DiscreteIQLLoss(IQLLoss):
    """IQL with critics that output one value per action (``action_value``, ``[*B, n]``).

    The same three terms as :class:`~rl_objectives.IQLLoss`; ``Q_i(s, a_data)`` is the entry
    of the data action (one-hot or index), and the actor is a categorical policy.

    Args:
        actor_network: a probabilistic actor over discrete actions.
        qvalue_network: a module writing ``action_value`` ``[*B, n_actions]``.
        value_network: a state-value module writing ``"state_value"``.

    Keyword Args:
        **kwargs: see :class:`~rl_objectives.IQLLoss`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor, ValueOperator
        >>> from rl_objectives import DiscreteIQLLoss
        >>> logits = TensorDictModule(MLP(3, 2, depth=1, num_cells=8), ["observation"], ["logits"])
        >>> actor = ProbabilisticActor(logits, ["logits"], distribution_class=OneHotCategorical)
        >>> q = TensorDictModule(MLP(3, 2, depth=1, num_cells=8), ["observation"], ["action_value"])
        >>> v = ValueOperator(MLP(3, 1, depth=1, num_cells=8), ["observation"])
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.eye(2)[[0, 1, 1, 0, 0]],
        ...     next=TensorDict(
        ...         observation=torch.randn(5, 3), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> sorted(k for k in DiscreteIQLLoss(actor, q, v)(td).keys() if k.startswith("loss_"))
        ['loss_actor', 'loss_qvalue', 'loss_value']
    """

    @dataclass
    class _AcceptedKeys:
        action: NestedKey = K.ACTION
        value: NestedKey = K.STATE_VALUE
        action_value: NestedKey = K.ACTION_VALUE
        priority: NestedKey = "td_error"
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module,
        value_network: nn.Module,
        **kwargs: Any,
    ) -> None:
        super().__init__(actor_network, qvalue_network, value_network, **kwargs)
        self.qvalue_network.out_key = self.tensor_keys.action_value

    def _forward_value_estimator_keys(self, **kwargs: NestedKey) -> None:
        C.forward_estimator_keys(self, kwargs)
        if "action_value" in kwargs:
            self.qvalue_network.out_key = kwargs["action_value"]

    def _q_data(self, td: TensorDictBase, params: TensorDictBase) -> torch.Tensor:
        all_q = self._q(td, params)
        action = td.get(self.tensor_keys.action)
        try:
            return C.gather_action_value(all_q, action.expand(all_q.shape[0], *action.shape))
        except ValueError as err:
            raise ValueError(f"DiscreteIQLLoss: {err}") from None
