"""Generalized advantage estimation: :class:`GAE`."""

from __future__ import annotations

from typing import Any

from tensordict import TensorDictBase
from torch import Tensor, nn

from rl_objectives.value import functional
from rl_objectives.value.base import ValueEstimatorBase, _standardise

__all__ = ["GAE"]


class GAE(ValueEstimatorBase):
    """Writes the GAE advantage and its value target (``advantage + V``).

    Args:
        gamma: discount factor in ``[0, 1]``.
        lmbda: trace decay in ``[0, 1]``.
        value_network: the value module (or ``None`` with ``skip_existing=True``).

    Keyword Args:
        average_gae: standardise the advantage over the batch. Defaults to ``False``.
        vectorized: call the ``vec_`` function (TorchRL's switch); both run the same
            ``rl_core`` op, which a compiled kernel accelerates. Defaults to ``False``.
        **kwargs: ``differentiable``, ``skip_existing``, ``shifted``, ``time_dim``: see
            :class:`~rl_objectives.value.base.ValueEstimatorBase`.

    Raises:
        ValueError: ``gamma`` or ``lmbda`` outside ``[0, 1]``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, ValueOperator
        >>> from rl_objectives.value import GAE
        >>> value_net = ValueOperator(MLP(3, 1, depth=1, num_cells=8), in_keys=["observation"])
        >>> td = TensorDict(
        ...     observation=torch.randn(2, 6, 3),
        ...     next=TensorDict(
        ...         observation=torch.randn(2, 6, 3),
        ...         reward=torch.ones(2, 6, 1),
        ...         done=torch.zeros(2, 6, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(2, 6, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[2, 6],
        ... )
        >>> gae = GAE(gamma=0.99, lmbda=0.95, value_network=value_net, average_gae=True)
        >>> td = gae(td)
        >>> td["advantage"].shape, round(td["advantage"].mean().item(), 4) == 0.0
        (torch.Size([2, 6, 1]), True)
    """

    def __init__(
        self,
        gamma: float | Tensor,
        lmbda: float | Tensor,
        value_network: nn.Module | None,
        *,
        average_gae: bool = False,
        vectorized: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(gamma, value_network, average_gae=average_gae, **kwargs)
        lmbda = float(lmbda)
        if not 0.0 <= lmbda <= 1.0:
            raise ValueError(f"{type(self).__name__}: expected lmbda in [0, 1], got {lmbda}.")
        self.lmbda = lmbda
        self.vectorized = vectorized

    def _estimate(
        self,
        tensordict: TensorDictBase,
        params: TensorDictBase | None,
        target_params: TensorDictBase | None,
    ) -> tuple[Tensor, Tensor]:
        value, next_value = self._state_values(tensordict, params, target_params)
        reward, done, terminated = self._next_entries(tensordict, value)
        fn = (
            functional.vec_generalized_advantage_estimate
            if self.vectorized
            else functional.generalized_advantage_estimate
        )
        return fn(
            self.gamma,
            self.lmbda,
            value,
            next_value,
            reward,
            done,
            terminated,
            time_dim=self._time_dim(tensordict),
        )

    def value_estimate(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
    ) -> Tensor:
        """The GAE value target (``advantage + V``), shaped like the state value."""
        with self._grad_context():
            return self._estimate(tensordict, params, target_params)[1]

    def forward(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
    ) -> TensorDictBase:
        """Writes ``advantage`` (standardised with ``average_gae``) and ``value_target``."""
        params, target_params = self._held_out(params, target_params)
        with self._grad_context():
            advantage, target = self._estimate(tensordict, params, target_params)
            if self.average_gae:
                advantage = _standardise(advantage)
        tensordict.set(self.tensor_keys.advantage, advantage)
        tensordict.set(self.tensor_keys.value_target, target)
        return tensordict
