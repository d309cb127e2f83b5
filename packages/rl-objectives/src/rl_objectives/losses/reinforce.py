"""REINFORCE with an optional baseline: :class:`ReinforceLoss`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.utils import ValueEstimators, distance_loss
from rl_objectives.value.base import BoundNetwork

__all__ = ["ReinforceLoss"]


class ReinforceLoss(C.EstimatorChoice, C.DetachedParamsCache, LossModule):
    """``loss_actor = -mean(log_pi(a | s) * A)``; with a critic, ``loss_value`` fits ``V``.

    The advantage is read at ``advantage`` or computed with the value estimator (TD(0) by
    default; ``make_value_estimator(ValueEstimators.TD1)`` gives Monte-Carlo returns).

    Args:
        actor_network: a probabilistic actor (``get_dist``).
        critic_network: a value module writing ``"state_value"``, or ``None``.

    Keyword Args:
        delay_value: bootstrap from a target copy of the critic. Defaults to ``False``.
        loss_critic_type: ``"l1"``, ``"l2"`` or ``"smooth_l1"``. Defaults to ``"smooth_l1"``.
        gamma: discount of the value estimator. Defaults to 0.99.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.
        separate_losses: parameters the critic shares with the actor are trained by
            ``loss_actor`` only (``loss_value`` sees them detached). Defaults to ``False``.
        functional: ``False`` keeps the modules themselves as submodules running with their
            own parameters (no target copy then: ``delay_value`` must be ``False``).
            Defaults to ``True``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor
        >>> from rl_objectives import ReinforceLoss
        >>> net = TensorDictModule(MLP(3, 2, depth=1, num_cells=8), ["observation"], ["logits"])
        >>> actor = ProbabilisticActor(net, ["logits"], distribution_class=OneHotCategorical)
        >>> td = TensorDict(
        ...     observation=torch.randn(4, 3), action=torch.eye(2)[[0, 1, 1, 0]],
        ...     advantage=torch.randn(4, 1), batch_size=[4],
        ... )
        >>> sorted(ReinforceLoss(actor)(td).keys())
        ['loss_actor']
    """

    _scores_actions = True  # log-probs of the batch's actions: see LossModule

    @dataclass
    class _AcceptedKeys:
        advantage: NestedKey = K.ADVANTAGE
        value_target: NestedKey = K.VALUE_TARGET
        value: NestedKey = K.STATE_VALUE
        sample_log_prob: NestedKey = K.SAMPLE_LOG_PROB
        action: NestedKey = K.ACTION
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    default_value_estimator = ValueEstimators.TD0

    def __init__(
        self,
        actor_network: torch.nn.Module,
        critic_network: torch.nn.Module | None = None,
        *,
        delay_value: bool = False,
        loss_critic_type: str = "smooth_l1",
        gamma: float | None = None,
        reduction: str | None = None,
        separate_losses: bool = False,
        functional: bool = True,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                f"{owner}: actor_network must be a probabilistic actor with get_dist(), got "
                f"{type(actor_network).__name__}."
            )
        self.functional = bool(functional)
        self.separate_losses = bool(separate_losses)
        self.convert_to_functional(actor_network, "actor_network", functional=self.functional)
        self.has_critic = critic_network is not None
        self.delay_value = delay_value and self.has_critic
        if self.delay_value and not self.functional:
            raise ValueError(
                f"{owner}: delay_value=True needs a target copy of the critic, which "
                f"functional=False does not make; pass one of them."
            )
        if critic_network is not None:
            self.convert_to_functional(
                critic_network,
                "critic_network",
                create_target_params=delay_value,
                functional=self.functional,
            )
        self.loss_critic_type = C.check_loss_function(owner, loss_critic_type)
        self.gamma = gamma
        self.reduction = C.check_reduction(owner, reduction)
        if self.has_critic:
            self.make_value_estimator(**({} if gamma is None else {"gamma": gamma}))

    def _make_value_estimator(self, value_type: Any, **hyperparams: Any) -> Any:
        return C.build_estimator(
            self,
            value_type,
            hyperparams,
            BoundNetwork(self, "critic_network") if self.has_critic else None,
            actor_network=BoundNetwork(self, "actor_network"),
        )

    def _forward_value_estimator_keys(self, **kwargs: NestedKey) -> None:
        C.forward_estimator_keys(self, kwargs)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        keys = self.tensor_keys
        out = [*self._network_in_keys("actor_network"), keys.action]
        if not self.has_critic:
            return [*out, keys.advantage]
        given = tensordict is not None and tensordict.get(keys.advantage, None) is not None
        out += self._network_in_keys("critic_network")
        if tensordict is None or given:
            out += [keys.advantage, keys.value_target]
        if tensordict is None or not given:  # the estimator computes the advantage
            out += self._network_in_keys("critic_network", under=K.NEXT)
            flags = (keys.reward, keys.done, keys.terminated)
            out += [C.under_next(k) for k in flags]
        return out

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor`` and, with a critic, ``loss_value``."""
        keys = self.tensor_keys
        td = tensordict.copy()
        advantage = td.get(keys.advantage, None)
        if advantage is None:
            if not self.has_critic:
                raise KeyError(
                    f"ReinforceLoss: the data has no {keys.advantage!r} entry and the loss has "
                    f"no critic to compute it. Compute returns with a value estimator first."
                )
            params = self._detached("critic_network")
            target = self.target_critic_network_params if self.delay_value else params
            self.value_estimator(td, params=params, target_params=target)
            advantage = td.get(keys.advantage)
        dist = C.get_dist(self, "actor_network", td)
        log_prob = C.aggregate_log_prob(dist.log_prob(td.get(keys.action)), advantage)
        loss_actor = -(log_prob * C.squeeze_feature(advantage).detach())
        out: dict[str, Tensor] = {"loss_actor": C.reduce(loss_actor, self.reduction)}
        if self.has_critic:
            target = td.get(keys.value_target, None)
            if target is None:
                raise KeyError(
                    f"ReinforceLoss: expected the value target at {keys.value_target!r}."
                )
            params = self._critic_params("critic_network")
            with self.use_network("critic_network", params=params) as critic:
                value = critic(td.copy()).get(keys.value)
            error = distance_loss(target, value, self.loss_critic_type)
            out["loss_value"] = C.reduce(error, self.reduction)
        return TensorDict(out)
