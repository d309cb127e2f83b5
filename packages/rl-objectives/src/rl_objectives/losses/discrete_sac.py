"""Soft actor-critic for discrete actions: :class:`DiscreteSACLoss`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import Categorical, OneHot
from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import SoftQLossBase, _TransitionKeys

__all__ = ["DiscreteSACLoss"]


class DiscreteSACLoss(SoftQLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """SAC over ``n`` discrete actions, with expectations taken exactly over the actions.

    With ``p = softmax(logits(s))``, ``Q = min_i Q_i(s, .)`` and ``alpha = exp(log_alpha)``:

    - ``loss_actor = mean(sum_a p(a) * (alpha * log p(a) - Q(s, a)))`` (critics frozen);
    - ``y = r + gamma * (1 - terminated) * sum_a p'(a) * (min_i Q_target_i(s', a) - alpha *
      log p'(a))``; ``loss_qvalue = sum_i mean(d(Q_i(s, a_data), y))``;
    - ``loss_alpha = mean(log_alpha * (H(p) - target_entropy))``.

    The arguments it shares with the SAC family are described on
    :class:`~rl_objectives.losses._soft_q.SoftQLossBase` (no ``delay_actor``, no alpha
    bounds); here the actor's distribution has ``logits`` (e.g. ``OneHotCategorical``), the
    critics write ``action_value`` ``[*B, n]``, and discrete SAC adds:

    Keyword Args:
        action_space: how the data action is encoded, as TorchRL's argument: ``"one_hot"``
            (also ``"one-hot"``) or ``"categorical"`` (an index), or the action's
            ``OneHot``/``Categorical`` spec; an action encoded otherwise raises. Defaults
            to ``None``: read from the action's shape.
        num_actions: ``n``; used for ``target_entropy="auto"``
            (``target_entropy_weight * log(n)``), otherwise read from the logits.
        target_entropy_weight: the share of the maximal entropy aimed at with ``"auto"``.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor
        >>> from rl_objectives import DiscreteSACLoss
        >>> n = 3  # actions
        >>> loss = DiscreteSACLoss(
        ...     ProbabilisticActor(
        ...         TensorDictModule(MLP(4, n, num_cells=8), ["observation"], ["logits"]),
        ...         ["logits"],
        ...         distribution_class=OneHotCategorical,
        ...     ),
        ...     TensorDictModule(MLP(4, n, num_cells=8), ["observation"], ["action_value"]),
        ...     num_actions=n,
        ... )
        >>> round(loss.target_entropy, 4)  # 0.98 * log(3)
        1.0766
        >>> from tensordict import TensorDict
        >>> td = TensorDict(observation=torch.randn(5, 4), action=torch.randint(n, (5,)), batch_size=5)
        >>> td["next"] = TensorDict(observation=torch.randn(5, 4), reward=torch.ones(5, 1), batch_size=5)
        >>> td["next", "done"] = td["next", "terminated"] = torch.zeros(5, 1, dtype=torch.bool)
        >>> loss(td)["loss_qvalue"].shape, td["td_error"].shape
        (torch.Size([]), torch.Size([5]))
    """

    @dataclass
    class _AcceptedKeys(_TransitionKeys):
        action_value: NestedKey = K.ACTION_VALUE

    _q_value_field = "action_value"

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module | list[nn.Module],
        *,
        action_space: str | OneHot | Categorical | None = None,
        num_actions: int | None = None,
        num_qvalue_nets: int = 2,
        loss_function: str = "smooth_l1",
        alpha_init: float = 1.0,
        fixed_alpha: bool = False,
        target_entropy_weight: float = 0.98,
        target_entropy: float | str = "auto",
        delay_qvalue: bool = True,
        gamma: float | None = None,
        reduction: str | None = None,
        separate_losses: bool = False,
    ) -> None:
        # "auto": a share of the largest entropy, log(n)
        weight = float(target_entropy_weight)
        auto = None if num_actions is None else weight * math.log(num_actions)
        super().__init__()
        self.action_space = C.check_action_space("DiscreteSACLoss", action_space)
        self.target_entropy_weight = weight
        self.delay_qvalue = delay_qvalue
        self.separate_losses = bool(separate_losses)
        self._init_actor_and_critics(
            actor_network, qvalue_network, num_qvalue_nets, q_out_key=K.ACTION_VALUE
        )
        self._init_temperature(alpha_init, fixed=fixed_alpha, target=target_entropy, auto=auto)
        self._init_estimator(loss_function=loss_function, gamma=gamma, reduction=reduction)

    def _log_probs(self, td: TensorDictBase) -> torch.Tensor:
        dist = C.get_dist(self, "actor_network", td)
        return torch.log_softmax(dist.logits, -1)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_qvalue``, ``loss_alpha``, ``alpha`` and ``entropy``;
        writes ``td_error``."""
        keys = self.tensor_keys
        alpha = self.alpha
        log_p = self._log_probs(tensordict)
        p = log_p.exp()
        if self.target_entropy is None:
            self.target_entropy = self.target_entropy_weight * math.log(log_p.shape[-1])
        q = self._q(tensordict, self._detached("qvalue_network")).min(0).values
        loss_actor = (p * (alpha * log_p - q)).sum(-1)
        all_q = self._q(tensordict, self._critic_params("qvalue_network"))
        action = C.encoded_action(
            "DiscreteSACLoss",
            self.action_space,
            tensordict.get(keys.action),
            all_q.shape[-1],
            tensordict.batch_dims,
        )
        try:
            pred = C.gather_action_value(
                all_q, action.unsqueeze(0).expand(all_q.shape[0], *action.shape)
            )
        except ValueError as err:
            raise ValueError(f"DiscreteSACLoss: {err}") from None
        with torch.no_grad():
            next_td = tensordict.get(K.NEXT)
            next_log_p = self._log_probs(next_td)
            next_q = self._q(next_td, self._bootstrap_params("qvalue_network")).amin(0)
            next_value = (next_log_p.exp() * (next_q - alpha * next_log_p)).sum(-1, keepdim=True)
            target = C.bootstrap_target(self, tensordict, next_value)
        entropy = -(p * log_p).sum(-1)
        # the exact entropy of p, not a sampled log-prob: the family's loss_alpha with H
        loss_alpha = self.log_alpha * (entropy.detach() - self.target_entropy)
        return self._losses(
            loss_actor=loss_actor,
            loss_qvalue=self._critic_loss(tensordict, pred, target),
            loss_alpha=loss_alpha,
            alpha=alpha,
            entropy=entropy.detach().mean(),
        )
