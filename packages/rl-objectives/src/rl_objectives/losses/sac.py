"""Soft actor-critic: :class:`SACLoss` (v2 with automatic entropy tuning, v1 with a value net)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import SoftQLossBase
from rl_objectives.utils import distance_loss

__all__ = ["SACLoss"]


class SACLoss(SoftQLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """SAC (Haarnoja et al., 2018): v2 with automatic entropy tuning, v1 with a value net.

    With ``alpha = exp(log_alpha)`` and ``a ~ pi(s)`` reparameterised:

    - ``loss_actor = mean(alpha * log_pi(a | s) - min_i Q_i(s, a))`` (critics frozen);
    - v2 (no ``value_network``): ``y = r + gamma * (1 - terminated) * (min_i Q_target_i(s',
      a') - alpha * log_pi(a' | s'))`` with ``a' ~ pi(s')``;
      v1 (with ``value_network``): ``y = r + gamma * (1 - terminated) * V_target(s')`` and
      ``loss_value = mean(d(V(s), min_i Q_i(s, a) - alpha * log_pi(a | s)))``;
    - ``loss_qvalue = sum_i mean(d(Q_i(s, a_data), y))``; ``loss_alpha`` as in the family.

    The arguments it shares with the SAC family are described on
    :class:`~rl_objectives.losses._soft_q.SoftQLossBase`; SAC adds:

    Args:
        value_network: a state-value module for SAC v1, or ``None`` for v2.

    Keyword Args:
        delay_value: bootstrap from a target copy of the value network (v1).
        skip_done_states: (v2) run the actor on the next states that bootstrap only, as
            TorchRL's option: a terminated next state's value is multiplied by 0, so its
            action is not drawn. The loss is the one without it (TorchRL skips every done
            state, and so bootstraps a truncated one from the action 0). Defaults to False.

    Examples:
        >>> import torch
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
        >>> loc_scale = torch.nn.Sequential(MLP(3, 2, num_cells=8), NormalParamExtractor())
        >>> actor = ProbabilisticActor(
        ...     TensorDictModule(loc_scale, ["observation"], ["loc", "scale"]),
        ...     ["loc", "scale"],
        ...     distribution_class=TanhNormal,
        ... )
        >>> from rl_objectives import SACLoss
        >>> v1 = SACLoss(
        ...     actor,
        ...     ValueOperator(MLP(4, 1, num_cells=8), ["observation", "action"]),
        ...     value_network=ValueOperator(MLP(3, 1, num_cells=8), ["observation"]),
        ... )
        >>> from tensordict import TensorDict
        >>> done = torch.zeros(5, 1, dtype=torch.bool)
        >>> s, s_next = torch.randn(5, 3), torch.randn(5, 3)
        >>> nxt = {"observation": s_next, "reward": torch.ones(5, 1), "done": done, "terminated": done}
        >>> td = TensorDict(observation=s, action=torch.rand(5, 1) - 0.5, next=nxt, batch_size=[5])
        >>> sorted(k for k in v1(td).keys() if k.startswith("loss_"))
        ['loss_actor', 'loss_alpha', 'loss_qvalue', 'loss_value']
    """

    @dataclass
    class _AcceptedKeys(SoftQLossBase._AcceptedKeys):
        value: NestedKey = K.STATE_VALUE
        log_prob: NestedKey = K.SAMPLE_LOG_PROB

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
        skip_done_states: bool = False,
    ) -> None:
        super().__init__()
        self.skip_done_states = bool(skip_done_states)
        self.delay_actor, self.delay_qvalue = delay_actor, delay_qvalue
        self.separate_losses = bool(separate_losses)
        self._init_actor_and_critics(actor_network, qvalue_network, num_qvalue_nets)
        self.version = 1 if value_network is not None else 2
        self.delay_value = delay_value
        if value_network is not None:
            self.convert_to_functional(
                value_network, "value_network", create_target_params=delay_value
            )
        auto = C.continuous_entropy_target(action_spec)
        self._init_temperature(alpha_init, fixed=fixed_alpha, target=target_entropy, auto=auto)
        self._init_alpha_bounds(min_alpha, max_alpha)
        self._init_estimator(loss_function=loss_function, gamma=gamma, reduction=reduction)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        if self.version == 1:  # the next-state value comes from the value network
            root = ("actor_network", "qvalue_network", "value_network")
            return C.bootstrap_in_keys(self, tensordict, root=root, following=("value_network",))
        networks = ("actor_network", "qvalue_network")
        return C.bootstrap_in_keys(self, tensordict, root=networks, following=networks)

    def _next_sample(self, next_td: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        """The next action and its log-prob; with ``skip_done_states``, drawn for the next
        states that are not terminated only (zeros elsewhere, where nothing bootstraps)."""
        params = self._bootstrap_params("actor_network")
        if not self.skip_done_states:
            return self._sample(next_td, params)
        terminated = next_td.get(self.tensor_keys.terminated, None)
        if terminated is None:
            terminated = next_td.get(self.tensor_keys.done)
        batch = next_td.batch_size
        if terminated.shape[: len(batch)] != batch or terminated.numel() != batch.numel():
            return self._sample(next_td, params)  # (a flag per agent, say: nothing skipped)
        live = ~terminated.reshape(batch)
        if bool(live.all()):
            return self._sample(next_td, params)
        action, log_prob = self._sample(next_td[live], params)
        next_action = action.new_zeros(*batch, *action.shape[1:])
        next_action[live] = action
        next_log_prob = log_prob.new_zeros(batch)
        next_log_prob[live] = log_prob
        return next_action, next_log_prob

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_qvalue``, ``loss_alpha`` (and ``loss_value`` in v1),
        ``alpha`` and ``entropy``; writes ``td_error``."""
        keys = self.tensor_keys
        alpha = self.alpha
        # actor
        actor_td, log_prob = self._policy_sample(tensordict, self.actor_network_params)
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
            next_td = tensordict.get(K.NEXT)
            if self.version == 2:
                next_action, next_log_prob = self._next_sample(next_td)
                next_td = next_td.copy().set(keys.action, next_action)
                next_q = self._q(next_td, self._bootstrap_params("qvalue_network")).amin(0)
                next_value = next_q - alpha * next_log_prob.unsqueeze(-1)
            else:
                v_params = self._bootstrap_params("value_network")
                with self.use_network("value_network", params=v_params) as net:
                    next_value = net(next_td.copy()).get(keys.value)
            target = C.bootstrap_target(self, tensordict, next_value)
        loss_qvalue = self._critic_loss(tensordict, pred, target)
        if self.version == 1:
            v_params = self._critic_params("value_network")
            with self.use_network("value_network", params=v_params) as net:
                value = net(tensordict.copy()).get(keys.value)
            value_target = (q_new - alpha * log_prob).detach().unsqueeze(-1)
            out["loss_value"] = distance_loss(value, value_target, self.loss_function)
        return self._soft_losses(loss_actor, loss_qvalue, log_prob, alpha, **out)
