"""Conservative Q-learning for discrete actions: :class:`DiscreteCQLLoss`."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase

from rl_objectives.losses import _common as C
from rl_objectives.losses.dqn import DQNLoss
from rl_objectives.utils import distance_loss

__all__ = ["DiscreteCQLLoss"]


class DiscreteCQLLoss(DQNLoss):
    """DQN's TD loss plus the CQL penalty ``logsumexp_a Q(s, a) - Q(s, a_data)``.

    Outputs ``loss_qvalue`` (the TD loss of :class:`~rl_objectives.DQNLoss`, same target,
    double-DQN and target-network options) and ``loss_cql`` (the penalty, mean over the
    batch). Same arguments and keys as :class:`~rl_objectives.DQNLoss`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, QValueActor
        >>> from rl_objectives import DiscreteCQLLoss
        >>> qnet = QValueActor(MLP(3, 2, depth=1, num_cells=8), action_space="categorical")
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.tensor([0, 1, 1, 0, 1]),
        ...     next=TensorDict(
        ...         observation=torch.randn(5, 3), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> sorted(DiscreteCQLLoss(qnet)(td).keys())
        ['loss_cql', 'loss_qvalue']
    """

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_qvalue`` and ``loss_cql``; writes ``td_error``."""
        keys = self.tensor_keys
        action_value = self._action_values(tensordict, target=False)
        try:
            pred = C.gather_action_value(action_value, tensordict.get(keys.action))
        except ValueError as err:
            raise ValueError(f"DiscreteCQLLoss: {err}") from None
        target = C.bootstrap_target(self, tensordict, self._next_value(tensordict))
        error = distance_loss(pred, target, self.loss_function)
        penalty = torch.logsumexp(action_value, dim=-1, keepdim=True) - pred
        with torch.no_grad():
            td_error = (pred - target).abs()
            while td_error.dim() > tensordict.batch_dims:
                td_error = td_error.mean(-1)
            tensordict.set(keys.priority, td_error)
        return TensorDict(
            loss_qvalue=C.reduce(error, self.reduction),
            loss_cql=C.reduce(penalty, self.reduction),
        )
