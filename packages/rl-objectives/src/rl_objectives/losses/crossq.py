"""CrossQ: SAC without target networks, with batch-normalised critics: :class:`CrossQLoss`."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import SoftQLossBase

__all__ = ["CrossQLoss"]


class CrossQLoss(SoftQLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """CrossQ (Bhatt et al., 2024): SAC's terms, no target critics, one joint critic pass.

    The critics (typically with batch normalisation) see ``(s, a_data)`` and ``(s', a')`` in
    one forward pass over the concatenated batch, so both halves share the batch statistics;
    the ``(s', a')`` half, detached, gives the target ``y = r + gamma * (1 - terminated) *
    (min_i Q_i(s', a') - alpha * log_pi(a' | s'))``. The actor loss evaluates the frozen
    critics in eval mode (running statistics), before the joint pass updates them.

    It takes the arguments of the SAC family (described on
    :class:`~rl_objectives.losses._soft_q.SoftQLossBase`) but no ``delay_*`` flag and no
    alpha bounds: CrossQ keeps no target networks.

    Examples:
        >>> import torch
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
        >>> bn_critic = MLP(4, 1, num_cells=8, norm_class=torch.nn.BatchNorm1d)
        >>> q = ValueOperator(bn_critic, ["observation", "action"])
        >>> actor = ProbabilisticActor(
        ...     TensorDictModule(
        ...         torch.nn.Sequential(MLP(3, 2, num_cells=8), NormalParamExtractor()),
        ...         ["observation"],
        ...         ["loc", "scale"],
        ...     ),
        ...     ["loc", "scale"],
        ...     distribution_class=TanhNormal,
        ... )
        >>> from rl_objectives import CrossQLoss
        >>> loss = CrossQLoss(actor, q)
        >>> from tensordict import TensorDict
        >>> flags = {"done": torch.zeros(6, 1, dtype=torch.bool)}
        >>> flags["terminated"] = flags["done"]
        >>> batch = TensorDict(
        ...     observation=torch.randn(6, 3),
        ...     action=torch.rand(6, 1) - 0.5,
        ...     next=TensorDict(observation=torch.randn(6, 3), reward=torch.ones(6, 1), **flags),
        ...     batch_size=[6],
        ... )
        >>> out = loss(batch)
        >>> out["loss_qvalue"].requires_grad, batch["td_error"].shape
        (True, torch.Size([6]))
    """

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
        # no target networks: the critics bootstrap from themselves, in one joint pass
        self.separate_losses = bool(separate_losses)
        self._init_actor_and_critics(actor_network, qvalue_network, num_qvalue_nets)
        auto = C.continuous_entropy_target(action_spec)
        self._init_temperature(alpha_init, fixed=fixed_alpha, target=target_entropy, auto=auto)
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
        alpha = self.alpha
        actor_td, log_prob = self._policy_sample(tensordict)
        q_new = self._q(actor_td, self._detached("qvalue_network"), train=False).min(0).values
        loss_actor = alpha * log_prob - C.squeeze_feature(q_new)
        next_td = tensordict.get(K.NEXT)
        with torch.no_grad():
            next_action, next_log_prob = self._sample(next_td)
        in_keys = [keys.action, *[k for k in self.qvalue_network.in_keys if k != keys.action]]
        now = tensordict.select(*in_keys)
        later = next_td.copy().set(keys.action, next_action).select(*in_keys)
        params = self._critic_params("qvalue_network")
        both = self._q(torch.cat([now, later], 0), params, train=True)
        size = tensordict.batch_size[0]
        pred, next_q = both[:, :size], both[:, size:].detach()
        with torch.no_grad():
            next_value = next_q.amin(0) - alpha * next_log_prob.unsqueeze(-1)
            target = C.bootstrap_target(self, tensordict, next_value)
        loss_qvalue = self._critic_loss(tensordict, pred, target)
        return self._soft_losses(loss_actor, loss_qvalue, log_prob, alpha)
