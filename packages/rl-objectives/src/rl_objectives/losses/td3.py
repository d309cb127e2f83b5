"""Twin delayed DDPG: :class:`TD3Loss`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._ensemble import QValueEnsemble
from rl_objectives.utils import ValueEstimators, distance_loss

__all__ = ["TD3Loss"]


class TD3Loss(C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """TD3: clipped double-Q targets with target policy smoothing.

    ``a' = clamp(mu_target(s') + clamp(N(0, policy_noise), -noise_clip, noise_clip), low,
    high)``, ``y = r + gamma * (1 - terminated) * min_i Q_target_i(s', a')``;
    ``loss_qvalue = sum_i mean(d(Q_i(s, a), y))`` and ``loss_actor = -mean(Q_0(s, mu(s)))``
    (critics frozen there). Delay the actor update by calling its optimizer every other step.

    Args:
        actor_network: a deterministic actor writing ``action``.
        qvalue_network: a Q module reading ``observation`` and ``action``; it is the first of
            ``num_qvalue_nets`` critics, the others are re-initialised copies; or a list
            of ``num_qvalue_nets`` such modules, used as they are.

    Keyword Args:
        action_spec: a ``Bounded`` action spec for the clamp of ``a'``.
        bounds: ``(low, high)`` instead of a spec. Without either, ``a'`` is not clamped.
        num_qvalue_nets: number of critics. Defaults to 2.
        policy_noise: std of the target smoothing noise. Defaults to 0.2.
        noise_clip: clip of that noise. Defaults to 0.5.
        loss_function: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"smooth_l1"``.
        delay_actor: target copy of the actor. Defaults to ``True``.
        delay_qvalue: target copies of the critics. Defaults to ``True``.
        gamma: discount (TD(0) estimator by default). Defaults to 0.99.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.
        separate_losses: parameters a critic shares with the actor (a common trunk) are
            trained by the actor loss only: the critic terms see them detached. Defaults to
            ``False`` (every term trains them).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, Actor, ValueOperator
        >>> from rl_objectives import TD3Loss
        >>> actor = Actor(MLP(3, 1, depth=1, num_cells=8))
        >>> critic = ValueOperator(MLP(4, 1, depth=1, num_cells=8), ["observation", "action"])
        >>> loss = TD3Loss(actor, critic, bounds=(-1.0, 1.0))
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.rand(5, 1),
        ...     next=TensorDict(
        ...         observation=torch.randn(5, 3), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> sorted(k for k in loss(td).keys() if k.startswith("loss_"))
        ['loss_actor', 'loss_qvalue']
    """

    @dataclass
    class _AcceptedKeys:
        action: NestedKey = K.ACTION
        state_action_value: NestedKey = K.STATE_ACTION_VALUE
        priority: NestedKey = "td_error"
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    default_value_estimator = ValueEstimators.TD0

    def __init__(
        self,
        actor_network: torch.nn.Module,
        qvalue_network: torch.nn.Module | list[torch.nn.Module],
        *,
        action_spec: Any = None,
        bounds: tuple[float, float] | None = None,
        num_qvalue_nets: int = 2,
        policy_noise: float = 0.2,
        noise_clip: float = 0.5,
        loss_function: str = "smooth_l1",
        delay_actor: bool = True,
        delay_qvalue: bool = True,
        gamma: float | None = None,
        reduction: str | None = None,
        separate_losses: bool = False,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        self.separate_losses = bool(separate_losses)
        self.convert_to_functional(actor_network, "actor_network", create_target_params=delay_actor)
        ensemble = QValueEnsemble(
            qvalue_network, num_qvalue_nets, K.STATE_ACTION_VALUE, owner=owner
        )
        self.convert_to_functional(ensemble, "qvalue_network", create_target_params=delay_qvalue)
        self.num_qvalue_nets = num_qvalue_nets
        self.delay_actor = delay_actor
        self.delay_qvalue = delay_qvalue
        bounds_pair = C.action_bounds(owner, action_spec, bounds)
        if bounds_pair is None:
            self.low = self.high = None
        else:
            self.register_buffer("low", torch.as_tensor(bounds_pair[0]).float())
            self.register_buffer("high", torch.as_tensor(bounds_pair[1]).float())
        self.policy_noise = float(policy_noise)
        self.noise_clip = float(noise_clip)
        self.loss_function = C.check_loss_function(owner, loss_function)
        self.gamma = gamma
        self.reduction = C.check_reduction(owner, reduction)
        self.make_value_estimator(**({} if gamma is None else {"gamma": gamma}))

    def _forward_value_estimator_keys(self, **kwargs: NestedKey) -> None:
        C.forward_estimator_keys(self, kwargs)
        if "state_action_value" in kwargs:
            self.qvalue_network.out_key = kwargs["state_action_value"]

    def _q(self, td: TensorDictBase, params: TensorDictBase) -> torch.Tensor:
        with self.use_network("qvalue_network", params=params) as net:
            return net(td)

    def _act(self, td: TensorDictBase, params: TensorDictBase) -> TensorDictBase:
        with self.use_network("actor_network", params=params) as net:
            return net(td)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return C.bootstrap_in_keys(
            self,
            tensordict,
            root=("actor_network", "qvalue_network"),
            following=("actor_network", "qvalue_network"),
        )

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_qvalue`` and diagnostics; writes ``td_error``."""
        keys = self.tensor_keys
        out: dict[str, torch.Tensor] = {}
        loss_actor, q_actor = self._actor_loss(tensordict, out)
        pred = self._q(tensordict.copy(), self._critic_params("qvalue_network"))
        with torch.no_grad():
            actor_params = (
                self.target_actor_network_params if self.delay_actor else self.actor_network_params
            )
            q_params = (
                self.target_qvalue_network_params
                if self.delay_qvalue
                else self.qvalue_network_params
            )
            next_td = self._act(tensordict.get(K.NEXT).copy(), actor_params)
            action = next_td.get(keys.action)
            noise = (torch.randn_like(action) * self.policy_noise).clamp(
                -self.noise_clip, self.noise_clip
            )
            action = action + noise
            if self.low is not None:
                action = torch.clamp(action, self.low, self.high)
            next_td.set(keys.action, action)
            next_value = self._q(next_td, q_params).min(0).values
            target = C.bootstrap_target(self, tensordict, next_value)
        error = distance_loss(pred, target.expand_as(pred), self.loss_function)
        with torch.no_grad():
            td_error = (pred - target).abs().max(0).values
            while td_error.dim() > tensordict.batch_dims:
                td_error = td_error.mean(-1)
            tensordict.set(keys.priority, td_error)
        out.update(
            loss_actor=C.reduce(loss_actor, self.reduction),
            loss_qvalue=C.reduce(error.sum(0), self.reduction),
            pred_value=pred.detach().mean(),
            state_action_value_actor=q_actor.detach().mean(),
            next_state_value=next_value.mean(),
            target_value=target.mean(),
        )
        return TensorDict(out)

    def _actor_loss(
        self, tensordict: TensorDictBase, out: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(per-sample actor loss, Q_0(s, mu(s)))``, the critics frozen."""
        actor_td = self._act(tensordict.copy(), self.actor_network_params)
        q_actor = self._q(actor_td, self._detached("qvalue_network"))[0]
        return -q_actor, q_actor
