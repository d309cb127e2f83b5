"""Monte-Carlo returns bootstrapped at the end of the data: :class:`TD1Estimator`."""

from __future__ import annotations

from typing import Any

from tensordict import TensorDictBase
from torch import Tensor, nn

from rl_objectives.value import functional
from rl_objectives.value.base import ValueEstimatorBase

__all__ = ["TD1Estimator"]


class TD1Estimator(ValueEstimatorBase):
    """``value_target`` = the discounted return to each episode end (TD(1)).

    Truncated ends and the last step bootstrap from ``V(next)``; terminal ends do not.
    Args and keyword args: see :class:`~rl_objectives.value.base.ValueEstimatorBase`, plus
    ``vectorized`` (call the ``vec_`` function; both run the same ``rl_core`` op).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.value import TD1Estimator
        >>> td = TensorDict(
        ...     state_value=torch.zeros(3, 1),
        ...     next=TensorDict(
        ...         state_value=torch.zeros(3, 1),
        ...         reward=torch.ones(3, 1),
        ...         done=torch.zeros(3, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(3, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[3],
        ... )
        >>> est = TD1Estimator(gamma=0.5, value_network=None, skip_existing=True)
        >>> est(td)["value_target"].flatten().tolist()
        [1.75, 1.5, 1.0]
    """

    def __init__(
        self,
        gamma: float | Tensor,
        value_network: nn.Module | None,
        *,
        vectorized: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(gamma, value_network, **kwargs)
        self.vectorized = vectorized

    def value_estimate(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
    ) -> Tensor:
        """The TD(1) target, shaped like the state value."""
        _, next_value = self._state_values(tensordict, params, target_params, need_value=False)
        reward, done, terminated = self._next_entries(tensordict, next_value)
        fn = (
            functional.vec_td1_return_estimate
            if self.vectorized
            else functional.td1_return_estimate
        )
        return fn(
            self.gamma, next_value, reward, done, terminated, time_dim=self._time_dim(tensordict)
        )
