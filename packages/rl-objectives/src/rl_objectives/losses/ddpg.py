"""Deep deterministic policy gradient: :class:`DDPGLoss`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.utils import ValueEstimators, distance_loss

__all__ = ["DDPGLoss"]


class DDPGLoss(C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """DDPG: ``loss_actor = -mean(Q(s, mu(s)))`` and ``loss_value = d(Q(s, a), y)``.

    ``y = r + gamma * (1 - terminated) * Q_target(s', mu_target(s'))``. The actor loss does
    not train the critic (its parameters are detached there).

    Args:
        actor_network: a deterministic actor writing ``action``.
        value_network: a Q-value module reading ``observation`` and ``action`` and writing
            ``state_action_value``.

    Keyword Args:
        loss_function: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"l2"``.
        delay_actor: use a target copy of the actor for ``mu_target``. Defaults to ``False``.
        delay_value: use a target copy of the critic for ``Q_target``. Defaults to ``True``.
        gamma: discount of the value estimator (TD(0) by default). Defaults to 0.99.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.
        separate_losses: parameters a critic shares with the actor (a common trunk) are
            trained by the actor loss only: the critic terms see them detached. Defaults to
            ``False`` (every term trains them).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, Actor, ValueOperator
        >>> from rl_objectives import DDPGLoss
        >>> actor = Actor(MLP(3, 1, depth=1, num_cells=8))
        >>> critic = ValueOperator(MLP(4, 1, depth=1, num_cells=8), ["observation", "action"])
        >>> loss = DDPGLoss(actor, critic)
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.randn(5, 1),
        ...     next=TensorDict(
        ...         observation=torch.randn(5, 3), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> sorted(k for k in loss(td).keys() if k.startswith("loss_"))
        ['loss_actor', 'loss_value']
    """

    @dataclass
    class _AcceptedKeys:
        state_action_value: NestedKey = K.STATE_ACTION_VALUE
        priority: NestedKey = "td_error"
        action: NestedKey = K.ACTION
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    default_value_estimator = ValueEstimators.TD0

    def __init__(
        self,
        actor_network: torch.nn.Module,
        value_network: torch.nn.Module,
        *,
        loss_function: str = "l2",
        delay_actor: bool = False,
        delay_value: bool = True,
        gamma: float | None = None,
        reduction: str | None = None,
        separate_losses: bool = False,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        self.separate_losses = bool(separate_losses)
        self.convert_to_functional(actor_network, "actor_network", create_target_params=delay_actor)
        self.convert_to_functional(value_network, "value_network", create_target_params=delay_value)
        self.delay_actor = delay_actor
        self.delay_value = delay_value
        self.loss_function = C.check_loss_function(owner, loss_function)
        self.gamma = gamma
        self.reduction = C.check_reduction(owner, reduction)
        self.make_value_estimator(**({} if gamma is None else {"gamma": gamma}))

    def _q(self, td: TensorDictBase, params: TensorDictBase) -> torch.Tensor:
        with self.use_network("value_network", params=params) as net:
            return C.read_output(net, td, self.tensor_keys.state_action_value)

    def _act(self, td: TensorDictBase, params: TensorDictBase) -> TensorDictBase:
        with self.use_network("actor_network", params=params) as net:
            return net(td)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return C.bootstrap_in_keys(
            self,
            tensordict,
            root=("actor_network", "value_network"),
            following=("actor_network", "value_network"),
        )

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_value`` and value diagnostics; writes ``td_error``."""
        keys = self.tensor_keys
        # actor: Q(s, mu(s)) with the critic frozen
        actor_td = self._act(tensordict.copy(), self.actor_network_params)
        q_actor = self._q(actor_td, self._detached("value_network"))
        loss_actor = -q_actor
        # critic
        pred = self._q(tensordict.copy(), self._critic_params("value_network"))
        with torch.no_grad():
            next_td = tensordict.get(K.NEXT).copy()
            actor_params = (
                self.target_actor_network_params if self.delay_actor else self.actor_network_params
            )
            value_params = (
                self.target_value_network_params if self.delay_value else self.value_network_params
            )
            next_value = self._q(self._act(next_td, actor_params), value_params)
            target = C.bootstrap_target(self, tensordict, next_value)
        error = distance_loss(pred, target, self.loss_function)
        with torch.no_grad():
            td_error = (pred - target).abs()
            while td_error.dim() > tensordict.batch_dims:
                td_error = td_error.mean(-1)
            tensordict.set(keys.priority, td_error)
        return TensorDict(
            loss_actor=C.reduce(loss_actor, self.reduction),
            loss_value=C.reduce(error, self.reduction),
            pred_value=pred.detach().mean(),
            target_value=target.mean(),
            pred_value_max=pred.detach().max(),
            target_value_max=target.max(),
        )
