"""Advantage actor-critic: :class:`A2CLoss`."""

from __future__ import annotations

from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_objectives.losses import _common as C
from rl_objectives.losses._policy_gradient import _PolicyGradientLoss

__all__ = ["A2CLoss"]


class A2CLoss(_PolicyGradientLoss):
    """A2C: ``loss_objective = -mean(log_pi(a | s) * A)`` plus entropy and critic terms.

    Same arguments, keys and advantage handling as :class:`~rl_objectives.PPOLoss`
    (``sample_log_prob`` is not read).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor, ValueOperator
        >>> from rl_objectives import A2CLoss
        >>> net = TensorDictModule(MLP(3, 2, depth=1, num_cells=8), ["observation"], ["logits"])
        >>> actor = ProbabilisticActor(net, ["logits"], distribution_class=OneHotCategorical)
        >>> critic = ValueOperator(MLP(3, 1, depth=1, num_cells=8), ["observation"])
        >>> td = TensorDict(
        ...     observation=torch.randn(4, 3), action=torch.eye(2)[[0, 1, 1, 0]],
        ...     advantage=torch.randn(4, 1), value_target=torch.randn(4, 1), batch_size=[4],
        ... )
        >>> sorted(A2CLoss(actor, critic)(td).keys())
        ['entropy', 'loss_critic', 'loss_entropy', 'loss_objective']
    """

    _reads_sample_log_prob = False

    def _objective(self, log_weight: Tensor, advantage: Tensor, out: dict[str, Tensor]) -> Tensor:
        return -(log_weight * advantage)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_objective``, ``loss_entropy``/``entropy`` and ``loss_critic``."""
        td = tensordict.copy()
        advantage = self._advantage(td)
        dist = C.get_dist(self, "actor_network", td)
        log_prob = self._action_log_prob(dist, td, advantage)
        out: dict[str, Tensor] = {}
        objective = self._objective(log_prob, C.squeeze_feature(advantage).detach(), out)
        out["loss_objective"] = C.reduce(objective, self.reduction)
        self._entropy_terms(dist, advantage, out)
        self._critic_terms(td, out)
        return TensorDict(out)
