"""Behaviour cloning: :class:`BCLoss`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.utils import distance_loss

__all__ = ["BCLoss"]


class BCLoss(LossModule):
    """Imitation of the data's actions.

    A probabilistic actor (with ``get_dist``) is trained by maximum likelihood:
    ``loss_bc = -mean(log_pi(a_data | s))``; a deterministic actor by regression:
    ``loss_bc = mean(d(actor(s), a_data))``.

    Args:
        actor_network: a ``ProbabilisticActor`` or a deterministic ``Actor``.

    Keyword Args:
        loss_function: for a deterministic actor, ``"l2"``, ``"l1"`` or ``"smooth_l1"``.
            Defaults to ``"l2"``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import MLP, Actor
        >>> from rl_objectives import BCLoss
        >>> td = TensorDict(observation=torch.randn(4, 3), action=torch.randn(4, 2), batch_size=[4])
        >>> BCLoss(Actor(MLP(3, 2, depth=1, num_cells=8)))(td)["loss_bc"].shape
        torch.Size([])
    """

    @dataclass
    class _AcceptedKeys:
        action: NestedKey = K.ACTION

    def __init__(
        self,
        actor_network: torch.nn.Module,
        *,
        loss_function: str = "l2",
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        self.probabilistic = hasattr(actor_network, "get_dist")
        self.convert_to_functional(actor_network, "actor_network")
        self.loss_function = C.check_loss_function(owner, loss_function)
        self.reduction = C.check_reduction(owner, reduction)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return [*self._network_in_keys("actor_network"), self.tensor_keys.action]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_bc``."""
        action = tensordict.get(self.tensor_keys.action)
        if self.probabilistic:
            dist = C.get_dist(self, "actor_network", tensordict)
            log_prob = dist.log_prob(action)
            while log_prob.dim() > tensordict.batch_dims:
                log_prob = log_prob.sum(-1)
            loss = -log_prob
        else:
            with self.use_network("actor_network") as net:
                pred = net(tensordict.copy()).get(self.tensor_keys.action)
            loss = distance_loss(pred, action.detach(), self.loss_function)
        return TensorDict(loss_bc=C.reduce(loss, self.reduction))
