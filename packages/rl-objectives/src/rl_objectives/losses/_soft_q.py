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
from tensordict import TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses._ensemble import QValueEnsemble
from rl_objectives.utils import ValueEstimators

__all__: list[str] = []


class QEnsembleLossBase(C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """A probabilistic actor and a Q ensemble bootstrapped through TD(0) (IQL uses it as is).

    A subclass's ``__init__`` calls :meth:`_init_actor_and_critics`, sets up what is its
    own, and ends with :meth:`_init_estimator`.
    """

    @dataclass
    class _AcceptedKeys:
        action: NestedKey = K.ACTION
        state_action_value: NestedKey = K.STATE_ACTION_VALUE
        priority: NestedKey = "td_error"
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    default_value_estimator = ValueEstimators.TD0
    #: the ``_AcceptedKeys`` field naming the entry the critics write
    _q_value_field = "state_action_value"

    def _init_actor_and_critics(
        self,
        actor_network: nn.Module,
        qvalue_network: nn.Module | list[nn.Module],
        *,
        num_qvalue_nets: int,
        q_out_key: NestedKey = K.STATE_ACTION_VALUE,
        delay_actor: bool = False,
        delay_qvalue: bool = False,
        separate_losses: bool | None = None,
    ) -> str:
        """Converts the actor and the critic ensemble; returns the loss's name for errors."""
        owner = type(self).__name__
        if separate_losses is not None:
            self.separate_losses = bool(separate_losses)
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                f"{owner}: actor_network must be a probabilistic actor with get_dist(), got "
                f"{type(actor_network).__name__}."
            )
        self.convert_to_functional(actor_network, "actor_network", create_target_params=delay_actor)
        ensemble = QValueEnsemble(qvalue_network, num_qvalue_nets, q_out_key, owner=owner)
        self.convert_to_functional(ensemble, "qvalue_network", create_target_params=delay_qvalue)
        return owner

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


class SoftQLossBase(QEnsembleLossBase):
    """:class:`QEnsembleLossBase` with the entropy temperature ``alpha = exp(log_alpha)``
    (SAC, discrete SAC, CrossQ, REDQ, CQL); :meth:`_init_temperature` sets it up."""

    log_alpha: torch.Tensor  # log of the entropy temperature: a parameter, a buffer when fixed
    # no clamp unless _init_temperature is given bounds
    min_log_alpha = -math.inf
    max_log_alpha = math.inf

    def _init_temperature(
        self,
        alpha_init: float,
        *,
        fixed_alpha: bool,
        target_entropy: float | str,
        auto_target_entropy: float | None,
        min_alpha: float | None = None,
        max_alpha: float | None = None,
    ) -> None:
        """``log_alpha`` (a parameter, a buffer with ``fixed_alpha``), its optional bounds and
        the entropy target (``"auto"`` resolves to ``auto_target_entropy``)."""
        owner = type(self).__name__
        if alpha_init <= 0:
            raise ValueError(f"{owner}: expected alpha_init > 0, got {alpha_init}.")
        C.register_log_alpha(self, alpha_init, fixed=fixed_alpha)
        self.fixed_alpha = fixed_alpha
        if min_alpha is not None:
            self.min_log_alpha = math.log(min_alpha)
        if max_alpha is not None:
            self.max_log_alpha = math.log(max_alpha)
        self.target_entropy = C.resolve_target_entropy(owner, target_entropy, auto_target_entropy)

    @property
    def alpha(self) -> torch.Tensor:
        """The current temperature ``exp(log_alpha)`` (clamped to the bounds), detached."""
        return self._log_alpha().detach().exp()

    def _log_alpha(self) -> torch.Tensor:
        """``log_alpha`` clamped to the bounds (no clamp op when there are none)."""
        if self.min_log_alpha == -math.inf and self.max_log_alpha == math.inf:
            return self.log_alpha
        return self.log_alpha.clamp(self.min_log_alpha, self.max_log_alpha)
