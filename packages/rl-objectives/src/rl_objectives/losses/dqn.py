"""Deep Q-learning: :class:`DQNLoss` (with double DQN and target networks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictSequential

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.modules import QValueModule
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.utils import ValueEstimators, distance_loss

__all__ = ["DQNLoss"]


class DQNLoss(C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """``loss = mean(d(Q(s, a), r + gamma * (1 - terminated) * max_a' Q_target(s', a')))``.

    With ``double_dqn=True`` the next action is the online network's greedy action, valued by
    the target network. A dueling network is just another ``value_network`` (its
    ``action_value`` output is ``V + A - mean(A)``). The absolute TD error is written into the
    input at ``priority`` (``"td_error"``, shape ``[*B]``) for prioritized replay.

    Args:
        value_network: a module writing ``action_value`` ``[*B, n_actions]`` (e.g. a
            ``QValueActor``).

    Keyword Args:
        loss_function: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"l2"``.
        delay_value: bootstrap from a target copy (update it with ``SoftUpdate`` or
            ``HardUpdate``). Defaults to ``True``.
        double_dqn: double Q-learning target. Defaults to ``False``.
        gamma: discount of the value estimator (TD(0) by default). Defaults to 0.99.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, QValueActor
        >>> from rl_objectives import DQNLoss
        >>> qnet = QValueActor(MLP(3, 2, depth=1, num_cells=8), in_keys=["observation"], action_space="one_hot")
        >>> loss = DQNLoss(qnet, double_dqn=True)
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.eye(2)[[0, 1, 1, 0, 1]],
        ...     next=TensorDict(
        ...         observation=torch.randn(5, 3), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> out = loss(td)
        >>> out["loss"].shape, td["td_error"].shape
        (torch.Size([]), torch.Size([5]))
    """

    @dataclass
    class _AcceptedKeys:
        advantage: NestedKey = K.ADVANTAGE
        value_target: NestedKey = K.VALUE_TARGET
        value: NestedKey = K.CHOSEN_ACTION_VALUE
        action_value: NestedKey = K.ACTION_VALUE
        action: NestedKey = K.ACTION
        priority: NestedKey = "td_error"
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    default_value_estimator = ValueEstimators.TD0

    def __init__(
        self,
        value_network: torch.nn.Module,
        *,
        loss_function: str = "l2",
        delay_value: bool = True,
        double_dqn: bool = False,
        gamma: float | None = None,
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        self.convert_to_functional(value_network, "value_network", create_target_params=delay_value)
        self.delay_value = delay_value
        self.double_dqn = double_dqn
        self.loss_function = C.check_loss_function(owner, loss_function)
        self.gamma = gamma
        self.reduction = C.check_reduction(owner, reduction)
        self.make_value_estimator(**({} if gamma is None else {"gamma": gamma}))

    def _qvalue_head(self) -> tuple[Any, Any]:
        """``(action-value module, QValueModule)`` when the network is a plain QValueActor."""
        net = self.value_network
        steps = getattr(net, "module", None)
        if (
            isinstance(net, TensorDictSequential)
            and isinstance(steps, torch.nn.ModuleList)
            and len(steps) == 2
            and isinstance(steps[1], QValueModule)
        ):
            return steps[0], steps[1]
        return None, None

    def _action_values(self, td: TensorDictBase, *, target: bool) -> torch.Tensor:
        key = self.tensor_keys.action_value
        cache = self.__dict__.setdefault("_detached_cache", {})
        if "qvalue_head" not in cache:
            cache["qvalue_head"] = self._qvalue_head()
        head, qmodule = cache["qvalue_head"]
        with self.use_network("value_network", target=target) as net:
            if head is not None and qmodule.action_value_key == key:
                # Fast path: the action values are the output of the first step of a
                # QValueActor; the QValueModule after it (greedy action, chosen value) is not
                # needed here.
                return C.read_output(head, td, key)
            return net(td.copy()).get(key)

    def _mask(self, td: TensorDictBase, action_value: torch.Tensor) -> torch.Tensor:
        """Masks the action values of forbidden actions when the network reads a mask."""
        _, qmodule = self._qvalue_head()
        mask_key = getattr(qmodule, "action_mask_key", None)
        if mask_key is None:
            return action_value
        mask = td.get(mask_key)
        return action_value.masked_fill(~mask, float("-inf"))

    @torch.no_grad()
    def _next_value(self, tensordict: TensorDictBase) -> torch.Tensor:
        next_td = tensordict.get(K.NEXT)
        next_av = self._mask(next_td, self._action_values(next_td, target=self.delay_value))
        if self.double_dqn:
            online = (
                next_av
                if not self.delay_value
                else self._mask(next_td, self._action_values(next_td, target=False))
            )
            return next_av.gather(-1, online.argmax(-1, keepdim=True))
        return next_av.max(-1, keepdim=True).values

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return C.bootstrap_in_keys(
            self, tensordict, root=("value_network",), following=("value_network",)
        )

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss``; writes ``td_error`` into ``tensordict``."""
        keys = self.tensor_keys
        action_value = self._action_values(tensordict, target=False)
        try:
            pred = C.gather_action_value(action_value, tensordict.get(keys.action))
        except ValueError as err:
            raise ValueError(f"DQNLoss: {err}") from None
        target = C.bootstrap_target(self, tensordict, self._next_value(tensordict))
        error = distance_loss(pred, target, self.loss_function)
        with torch.no_grad():
            td_error = (pred - target).abs()
            while td_error.dim() > tensordict.batch_dims:
                td_error = td_error.mean(-1)
            tensordict.set(keys.priority, td_error)
        return TensorDict(loss=C.reduce(error, self.reduction))
