"""Lambda-returns: :class:`TDLambdaEstimator`."""

from __future__ import annotations

from typing import Any

from tensordict import TensorDictBase
from torch import Tensor, nn

from rl_objectives.value import functional
from rl_objectives.value.base import ValueEstimatorBase

__all__ = ["TDLambdaEstimator"]


class TDLambdaEstimator(ValueEstimatorBase):
    """``value_target`` = the TD(lambda) return; ``advantage = value_target - V``.

    Args:
        gamma: discount factor.
        lmbda: mixing parameter in ``[0, 1]``.
        value_network: the value module (or ``None`` with ``skip_existing=True``).

    Keyword Args:
        vectorized: call the ``vec_`` function (TorchRL's switch); both run the same
            ``rl_core`` op, which a compiled kernel accelerates. Defaults to ``False``.
        **kwargs: see :class:`~rl_objectives.value.base.ValueEstimatorBase`.

    Raises:
        ValueError: ``lmbda`` outside ``[0, 1]``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.value import TDLambdaEstimator
        >>> td = TensorDict(
        ...     state_value=torch.zeros(2, 1),
        ...     next=TensorDict(
        ...         state_value=torch.full((2, 1), 4.0),
        ...         reward=torch.ones(2, 1),
        ...         done=torch.zeros(2, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(2, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[2],
        ... )
        >>> est = TDLambdaEstimator(0.5, 1.0, None, skip_existing=True)
        >>> est(td)["value_target"].flatten().tolist()
        [2.5, 3.0]
    """

    def __init__(
        self,
        gamma: float | Tensor,
        lmbda: float | Tensor,
        value_network: nn.Module | None,
        *,
        vectorized: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(gamma, value_network, **kwargs)
        lmbda = float(lmbda)
        if not 0.0 <= lmbda <= 1.0:
            raise ValueError(f"{type(self).__name__}: expected lmbda in [0, 1], got {lmbda}.")
        self.lmbda = lmbda
        self.vectorized = vectorized

    def value_estimate(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
    ) -> Tensor:
        """The lambda-return, shaped like the state value."""
        _, next_value = self._state_values(tensordict, params, target_params, need_value=False)
        reward, done, terminated = self._next_entries(tensordict, next_value)
        fn = (
            functional.vec_td_lambda_return_estimate
            if self.vectorized
            else functional.td_lambda_return_estimate
        )
        return fn(
            self.gamma,
            self.lmbda,
            next_value,
            reward,
            done,
            terminated,
            time_dim=self._time_dim(tensordict),
        )
