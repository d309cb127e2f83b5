"""Off-policy corrected targets: :class:`VTrace`."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torch import Tensor, nn

from rl_core import keys as K
from rl_objectives._log_prob import action_log_prob, read_log_prob
from rl_objectives.value import functional
from rl_objectives.value.base import BoundNetwork, ValueEstimatorBase, expand_like

__all__ = ["VTrace"]


class VTrace(ValueEstimatorBase):
    """V-trace advantage and value target (IMPALA) for data collected by another policy.

    The behaviour log-probabilities are read at ``sample_log_prob`` (``"action_log_prob"``);
    the learner's are computed with ``actor_network.get_dist(td).log_prob(action)``.

    Args:
        gamma: discount factor in ``[0, 1]``.
        value_network: the value module (or ``None`` with ``skip_existing=True``).
        actor_network: a probabilistic actor (has ``get_dist``).

    Keyword Args:
        rho_thresh: clip of the importance weights in the deltas. Defaults to 1.0.
        c_thresh: clip of the trace coefficients. Defaults to 1.0.
        action_key: where the action is read. Defaults to ``"action"``.
        **kwargs: see :class:`~rl_objectives.value.base.ValueEstimatorBase`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from rl_core.modules import ProbabilisticActor
        >>> from rl_objectives.value import VTrace
        >>> net = TensorDictModule(
        ...     torch.nn.Sequential(torch.nn.Linear(3, 2), NormalParamExtractor()),
        ...     ["observation"], ["loc", "scale"],
        ... )
        >>> actor = ProbabilisticActor(net, ["loc", "scale"], distribution_class=torch.distributions.Normal)
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.randn(5, 1),
        ...     action_log_prob=torch.zeros(5, 1), state_value=torch.zeros(5, 1),
        ...     next=TensorDict(
        ...         state_value=torch.zeros(5, 1), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> td = VTrace(0.9, None, actor, skip_existing=True)(td)
        >>> td["advantage"].shape
        torch.Size([5, 1])
    """

    def __init__(
        self,
        gamma: float | Tensor,
        value_network: nn.Module | None,
        actor_network: nn.Module,
        *,
        rho_thresh: float = 1.0,
        c_thresh: float = 1.0,
        action_key: K.NestedKey = K.ACTION,
        **kwargs: Any,
    ) -> None:
        super().__init__(gamma, value_network, **kwargs)
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                f"VTrace: actor_network must be a probabilistic actor with get_dist(), got "
                f"{type(actor_network).__name__}."
            )
        self.__dict__["actor_network"] = actor_network  # not owned: see ValueEstimatorBase
        self.rho_thresh = float(rho_thresh)
        self.c_thresh = float(c_thresh)
        self.action_key = action_key

    def _log_probs(
        self, tensordict: TensorDictBase, like: Tensor, actor_params: TensorDictBase | None
    ) -> tuple[Tensor, Tensor]:
        with torch.no_grad():
            if isinstance(self.actor_network, BoundNetwork):
                dist = self.actor_network.get_dist(tensordict, actor_params)
            elif actor_params is None:
                dist = self.actor_network.get_dist(tensordict)
            else:
                with actor_params.to_module(self.actor_network, preserve_module_state=False):
                    dist = self.actor_network.get_dist(tensordict)
            # per-dimension log-probs of a factorised dist, and those of several heads, summed
            try:
                log_pi = action_log_prob(dist, tensordict, self.action_key, like.dim())
            except KeyError as err:
                raise KeyError(f"VTrace: {err.args[0]} Pass action_key= to rename it.") from None
        keys = self.tensor_keys.sample_log_prob
        log_mu = read_log_prob(type(self).__name__, tensordict, keys, like.dim())
        batch_dims = tensordict.batch_dims
        fixed = []
        for lp in (log_pi, log_mu):
            if lp.dim() == batch_dims:
                lp = lp.unsqueeze(-1)
            fixed.append(expand_like(lp, like, batch_dims).to(like.dtype))
        return fixed[0], fixed[1]

    def _estimate(
        self,
        tensordict: TensorDictBase,
        params: TensorDictBase | None,
        target_params: TensorDictBase | None,
        actor_params: TensorDictBase | None,
    ) -> tuple[Tensor, Tensor]:
        value, next_value = self._state_values(tensordict, params, target_params)
        reward, done, terminated = self._next_entries(tensordict, value)
        log_pi, log_mu = self._log_probs(tensordict, value, actor_params)
        return functional.vtrace_advantage_estimate(
            self.gamma,
            log_pi,
            log_mu,
            value,
            next_value,
            reward,
            done,
            terminated,
            rho_thresh=self.rho_thresh,
            c_thresh=self.c_thresh,
            time_dim=self._time_dim(tensordict),
        )

    def value_estimate(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
        actor_params: TensorDictBase | None = None,
    ) -> Tensor:
        """The V-trace value target, shaped like the state value."""
        with self._grad_context():
            return self._estimate(tensordict, params, target_params, actor_params)[1]

    def forward(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
        actor_params: TensorDictBase | None = None,
    ) -> TensorDictBase:
        """Writes the V-trace ``advantage`` and ``value_target``."""
        params, target_params = self._held_out(params, target_params)
        with self._grad_context():
            advantage, target = self._estimate(tensordict, params, target_params, actor_params)
        tensordict.set(self.tensor_keys.advantage, advantage)
        tensordict.set(self.tensor_keys.value_target, target)
        return tensordict
