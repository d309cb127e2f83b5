"""Implicit Q-learning for discrete actions: :class:`DiscreteIQLLoss`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.specs import Categorical, OneHot
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
        action_space: how the data action is encoded: ``"one_hot"`` (also ``"one-hot"``) or
            ``"categorical"`` (an index, with or without a trailing singleton dim), or the
            action spec (``OneHot`` or ``Categorical``). Defaults to ``None``: told apart by
            the action's shape and dtype.
        **kwargs: see :class:`~rl_objectives.IQLLoss`.

    Raises:
        ValueError: an ``action_space`` string other than those above.
        TypeError: an ``action_space`` that is neither a string nor a ``OneHot`` or
            ``Categorical`` spec.

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
        *,
        action_space: str | OneHot | Categorical | None = None,
        **kwargs: Any,
    ) -> None:
        self.action_space = C.check_action_space("DiscreteIQLLoss", action_space)
        super().__init__(actor_network, qvalue_network, value_network, **kwargs)
        self.qvalue_network.out_key = self.tensor_keys.action_value

    def _forward_value_estimator_keys(self, **kwargs: NestedKey) -> None:
        C.forward_estimator_keys(self, kwargs)
        if "action_value" in kwargs:
            self.qvalue_network.out_key = kwargs["action_value"]

    def _q_data(self, td: TensorDictBase, params: TensorDictBase) -> torch.Tensor:
        all_q = self._q(td, params)
        action = td.get(self.tensor_keys.action)
        if self.action_space == "categorical":
            if action.dim() == td.batch_dims:  # an index without its trailing singleton dim
                action = action.unsqueeze(-1)
            if action.shape[td.batch_dims :] != (1,) or action.is_floating_point():
                raise ValueError(
                    f"DiscreteIQLLoss: action_space='categorical' expects an integer action "
                    f"index of shape {tuple(td.batch_size)} or {(*td.batch_size, 1)}, got "
                    f"{action.dtype} of shape {tuple(action.shape)}."
                )
            return all_q.gather(-1, action.long().expand(*all_q.shape[:-1], 1))
        if self.action_space == "one_hot" and action.shape != all_q.shape[1:]:
            raise ValueError(
                f"DiscreteIQLLoss: action_space='one_hot' expects a one-hot action of shape "
                f"{tuple(all_q.shape[1:])}, got shape {tuple(action.shape)}."
            )
        try:
            return C.gather_action_value(all_q, action.expand(all_q.shape[0], *action.shape))
        except ValueError as err:
            raise ValueError(f"DiscreteIQLLoss: {err}") from None

    def _action_for_log_prob(self, td: TensorDictBase) -> torch.Tensor:
        action = td.get(self.tensor_keys.action)
        if self.action_space == "categorical" and action.dim() == td.batch_dims + 1:
            return action.squeeze(-1)  # a categorical distribution scores [*B] indices
        return action
