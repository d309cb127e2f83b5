"""One-step TD targets: :class:`TD0Estimator`."""

from __future__ import annotations

from tensordict import TensorDictBase
from torch import Tensor

from rl_objectives.value import functional
from rl_objectives.value.base import ValueEstimatorBase

__all__ = ["TD0Estimator"]


class TD0Estimator(ValueEstimatorBase):
    """``value_target = reward + gamma * (1 - terminated) * V(next)``; advantage = target - V.

    Args and keyword args: see :class:`~rl_objectives.value.base.ValueEstimatorBase`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import ValueOperator
        >>> from rl_objectives.value import TD0Estimator
        >>> value_net = ValueOperator(torch.nn.Linear(3, 1), in_keys=["observation"])
        >>> td = TensorDict(
        ...     observation=torch.randn(4, 10, 3),
        ...     next=TensorDict(
        ...         observation=torch.randn(4, 10, 3),
        ...         reward=torch.randn(4, 10, 1),
        ...         done=torch.zeros(4, 10, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(4, 10, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[4, 10],
        ... )
        >>> td = TD0Estimator(gamma=0.9, value_network=value_net)(td)
        >>> td["advantage"].shape, td["value_target"].shape
        (torch.Size([4, 10, 1]), torch.Size([4, 10, 1]))
    """

    def value_estimate(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
    ) -> Tensor:
        """The one-step target, shaped like the state value."""
        _, next_value = self._state_values(tensordict, params, target_params, need_value=False)
        reward, _, terminated = self._next_entries(tensordict, next_value)
        return functional.td0_return_estimate(self.gamma, next_value, reward, terminated)
