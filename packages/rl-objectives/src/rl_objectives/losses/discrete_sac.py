"""Soft actor-critic for discrete actions: :class:`DiscreteSACLoss`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._soft_q import SoftQLossBase
from rl_objectives.utils import distance_loss

__all__ = ["DiscreteSACLoss"]


class DiscreteSACLoss(SoftQLossBase, C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """SAC over ``n`` discrete actions, with expectations taken exactly over the actions.

    With ``p = softmax(logits(s))``, ``Q = min_i Q_i(s, .)`` and ``alpha = exp(log_alpha)``:

    - ``loss_actor = mean(sum_a p(a) * (alpha * log p(a) - Q(s, a)))`` (critics frozen);
    - ``y = r + gamma * (1 - terminated) * sum_a p'(a) * (min_i Q_target_i(s', a) - alpha *
      log p'(a))``; ``loss_qvalue = sum_i mean(d(Q_i(s, a_data), y))``;
    - ``loss_alpha = mean(log_alpha * (H(p) - target_entropy))``.

    Args:
        actor_network: a probabilistic actor whose distribution has ``logits`` (e.g. with
            ``OneHotCategorical``).
        qvalue_network: a module writing ``action_value`` ``[*B, n]``; the first of
            ``num_qvalue_nets`` critics (the others are re-initialised copies); or a list
            of ``num_qvalue_nets`` such modules, used as they are.

    Keyword Args:
        num_actions: ``n``; used for ``target_entropy="auto"`` (``0.98 * log(n)``), otherwise
            read from the logits.
        num_qvalue_nets: number of critics. Defaults to 2.
        loss_function: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"smooth_l1"``.
        alpha_init: initial temperature. Defaults to 1.0.
        fixed_alpha: keep alpha constant. Defaults to ``False``.
        target_entropy_weight: the share of the maximal entropy aimed at with ``"auto"``.
            Defaults to 0.98.
        target_entropy: a float or ``"auto"``. Defaults to ``"auto"``.
        delay_qvalue: target copies of the critics. Defaults to ``True``.
        gamma: discount (TD(0) estimator by default). Defaults to 0.99.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.
        separate_losses: parameters a critic shares with the actor (a common trunk) are
            trained by the actor loss only: the critic terms see them detached. Defaults to
            ``False`` (every term trains them).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor
        >>> from rl_objectives import DiscreteSACLoss
        >>> logits = TensorDictModule(MLP(3, 2, depth=1, num_cells=8), ["observation"], ["logits"])
        >>> actor = ProbabilisticActor(logits, ["logits"], distribution_class=OneHotCategorical)
        >>> q = TensorDictModule(MLP(3, 2, depth=1, num_cells=8), ["observation"], ["action_value"])
        >>> td = TensorDict(
        ...     observation=torch.randn(5, 3), action=torch.eye(2)[[0, 1, 1, 0, 0]],
        ...     next=TensorDict(
        ...         observation=torch.randn(5, 3), reward=torch.ones(5, 1),
        ...         done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> sorted(k for k in DiscreteSACLoss(actor, q)(td).keys() if k.startswith("loss_"))
        ['loss_actor', 'loss_alpha', 'loss_qvalue']
    """

    # set up by the shared base (_init_temperature, _init_estimator)
    target_entropy: float | None
    loss_function: str
    gamma: float | None
    reduction: str

    @dataclass
    class _AcceptedKeys:
        action: NestedKey = K.ACTION
        action_value: NestedKey = K.ACTION_VALUE
        priority: NestedKey = "td_error"
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    _q_value_field = "action_value"

    def __init__(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module | list[nn.Module],
        *,
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
        super().__init__()
        self._init_actor_and_critics(
            actor_network,
            qvalue_network,
            num_qvalue_nets=num_qvalue_nets,
            q_out_key=K.ACTION_VALUE,
            delay_qvalue=delay_qvalue,
            separate_losses=separate_losses,
        )
        self.delay_qvalue = delay_qvalue
        self.target_entropy_weight = float(target_entropy_weight)
        self._init_temperature(
            alpha_init,
            fixed_alpha=fixed_alpha,
            target_entropy=target_entropy,
            auto_target_entropy=(
                None if num_actions is None else self.target_entropy_weight * math.log(num_actions)
            ),
        )
        self._init_estimator(loss_function=loss_function, gamma=gamma, reduction=reduction)

    def _log_probs(self, td: TensorDictBase) -> torch.Tensor:
        dist = C.get_dist(self, "actor_network", td)
        return torch.log_softmax(dist.logits, -1)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_actor``, ``loss_qvalue``, ``loss_alpha``, ``alpha`` and ``entropy``;
        writes ``td_error``."""
        keys = self.tensor_keys
        alpha = self.log_alpha.detach().exp()
        log_p = self._log_probs(tensordict)
        p = log_p.exp()
        if self.target_entropy is None:
            self.target_entropy = self.target_entropy_weight * math.log(log_p.shape[-1])
        q = self._q(tensordict, self._detached("qvalue_network")).min(0).values
        loss_actor = (p * (alpha * log_p - q)).sum(-1)
        all_q = self._q(tensordict, self._critic_params("qvalue_network"))
        try:
            pred = C.gather_action_value(
                all_q,
                tensordict.get(keys.action)
                .unsqueeze(0)
                .expand(all_q.shape[0], *tensordict.get(keys.action).shape),
            )
        except ValueError as err:
            raise ValueError(f"DiscreteSACLoss: {err}") from None
        with torch.no_grad():
            next_td = tensordict.get(K.NEXT)
            next_log_p = self._log_probs(next_td)
            q_params = (
                self.target_qvalue_network_params
                if self.delay_qvalue
                else self.qvalue_network_params
            )
            next_q = self._q(next_td, q_params).min(0).values
            next_value = (next_log_p.exp() * (next_q - alpha * next_log_p)).sum(-1, keepdim=True)
            target = C.bootstrap_target(self, tensordict, next_value)
        error = distance_loss(pred, target.expand_as(pred), self.loss_function)
        entropy = -(p * log_p).sum(-1)
        loss_alpha = self.log_alpha * (entropy.detach() - self.target_entropy)
        with torch.no_grad():
            td_error = (pred - target).abs().max(0).values
            while td_error.dim() > tensordict.batch_dims:
                td_error = td_error.mean(-1)
            tensordict.set(keys.priority, td_error)
        return TensorDict(
            loss_actor=C.reduce(loss_actor, self.reduction),
            loss_qvalue=C.reduce(error.sum(0), self.reduction),
            loss_alpha=C.reduce(loss_alpha, self.reduction),
            alpha=alpha,
            entropy=entropy.detach().mean(),
        )
