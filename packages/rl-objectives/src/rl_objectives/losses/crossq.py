"""CrossQ: SAC without target networks, with batch-normalised critics: :class:`CrossQLoss`."""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import SoftQLossBase
from rl_objectives.utils import distance_loss

__all__ = ["CrossQLoss"]


class CrossQLoss(SoftQLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """CrossQ (Bhatt et al., 2024): SAC's terms, no target critics, one joint critic pass.

    The critics (typically with batch normalisation) see ``(s, a_data)`` and ``(s', a')`` in
    one forward pass over the concatenated batch, so both halves share the batch statistics;
    the ``(s', a')`` half, detached, gives the target ``y = r + gamma * (1 - terminated) *
    (min_i Q_i(s', a') - alpha * log_pi(a' | s'))``. The actor loss evaluates the frozen
    critics in eval mode (running statistics), before the joint pass updates them.

    Args:
        actor_network: a probabilistic actor (``get_dist``).
        qvalue_network: a Q module reading ``observation`` and ``action``; the first of
            ``num_qvalue_nets`` critics (the others are re-initialised copies); or a list
            of ``num_qvalue_nets`` such modules, used as they are.

    Keyword Args:
        num_qvalue_nets: number of critics. Defaults to 2.
        loss_function: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"smooth_l1"``.
        alpha_init: initial temperature. Defaults to 1.0.
        fixed_alpha: keep alpha constant. Defaults to ``False``.
        action_spec: for ``target_entropy="auto"`` (``-action_dim``).
        target_entropy: a float or ``"auto"``. Defaults to ``"auto"``.
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
        >>> from rl_objectives import CrossQLoss
        >>> net = TensorDictModule(
        ...     torch.nn.Sequential(MLP(3, 2, depth=1, num_cells=8), NormalParamExtractor()),
        ...     ["observation"], ["loc", "scale"],
        ... )
        >>> actor = ProbabilisticActor(net, ["loc", "scale"], distribution_class=TanhNormal)
        >>> q = ValueOperator(
        ...     MLP(4, 1, depth=1, num_cells=8, norm_class=torch.nn.BatchNorm1d), ["observation", "action"]
        ... )
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.rand(5, 1) - 0.5,
        ...     next=TensorDict(
        ...         observation=torch.randn(5, 3), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> sorted(k for k in CrossQLoss(actor, q)(td).keys() if k.startswith("loss_"))
        ['loss_actor', 'loss_alpha', 'loss_qvalue']
    """

    # set up by the shared base (_init_temperature, _init_estimator)
    target_entropy: float | None
    loss_function: str
    gamma: float | None
    reduction: str

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module | list[nn.Module],
        *,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        fixed_alpha: bool = False,
        action_spec: Any = None,
        target_entropy: float | str = "auto",
        gamma: float | None = None,
        reduction: str | None = None,
        separate_losses: bool = False,
    ) -> None:
        super().__init__()
        self._init_actor_and_critics(
            actor_network,
            qvalue_network,
            num_qvalue_nets=num_qvalue_nets,
            separate_losses=separate_losses,
        )
        self._init_temperature(
            alpha_init,
            fixed_alpha=fixed_alpha,
            target_entropy=target_entropy,
            auto_target_entropy=C.continuous_entropy_target(action_spec),
        )
        self._init_estimator(loss_function=loss_function, gamma=gamma, reduction=reduction)

    def _q(self, td: TensorDictBase, params: TensorDictBase, *, train: bool) -> torch.Tensor:
        net = self.qvalue_network
        mode = net.training
        net.train(train and self.training)
        try:
            with self.use_network("qvalue_network", params=params):
                return net(td)
        finally:
            net.train(mode)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_qvalue``, ``loss_alpha``, ``alpha``, ``entropy``;
        writes ``td_error``."""
        keys = self.tensor_keys
        batch_dims = tensordict.batch_dims
        alpha = self.log_alpha.detach().exp()
        action, log_prob = C.sample_with_log_prob(
            C.get_dist(self, "actor_network", tensordict), batch_dims
        )
        if self.target_entropy is None:
            self.target_entropy = -float(math.prod(action.shape[batch_dims:]))
        actor_td = tensordict.copy().set(keys.action, action)
        q_new = self._q(actor_td, self._detached("qvalue_network"), train=False).min(0).values
        loss_actor = alpha * log_prob - C.squeeze_feature(q_new)
        loss_alpha = -self.log_alpha * (log_prob.detach() + self.target_entropy)
        next_td = tensordict.get(K.NEXT)
        with torch.no_grad():
            next_action, next_log_prob = C.sample_with_log_prob(
                C.get_dist(self, "actor_network", next_td), batch_dims
            )
        in_keys = [keys.action, *[k for k in self.qvalue_network.in_keys if k != keys.action]]
        now = tensordict.select(*in_keys)
        later = next_td.copy().set(keys.action, next_action).select(*in_keys)
        params = self._critic_params("qvalue_network")
        both = self._q(torch.cat([now, later], 0), params, train=True)
        size = tensordict.batch_size[0]
        pred, next_q = both[:, :size], both[:, size:].detach()
        with torch.no_grad():
            next_value = next_q.min(0).values - alpha * next_log_prob.unsqueeze(-1)
            target = C.bootstrap_target(self, tensordict, next_value)
        error = distance_loss(pred, target.expand_as(pred), self.loss_function)
        with torch.no_grad():
            td_error = (pred - target).abs().max(0).values
            while td_error.dim() > batch_dims:
                td_error = td_error.mean(-1)
            tensordict.set(keys.priority, td_error)
        return TensorDict(
            loss_actor=C.reduce(loss_actor, self.reduction),
            loss_qvalue=C.reduce(error.sum(0), self.reduction),
            loss_alpha=C.reduce(loss_alpha, self.reduction),
            alpha=alpha,
            entropy=-log_prob.detach().mean(),
        )
