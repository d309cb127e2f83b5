"""The shared core of the soft actor-critic family (private).

:class:`QEnsembleLossBase` holds what SAC, discrete SAC, CrossQ, REDQ, CQL and IQL set up alike:
a probabilistic actor, an ensemble of Q critics (one module, or a list, see
:class:`~rl_objectives.losses._ensemble.QValueEnsemble`) whose targets bootstrap through the
TD(0) estimator by default, and the keys they read; :class:`SoftQLossBase` adds the entropy
temperature ``alpha = exp(log_alpha)`` (all but IQL). Each loss keeps its own ``forward``, its own extra networks and
options, and the docstring that says what it computes.

The losses list ``BootstrappedTargets``, ``DetachedParamsCache`` and ``LossModule`` again
after the base (the MRO is unchanged: the base derives from them) and annotate the
attributes the base sets, so that the recorded public API of each loss stays as it was.
"""

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
from rl_objectives.losses._ensemble import QValueEnsemble
from rl_objectives.utils import ValueEstimators, distance_loss

__all__: list[str] = []


@dataclass
class _TransitionKeys:
    """The keys every loss of the family reads (the transition) or writes (the priority);
    each loss's ``_AcceptedKeys`` adds those of its critics."""

    action: NestedKey = K.ACTION
    priority: NestedKey = "td_error"
    reward: NestedKey = K.REWARD
    done: NestedKey = K.DONE
    terminated: NestedKey = K.TERMINATED


