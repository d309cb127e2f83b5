"""Decision-transformer action regression: :class:`DTLoss`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.utils import distance_loss

__all__ = ["DTLoss"]


class DTLoss(LossModule):
    """``loss = mean(d(actor(td)[action_pred], td[action_target]))`` for a decision transformer.

    The target actions are read before the actor runs (both keys default to ``"action"``); the
    actor sees the whole input (returns-to-go, observations, past actions), as a
    decision-transformer policy needs.

    Args:
        actor_network: a TensorDict module writing ``action_pred``.

    Keyword Args:
        loss_function: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"l2"``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, Actor
        >>> from rl_objectives import DTLoss
        >>> actor = Actor(MLP(3, 2, depth=1, num_cells=8))
        >>> td = TensorDict(observation=torch.randn(4, 10, 3), action=torch.randn(4, 10, 2), batch_size=[4, 10])
        >>> DTLoss(actor)(td)["loss"].shape
        torch.Size([])
    """

    @dataclass
    class _AcceptedKeys:
        action_target: NestedKey = K.ACTION
        action_pred: NestedKey = K.ACTION

    def __init__(
        self,
        actor_network: torch.nn.Module,
        *,
        loss_function: str = "l2",
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        self.convert_to_functional(actor_network, "actor_network")
        self.loss_function = C.check_loss_function(owner, loss_function)
        self.reduction = C.check_reduction(owner, reduction)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return [*self._network_in_keys("actor_network"), self.tensor_keys.action_target]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss``."""
        target = tensordict.get(self.tensor_keys.action_target).detach()
        with self.use_network("actor_network") as net:
            pred = net(tensordict.copy()).get(self.tensor_keys.action_pred)
        return TensorDict(
            loss=C.reduce(distance_loss(pred, target, self.loss_function), self.reduction)
        )
