"""Soft actor-critic: :class:`SACLoss` (v2 with automatic entropy tuning, v1 with a value net)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import SoftQLossBase
from rl_objectives.utils import distance_loss

__all__ = ["SACLoss"]


class SACLoss(SoftQLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """SAC. With ``alpha = exp(log_alpha)`` and ``a ~ pi(s)`` reparameterised:

    - ``loss_actor = mean(alpha * log_pi(a | s) - min_i Q_i(s, a))`` (critics frozen);
    - v2 (no ``value_network``): ``y = r + gamma * (1 - terminated) * (min_i Q_target_i(s',
      a') - alpha * log_pi(a' | s'))`` with ``a' ~ pi(s')``;
      v1 (with ``value_network``): ``y = r + gamma * (1 - terminated) * V_target(s')`` and
      ``loss_value = mean(d(V(s), min_i Q_i(s, a) - alpha * log_pi(a | s)))``;
    - ``loss_qvalue = sum_i mean(d(Q_i(s, a_data), y))``;
    - ``loss_alpha = -mean(log_alpha * (log_pi(a | s) + target_entropy))`` (zero gradient
      with ``fixed_alpha``).

    Args:
        actor_network: a probabilistic actor (``get_dist``), e.g. with ``TanhNormal``.
        qvalue_network: a Q module reading ``observation`` and ``action``; the first of
            ``num_qvalue_nets`` critics (the others are re-initialised copies); or a list
            of ``num_qvalue_nets`` such modules, used as they are.
        value_network: a state-value module for SAC v1, or ``None`` for v2.

    Keyword Args:
        num_qvalue_nets: number of critics. Defaults to 2.
        loss_function: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"smooth_l1"``.
        alpha_init: initial temperature. Defaults to 1.0.
        min_alpha: lower clamp of alpha. max_alpha: upper clamp. Default ``None``.
        action_spec: the action spec, for ``target_entropy="auto"`` (``-action_dim``); without
            it, the action dim is read from the first sampled action.
        fixed_alpha: keep alpha constant. Defaults to ``False``.
        target_entropy: a float or ``"auto"``. Defaults to ``"auto"``.
        delay_actor: sample ``a'`` from a target copy of the actor. Defaults to ``False``.
        delay_qvalue: target copies of the critics. Defaults to ``True``.
        delay_value: target copy of the value net (v1). Defaults to ``True``.
        gamma: discount (TD(0) estimator by default). Defaults to 0.99.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.
        separate_losses: parameters a critic shares with the actor (a common trunk) are
            trained by the actor loss only: the critic terms see them detached. Defaults to
            ``False`` (every term trains them).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
        >>> from rl_objectives import SACLoss
        >>> net = TensorDictModule(
        ...     torch.nn.Sequential(MLP(3, 2, depth=1, num_cells=8), NormalParamExtractor()),
        ...     ["observation"], ["loc", "scale"],
        ... )
        >>> actor = ProbabilisticActor(net, ["loc", "scale"], distribution_class=TanhNormal)
        >>> critic = ValueOperator(MLP(4, 1, depth=1, num_cells=8), ["observation", "action"])
        >>> loss = SACLoss(actor, critic)
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.rand(5, 1) - 0.5,
        ...     next=TensorDict(
        ...         observation=torch.randn(5, 3), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> sorted(k for k in loss(td).keys() if k.startswith("loss_"))
        ['loss_actor', 'loss_alpha', 'loss_qvalue']
    """

    # set up by the shared base (_init_temperature, _init_estimator)
    fixed_alpha: bool
    target_entropy: float | None
    loss_function: str
    gamma: float | None
    reduction: str

    @dataclass
    class _AcceptedKeys:
        action: NestedKey = K.ACTION
        value: NestedKey = K.STATE_VALUE
        state_action_value: NestedKey = K.STATE_ACTION_VALUE
        log_prob: NestedKey = K.SAMPLE_LOG_PROB
        priority: NestedKey = "td_error"
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module | list[nn.Module],
        value_network: nn.Module | None = None,
        *,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        action_spec: Any = None,
        fixed_alpha: bool = False,
        target_entropy: float | str = "auto",
        delay_actor: bool = False,
        delay_qvalue: bool = True,
        delay_value: bool = True,
        gamma: float | None = None,
        reduction: str | None = None,
        separate_losses: bool = False,
    ) -> None:
        super().__init__()
        self._init_actor_and_critics(
            actor_network,
            qvalue_network,
            num_qvalue_nets=num_qvalue_nets,
            delay_actor=delay_actor,
            delay_qvalue=delay_qvalue,
            separate_losses=separate_losses,
        )
        self.version = 1 if value_network is not None else 2
        if value_network is not None:
            self.convert_to_functional(
                value_network, "value_network", create_target_params=delay_value
            )
        self.delay_actor, self.delay_qvalue, self.delay_value = (
            delay_actor,
            delay_qvalue,
            delay_value,
        )
        self.num_qvalue_nets = num_qvalue_nets
        self._init_temperature(
            alpha_init,
            fixed_alpha=fixed_alpha,
            target_entropy=target_entropy,
            auto_target_entropy=C.continuous_entropy_target(action_spec),
            min_alpha=min_alpha,
            max_alpha=max_alpha,
        )
        self._init_estimator(loss_function=loss_function, gamma=gamma, reduction=reduction)

    def _sample(
        self, td: TensorDictBase, params: TensorDictBase
    ) -> tuple[TensorDictBase, torch.Tensor]:
        with self.use_network("actor_network", params=params) as net:
            dist = C.actor_dist(net, td)
        action, log_prob = C.sample_with_log_prob(dist, td.batch_dims)
        td.set(self.tensor_keys.action, action)
        return td, log_prob

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        if self.version == 1:  # the next-state value comes from the value network
            root = ("actor_network", "qvalue_network", "value_network")
            return C.bootstrap_in_keys(self, tensordict, root=root, following=("value_network",))
        networks = ("actor_network", "qvalue_network")
        return C.bootstrap_in_keys(self, tensordict, root=networks, following=networks)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_qvalue``, ``loss_alpha`` (and ``loss_value`` in v1),
        ``alpha`` and ``entropy``; writes ``td_error``."""
        keys = self.tensor_keys
        alpha = self.alpha
        # actor
        actor_td, log_prob = self._sample(tensordict.copy(), self.actor_network_params)
        if self.target_entropy is None:
            action = actor_td.get(keys.action)
            self.target_entropy = -float(math.prod(action.shape[tensordict.batch_dims :]))
        q_new = self._q(actor_td, self._detached("qvalue_network")).min(0).values
        q_new = C.squeeze_feature(q_new)
        loss_actor = alpha * log_prob - q_new
        # critics
        # with separate_losses, Q does not train what it shares with the actor (nor, in v1,
        # with the value network)
        against = ("actor_network",) if self.version == 2 else ("actor_network", "value_network")
        pred = self._q(tensordict, self._critic_params("qvalue_network", against))
        out: dict[str, torch.Tensor] = {}
        with torch.no_grad():
            if self.version == 2:
                params = (
                    self.target_actor_network_params
                    if self.delay_actor
                    else self.actor_network_params
                )
                next_td, next_log_prob = self._sample(tensordict.get(K.NEXT).copy(), params)
                q_params = (
                    self.target_qvalue_network_params
                    if self.delay_qvalue
                    else self.qvalue_network_params
                )
                next_q = self._q(next_td, q_params).min(0).values
                next_value = next_q - alpha * next_log_prob.unsqueeze(-1)
            else:
                v_params = (
                    self.target_value_network_params
                    if self.delay_value
                    else self.value_network_params
                )
                with self.use_network("value_network", params=v_params) as net:
                    next_value = net(tensordict.get(K.NEXT).copy()).get(keys.value)
            target = C.bootstrap_target(self, tensordict, next_value)
        error = distance_loss(pred, target.expand_as(pred), self.loss_function)
        if self.version == 1:
            v_params = self._critic_params("value_network")
            with self.use_network("value_network", params=v_params) as net:
                value = net(tensordict.copy()).get(keys.value)
            value_target = (q_new - alpha * log_prob).detach().unsqueeze(-1)
            out["loss_value"] = C.reduce(
                distance_loss(value, value_target, self.loss_function), self.reduction
            )
        # temperature
        log_alpha = self._log_alpha()
        loss_alpha = -log_alpha * (log_prob.detach() + self.target_entropy)
        with torch.no_grad():
            td_error = (pred - target).abs().max(0).values
            while td_error.dim() > tensordict.batch_dims:
                td_error = td_error.mean(-1)
            tensordict.set(keys.priority, td_error)
        out.update(
            loss_actor=C.reduce(loss_actor, self.reduction),
            loss_qvalue=C.reduce(error.sum(0), self.reduction),
            loss_alpha=C.reduce(loss_alpha, self.reduction),
            alpha=alpha,
            entropy=-log_prob.detach().mean(),
        )
        return TensorDict(out)