class QEnsembleLossBase(C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """A probabilistic actor and a Q ensemble bootstrapped through TD(0) (IQL uses it as is).

    The arguments below mean the same in every loss of the family; each loss's docstring
    lists what it adds or computes differently and its defaults.

    Args:
        actor_network: a probabilistic actor (``get_dist``), e.g. a ``ProbabilisticActor``
            with ``TanhNormal``.
        qvalue_network: a Q module reading ``observation`` and ``action`` and writing
            ``state_action_value``: the first of ``num_qvalue_nets`` critics (the others are
            re-initialised copies), or a list of ``num_qvalue_nets`` such modules, used as
            they are.

    Keyword Args:
        num_qvalue_nets: the number of critics.
        loss_function: the critic distance, ``"l2"``, ``"l1"`` or ``"smooth_l1"``.
        delay_actor: sample the next action ``a'`` from a target copy of the actor.
        delay_qvalue: bootstrap from target copies of the critics (updated by a
            ``SoftUpdate``/``HardUpdate``); otherwise from the online critics.
        gamma: the discount of the default TD(0) estimator; ``make_value_estimator`` picks
            TD(1) or TD(lambda) instead. Defaults to 0.99.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.
        separate_losses: parameters a critic shares with the actor (a common trunk) are
            trained by the actor loss only: the critic terms see them detached.

    Every loss writes the priority ``td_error``: the largest absolute gap between a critic's
    prediction and the target, over the critics (averaged over any trailing dims).

    A subclass's ``__init__`` sets its ``delay_*`` flags, calls
    :meth:`_init_actor_and_critics`, sets up what is its own, and ends with
    :meth:`_init_estimator`.
    """

    @dataclass
    class _AcceptedKeys(_TransitionKeys):
        state_action_value: NestedKey = K.STATE_ACTION_VALUE

    num_qvalue_nets: int
    loss_function: str  # set by _init_estimator, with the next two
    gamma: float | None
    reduction: str
    # target copies: a loss sets the flags it takes before _init_actor_and_critics
    delay_actor = False
    delay_qvalue = False
    default_value_estimator = ValueEstimators.TD0
    #: the ``_AcceptedKeys`` field naming the entry the critics write
    _q_value_field = "state_action_value"

    def _init_actor_and_critics(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module | list[nn.Module],
        num_qvalue_nets: int,
        *,
        q_out_key: NestedKey = K.STATE_ACTION_VALUE,
    ) -> None:
        """Converts the actor and the critic ensemble, with target copies where
        ``self.delay_actor`` / ``self.delay_qvalue`` ask for them."""
        owner = type(self).__name__
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                f"{owner}: actor_network must be a probabilistic actor with get_dist(), got "
                f"{type(actor_network).__name__}."
            )
        self.num_qvalue_nets = num_qvalue_nets
        delay_actor, delay_qvalue = self.delay_actor, self.delay_qvalue
        self.convert_to_functional(actor_network, "actor_network", create_target_params=delay_actor)
        ensemble = QValueEnsemble(qvalue_network, num_qvalue_nets, q_out_key, owner=owner)
        self.convert_to_functional(ensemble, "qvalue_network", create_target_params=delay_qvalue)

    def _init_estimator(
        self, *, loss_function: str, gamma: float | None, reduction: str | None
    ) -> None:
        """The distance, the reduction and the default (TD(0)) value estimator."""
        owner = type(self).__name__
        self.loss_function = C.check_loss_function(owner, loss_function)
        self.gamma = gamma
        self.reduction = C.check_reduction(owner, reduction)
        self.make_value_estimator(**({} if gamma is None else {"gamma": gamma}))

    def _forward_value_estimator_keys(self, **kwargs: NestedKey) -> None:
        C.forward_estimator_keys(self, kwargs)
        if self._q_value_field in kwargs:
            self.qvalue_network.out_key = kwargs[self._q_value_field]

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        """The actor's and the critics' inputs, at the root and under ``"next"`` (the target
        samples ``a'`` from the actor and scores it with the critics); IQL and SAC v1 read
        the next state through their value network instead and override this."""
        networks = ("actor_network", "qvalue_network")
        return C.bootstrap_in_keys(self, tensordict, root=networks, following=networks)

    def _q(self, td: TensorDictBase, params: TensorDictBase) -> torch.Tensor:
        """Every critic's output on ``td`` with ``params`` (stacked on a leading dim)."""
        with self.use_network("qvalue_network", params=params) as net:
            return net(td)

    def _bootstrap_params(self, name: str) -> TensorDictBase:
        """The parameters ``name`` bootstraps with: its target copy when the loss's
        ``delay_*`` flag says so (``delay_actor`` for ``"actor_network"``, ...)."""
        delayed = getattr(self, f"delay_{name.removesuffix('_network')}", False)
        return getattr(self, f"target_{name}_params" if delayed else f"{name}_params")

    def _sample(
        self, td: TensorDictBase, params: TensorDictBase | None = None, sample_shape: tuple = ()
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action of the actor (online parameters by default) on ``td`` and
        its log-prob, summed to ``[*sample_shape, *B]``."""
        with self.use_network("actor_network", params=params) as net:
            dist = C.actor_dist(net, td)
        return C.sample_with_log_prob(dist, td.batch_dims, sample_shape)

    def _write_priority(
        self, tensordict: TensorDictBase, pred: torch.Tensor, target: torch.Tensor
    ) -> None:
        """Writes ``td_error``: ``max_i |pred_i - target|`` over the critics ``[N, *B, ...]``,
        averaged down to the batch shape."""
        with torch.no_grad():
            td_error = (pred - target).abs().amax(0)
            batch_dims = tensordict.batch_dims
            while td_error.dim() > batch_dims:
                td_error = td_error.mean(-1)
            tensordict.set(self.tensor_keys.priority, td_error)

    def _critic_loss(
        self, tensordict: TensorDictBase, pred: torch.Tensor, target: torch.Tensor
    ) -> torch.Tensor:
        """``sum_i d(Q_i, y)`` per sample for the critics' predictions ``[N, *B, ...]``, with
        ``d`` the loss's distance; writes the priority (:meth:`_write_priority`) too."""
        self._write_priority(tensordict, pred, target)
        return distance_loss(pred, target.expand_as(pred), self.loss_function).sum(0)

    def _losses(self, **terms: torch.Tensor) -> TensorDictBase:
        """The output TensorDict: each ``loss_*`` term reduced with ``self.reduction``, the
        other entries (``alpha``, ``entropy``, ...) as given."""
        reduction = self.reduction
        return TensorDict(
            {k: C.reduce(v, reduction) if k.startswith("loss_") else v for k, v in terms.items()}
        )


class SoftQLossBase(QEnsembleLossBase):
    """:class:`QEnsembleLossBase` with the entropy temperature ``alpha = exp(log_alpha)``
    (SAC, discrete SAC, CrossQ, REDQ, CQL, TQC); :meth:`_init_temperature` sets it up.

    Keyword Args:
        alpha_init: the initial temperature (> 0).
        min_alpha: lower clamp of alpha; max_alpha: upper clamp (SAC and TQC).
        fixed_alpha: keep alpha constant (``log_alpha`` is then a buffer, and ``loss_alpha``
            has no gradient).
        action_spec: the action spec, for ``target_entropy="auto"`` (minus the number of
            action dims); without it, they are read from the first sampled action.
        target_entropy: a float or ``"auto"``.

    Unless a loss says otherwise, ``loss_alpha = -mean(log_alpha * (log_pi(a | s) +
    target_entropy))`` with ``a ~ pi(s)``, and the output also holds ``alpha`` (detached)
    and ``entropy`` (``-mean log_pi(a | s)``).
    """

    log_alpha: torch.Tensor  # log of the entropy temperature: a parameter, a buffer when fixed
    fixed_alpha: bool  # set by _init_temperature, with target_entropy
    target_entropy: float | None
    # no clamp unless _init_temperature is given bounds
    min_log_alpha = -math.inf
    max_log_alpha = math.inf

    def _init_temperature(
        self, alpha_init: float, *, fixed: bool, target: float | str, auto: float | None
    ) -> None:
        """``log_alpha`` (a parameter, a buffer when ``fixed``) and the entropy ``target``
        (``"auto"`` resolves to ``auto``; ``None`` leaves it to the first action seen)."""
        owner = type(self).__name__
        if alpha_init <= 0:
            raise ValueError(f"{owner}: expected alpha_init > 0, got {alpha_init}.")
        C.register_log_alpha(self, alpha_init, fixed=fixed)
        self.fixed_alpha = fixed
        self.target_entropy = C.resolve_target_entropy(owner, target, auto)

    def _init_alpha_bounds(self, min_alpha: float | None, max_alpha: float | None) -> None:
        """Clamps alpha to ``[min_alpha, max_alpha]`` (``None``: no bound on that side)."""
        if min_alpha is not None:
            self.min_log_alpha = math.log(min_alpha)
        if max_alpha is not None:
            self.max_log_alpha = math.log(max_alpha)

    @property
    def alpha(self) -> torch.Tensor:
        """The current temperature ``exp(log_alpha)`` (clamped to the bounds), detached."""
        return self._log_alpha().detach().exp()

    def _policy_sample(
        self, tensordict: TensorDictBase, params: TensorDictBase | None = None
    ) -> tuple[TensorDictBase, torch.Tensor]:
        """``a ~ pi(s)``, reparameterised (online parameters by default), written into a
        shallow copy of ``tensordict``, and ``log_pi(a | s)``. Resolves an ``"auto"``
        entropy target left open (no action spec) from this first action."""
        action, log_prob = self._sample(tensordict, params)
        self._resolve_target_entropy(action, tensordict.batch_dims)
        return tensordict.copy().set(self.tensor_keys.action, action), log_prob

    def _resolve_target_entropy(self, action: torch.Tensor, batch_dims: int) -> float:
        """The entropy target; ``"auto"`` without an action spec is resolved here, once, to
        minus the number of dims of ``action`` past the batch."""
        if self.target_entropy is None:
            self.target_entropy = -float(math.prod(action.shape[batch_dims:]))
        return self.target_entropy

    def _loss_alpha(self, log_prob: torch.Tensor) -> torch.Tensor:
        """``-log_alpha * (log_pi(a | s) + target_entropy)``, the log-prob held fixed."""
        return -self._log_alpha() * (log_prob.detach() + self.target_entropy)

    def _soft_losses(
        self,
        loss_actor: torch.Tensor,
        loss_qvalue: torch.Tensor,
        log_prob: torch.Tensor,
        alpha: torch.Tensor,
        **extra: torch.Tensor,
    ) -> TensorDictBase:
        """The output of SAC and its variants: ``extra`` terms first, then ``loss_actor``,
        ``loss_qvalue``, ``loss_alpha`` (:meth:`_loss_alpha`), ``alpha`` and ``entropy``
        (``-mean log_pi(a | s)``)."""
        return self._losses(
            **extra,
            loss_actor=loss_actor,
            loss_qvalue=loss_qvalue,
            loss_alpha=self._loss_alpha(log_prob),
            alpha=alpha,
            entropy=-log_prob.detach().mean(),
        )

    def _log_alpha(self) -> torch.Tensor:
        """``log_alpha`` clamped to the bounds (no clamp op when there are none)."""
        if self.min_log_alpha == -math.inf and self.max_log_alpha == math.inf:
            return self.log_alpha
        return self.log_alpha.clamp(self.min_log_alpha, self.max_log_alpha)
