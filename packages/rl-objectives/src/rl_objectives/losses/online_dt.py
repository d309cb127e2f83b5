"""The online Decision Transformer objective: :class:`OnlineDTLoss`."""

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

__all__ = ["OnlineDTLoss"]


def _sum_to_batch(log_prob: torch.Tensor, batch_dims: int) -> torch.Tensor:
    while log_prob.dim() > batch_dims:
        log_prob = log_prob.sum(-1)
    return log_prob


class OnlineDTLoss(LossModule):
    """Online Decision Transformer (Zheng et al., 2022): max-likelihood with an entropy bonus.

    With the actor's distribution ``pi(. | context)`` over every step of the sequences,
    ``alpha = exp(log_alpha)`` and ``H`` the entropy estimated from ``samples_mc_entropy``
    reparameterised samples (``H = -mean log_pi(a~)``):

    - ``log_likelihood = mean log_pi(a_target)``; ``loss_log_likelihood = -log_likelihood``;
    - ``loss_entropy = -alpha * H`` (alpha held fixed);
    - ``loss_alpha = alpha * (H - target_entropy)`` (``H`` held fixed), which lowers the
      temperature while the entropy is above its target and raises it below.

    Args:
        actor_network: a probabilistic actor (``get_dist``), e.g. an :class:`~rl_objectives.modules.OnlineDTActor`
            writing ``loc``/``scale`` into a ``ProbabilisticActor`` with ``TanhNormal``.

    Keyword Args:
        alpha_init: initial temperature. Defaults to 1.0.
        min_alpha: lower clamp of alpha. max_alpha: upper clamp. Default ``None``.
        fixed_alpha: keep alpha constant. Defaults to ``False``.
        target_entropy: a float or ``"auto"`` (minus the action's number of dims, read from
            the actor's spec or else from the first target action). Defaults to ``"auto"``.
        samples_mc_entropy: samples of the entropy estimate. Defaults to 1.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.

    Raises:
        ValueError: ``alpha_init`` or ``samples_mc_entropy`` is not positive, or
            ``target_entropy`` is neither a float nor ``"auto"``.
        TypeError: the actor has no ``get_dist``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from rl_core.modules import MLP, ProbabilisticActor, TanhNormal
        >>> from rl_objectives import OnlineDTLoss
        >>> net = TensorDictModule(
        ...     torch.nn.Sequential(MLP(3, 4, depth=1, num_cells=8), NormalParamExtractor()),
        ...     ["observation"], ["loc", "scale"],
        ... )
        >>> actor = ProbabilisticActor(net, ["loc", "scale"], distribution_class=TanhNormal)
        >>> td = TensorDict(observation=torch.randn(4, 6, 3), action=torch.rand(4, 6, 2) - 0.5,
        ...     batch_size=[4, 6])
        >>> out = OnlineDTLoss(actor)(td)
        >>> sorted(k for k in out.keys() if k.startswith("loss_"))
        ['loss_alpha', 'loss_entropy', 'loss_log_likelihood']
    """

    @dataclass
    class _AcceptedKeys:
        action_target: NestedKey = K.ACTION
        action_pred: NestedKey = K.ACTION

    log_alpha: torch.Tensor

    def __init__(
        self,
        actor_network: nn.Module,
        *,
        alpha_init: float = 1.0,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
        fixed_alpha: bool = False,
        target_entropy: float | str = "auto",
        samples_mc_entropy: int = 1,
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                f"{owner}: actor_network must be a probabilistic actor with get_dist(), got "
                f"{type(actor_network).__name__}."
            )
        if alpha_init <= 0:
            raise ValueError(f"{owner}: expected alpha_init > 0, got {alpha_init}.")
        if isinstance(samples_mc_entropy, bool) or samples_mc_entropy < 1:
            raise ValueError(
                f"{owner}: expected samples_mc_entropy >= 1, got {samples_mc_entropy!r}."
            )
        self.convert_to_functional(actor_network, "actor_network")
        C.register_log_alpha(self, alpha_init, fixed=fixed_alpha)
        self.fixed_alpha = fixed_alpha
        self.min_log_alpha = -math.inf if min_alpha is None else math.log(min_alpha)
        self.max_log_alpha = math.inf if max_alpha is None else math.log(max_alpha)
        spec = getattr(actor_network, "spec", None)
        action_spec = None
        if spec is not None:
            try:
                action_spec = spec[self.tensor_keys.action_pred]
            except (KeyError, TypeError):
                action_spec = spec
        self.target_entropy = C.resolve_target_entropy(
            owner, target_entropy, C.continuous_entropy_target(action_spec)
        )
        self.samples_mc_entropy = int(samples_mc_entropy)
        self.reduction = C.check_reduction(owner, reduction)

    @property
    def alpha(self) -> torch.Tensor:
        """The current temperature ``exp(log_alpha)`` (clamped to the bounds), detached."""
        return self._log_alpha().detach().exp()

    def _log_alpha(self) -> torch.Tensor:
        return self.log_alpha.clamp(self.min_log_alpha, self.max_log_alpha)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return [*self._network_in_keys("actor_network"), self.tensor_keys.action_target]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_log_likelihood``, ``loss_entropy``, ``loss_alpha``, ``entropy``,
        ``log_likelihood`` and ``alpha``."""
        target = tensordict.get(self.tensor_keys.action_target).detach()
        if self.target_entropy is None:
            self.target_entropy = -float(target.shape[tensordict.batch_dims :].numel())
        with self.use_network("actor_network") as net:
            dist = C.actor_dist(net, tensordict)
        batch_dims = tensordict.batch_dims
        log_likelihood = _sum_to_batch(dist.log_prob(target), batch_dims)
        _, sample_log_prob = C.sample_with_log_prob(dist, batch_dims, (self.samples_mc_entropy,))
        entropy = -sample_log_prob.mean(0)
        log_alpha = self._log_alpha()
        loss_alpha = log_alpha.exp() * (entropy.detach() - self.target_entropy)
        return TensorDict(
            loss_log_likelihood=C.reduce(-log_likelihood, self.reduction),
            loss_entropy=C.reduce(-log_alpha.detach().exp() * entropy, self.reduction),
            loss_alpha=C.reduce(loss_alpha, self.reduction),
            entropy=entropy.detach().mean(),
            log_likelihood=log_likelihood.detach().mean(),
            alpha=log_alpha.detach().exp(),
        )
