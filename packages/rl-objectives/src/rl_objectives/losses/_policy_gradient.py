"""Shared machinery of the on-policy actor-critic losses (private)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives import _log_prob as L
from rl_objectives.losses import _common as C
from rl_objectives.utils import ValueEstimators, distance_loss
from rl_objectives.value.base import BoundNetwork

__all__: list[str] = []


class _PolicyGradientLoss(C.EstimatorChoice, C.DetachedParamsCache, LossModule):
    """Shared machinery of the on-policy losses (PPO family, A2C); see :class:`PPOLoss`."""

    _scores_actions = True  # log-probs of the batch's actions: see LossModule

    @dataclass
    class _AcceptedKeys:
        advantage: NestedKey = K.ADVANTAGE
        value_target: NestedKey = K.VALUE_TARGET
        value: NestedKey = K.STATE_VALUE
        sample_log_prob: L.LogProbKeys = K.SAMPLE_LOG_PROB
        action: L.LogProbKeys = K.ACTION
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    default_value_estimator = ValueEstimators.GAE

    def __init__(
        self,
        actor_network: torch.nn.Module,
        critic_network: torch.nn.Module | None = None,
        *,
        entropy_bonus: bool = True,
        samples_mc_entropy: int = 1,
        entropy_coeff: float | None = 0.01,
        critic_coeff: float | None = 1.0,
        loss_critic_type: str = "smooth_l1",
        normalize_advantage: bool = False,
        gamma: float | None = None,
        clip_value: float | None = None,
        reduction: str | None = None,
        separate_losses: bool = False,
        functional: bool = True,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        if not hasattr(actor_network, "get_dist"):
            raise TypeError(
                f"{owner}: actor_network must be a probabilistic actor with get_dist() "
                f"(e.g. ProbabilisticActor), got {type(actor_network).__name__}."
            )
        self.functional = bool(functional)
        self.separate_losses = bool(separate_losses)
        self.device = C.loss_device(owner, device, actor_network)
        self.convert_to_functional(actor_network, "actor_network", functional=self.functional)
        self._key_lists = False
        self._keys_from_actor(actor_network)
        self.has_critic = critic_network is not None
        if critic_network is not None:
            self.convert_to_functional(critic_network, "critic_network", functional=self.functional)
        self.entropy_bonus = entropy_bonus
        self.samples_mc_entropy = samples_mc_entropy
        # None means the default, as in TorchRL (whose signatures default to None)
        self.entropy_coeff = 0.01 if entropy_coeff is None else entropy_coeff
        self.critic_coeff = 1.0 if critic_coeff is None else critic_coeff
        self.loss_critic_type = C.check_loss_function(owner, loss_critic_type)
        self.normalize_advantage = normalize_advantage
        self.gamma = gamma
        if isinstance(clip_value, bool):
            raise ValueError(
                f"{owner}: clip_value must be a float or a scalar tensor, got {clip_value}. "
                f"(ClipPPOLoss alone reads True as its clip_epsilon.)"
            )
        self.clip_value = None if clip_value is None else float(clip_value)
        self.reduction = C.check_reduction(owner, reduction)
        if self.has_critic:
            self.make_value_estimator(**({} if gamma is None else {"gamma": gamma}))

    # Keys.

    def _keys_from_actor(self, actor: torch.nn.Module) -> None:
        """Reads the action and log-prob keys off a tensordict probabilistic actor, as
        TorchRL does: one key each for one action, a list each for several heads."""
        log_prob_keys = list(getattr(actor, "log_prob_keys", None) or [])
        action_keys = list(getattr(actor, "dist_sample_keys", None) or [])
        if not log_prob_keys or len(log_prob_keys) != len(action_keys):
            return
        if len(log_prob_keys) == 1:
            self.tensor_keys.sample_log_prob = log_prob_keys[0]
            self.tensor_keys.action = action_keys[0]
        else:
            self.tensor_keys.sample_log_prob = log_prob_keys
            self.tensor_keys.action = action_keys
        self._key_lists_set()

    def _key_lists_set(self) -> None:
        """Follows the keys given as lists (several action heads). LossModule's per-call
        action-shape check reads one action entry: with several heads each distribution
        checks its own, so that check is off."""
        self._key_lists = any(
            isinstance(getattr(self.tensor_keys, name), list)
            for name in ("sample_log_prob", "action")
        )
        self._scores_actions = not isinstance(self.tensor_keys.action, list)

    def _require_inputs(self, td: TensorDictBase) -> None:
        """Raises a ``KeyError`` naming the first entry of the batch that the loss reads and
        does not find (done here when keys are lists, which LossModule's diagnosis of a
        failed call does not read)."""
        written = [
            k if isinstance(k, tuple) else (k,)
            for k in getattr(self.__dict__["actor_network"], "out_keys", None) or []
        ]
        for key in self._in_keys(td):
            if td.get(key, None) is not None:
                continue
            parts = key if isinstance(key, tuple) else (key,)
            # a parent of what the actor writes itself (a composite actor's "params")
            if not any(len(w) > len(parts) and w[: len(parts)] == parts for w in written):
                raise KeyError(
                    f"{type(self).__name__}: the batch has no entry {key!r}, which this loss "
                    f"reads (rename it with set_keys(...)). The loss reads {self.in_keys}."
                )

    def set_keys(self, **kwargs: Any) -> Self:
        """Renames the entries the loss reads or writes (see ``LossModule.set_keys``).

        ``sample_log_prob`` and ``action`` also take a list of keys, one per action head of
        a composite action (``tensordict.nn.CompositeDistribution``): the log-probabilities
        stored at the ``sample_log_prob`` keys are added, as are the current policy's.

        Raises:
            KeyError: a name is not one of the loss's keys.
            TypeError: a value is not a key (or, for those two, a non-empty list of keys).
        """
        owner = type(self).__name__
        lists = {
            name: L.check_key_list(owner, name, kwargs.pop(name))
            for name in ("sample_log_prob", "action")
            if isinstance(kwargs.get(name), list)
        }
        super().set_keys(**kwargs)
        for name, keys in lists.items():
            setattr(self.tensor_keys, name, keys)
        if lists:
            self._forward_value_estimator_keys(**lists)
        self._key_lists_set()
        return self

    # Value estimation.

    def _make_value_estimator(self, value_type: Any, **hyperparams: Any) -> Any:
        return C.build_estimator(
            self,
            value_type,
            hyperparams,
            BoundNetwork(self, "critic_network") if self.has_critic else None,
            actor_network=BoundNetwork(self, "actor_network"),
        )

    def _forward_value_estimator_keys(self, **kwargs: NestedKey) -> None:
        C.forward_estimator_keys(self, kwargs)

    def _advantage(self, td: TensorDictBase) -> Tensor:
        keys = self.tensor_keys
        if self._key_lists:
            self._require_inputs(td)
        advantage = td.get(keys.advantage, None)
        if advantage is None:
            if not self.has_critic:
                raise KeyError(
                    f"{type(self).__name__}: the data has no {keys.advantage!r} entry and the "
                    f"loss has no critic to compute it. Run a value estimator first."
                )
            params = self._detached("critic_network")
            self.value_estimator(td, params=params, target_params=params)
            advantage = td.get(keys.advantage)
        if self.normalize_advantage and advantage.numel() > 1:
            advantage = (advantage - advantage.mean()) / advantage.std().clamp_min(1e-6)
        return advantage

    # Inputs.

    #: whether the objective reads the behaviour log-probabilities (not A2C's)
    _reads_sample_log_prob = True

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        keys = self.tensor_keys
        out = [*self._network_in_keys("actor_network"), *L.key_list(keys.action)]
        if self._reads_sample_log_prob:
            out += L.key_list(keys.sample_log_prob)
        if not self.has_critic:
            return [*out, keys.advantage]
        given = tensordict is not None and tensordict.get(keys.advantage, None) is not None
        out += self._network_in_keys("critic_network")
        if tensordict is None or given:
            out += [keys.advantage, keys.value_target]
        if tensordict is None or not given:  # the estimator computes the advantage
            out += self._network_in_keys("critic_network", under=K.NEXT)
            out += [C.under_next(k) for k in (keys.reward, keys.done, keys.terminated)]
        if tensordict is None or self.clip_value is not None:
            out.append(keys.value)
        return out

    # Terms.

    def _log_weight(self, td: TensorDictBase, like: Tensor) -> tuple[Tensor, Tensor, Any]:
        """``(log_pi - log_pi_old, log_pi_old, dist)``, shaped like ``like`` minus features."""
        ndim = C.batch_ndim(like)
        prev = L.read_log_prob(type(self).__name__, td, self.tensor_keys.sample_log_prob, ndim)
        prev = prev.detach()
        dist = C.get_dist(self, "actor_network", td)
        log_prob = self._action_log_prob(dist, td, like)
        return log_prob - prev, prev, dist

    def _action_log_prob(self, dist: Any, td: TensorDictBase, like: Tensor) -> Tensor:
        """``log_pi(a | s)`` of the data's action (all heads added), shaped like ``like``
        minus features.

        Raises:
            RuntimeError: a stored action requires grad (the score function would send
                gradient into the data), as TorchRL.
        """
        for key in L.key_list(self.tensor_keys.action):
            action = td.get(key, None)
            if isinstance(action, Tensor) and action.requires_grad:
                raise RuntimeError(
                    f"{type(self).__name__}: tensordict stored action requires grad (entry "
                    f"{key!r}); store detached actions (collectors do)."
                )
        return L.action_log_prob(dist, td, self.tensor_keys.action, C.batch_ndim(like))

    def _log_probs(self, tensordict: TensorDictBase) -> tuple[Tensor, Any]:
        """``(log_pi(a | s), pi(. | s))`` of the batch's actions under the current actor,
        the log-prob summed over the action's heads to the batch shape (TorchRL's helper of
        the same name)."""
        dist = C.get_dist(self, "actor_network", tensordict.copy())
        like = torch.empty(*tensordict.batch_size, 1)
        return self._action_log_prob(dist, tensordict, like), dist

    def _entropy_terms(self, dist: Any, like: Tensor, out: dict[str, Tensor]) -> None:
        if not self.entropy_bonus:
            return
        entropy = C.aggregate_log_prob(C.entropy_of(dist, self.samples_mc_entropy), like)
        out["entropy"] = entropy.detach().mean()
        out["loss_entropy"] = -self.entropy_coeff * C.reduce(entropy, self.reduction)

    def _critic_terms(self, td: TensorDictBase, out: dict[str, Tensor]) -> None:
        if not self.has_critic:
            return
        target, value, old_value = self._critic_values(td)
        error = self._critic_error(target, value, old_value, out)
        out["loss_critic"] = self.critic_coeff * C.reduce(error, self.reduction)

    def _critic_values(self, td: TensorDictBase) -> tuple[Tensor, Tensor, Tensor | None]:
        """The value target, the critic's value now, and the old value (``None`` if absent)."""
        keys = self.tensor_keys
        target = td.get(keys.value_target, None)
        if target is None:
            raise KeyError(
                f"{type(self).__name__}: expected the value target at {keys.value_target!r}."
            )
        old_value = td.get(keys.value, None)
        with self.use_network(
            "critic_network", params=self._critic_params("critic_network")
        ) as net:
            value = net(td.copy()).get(keys.value)
        return target, value, old_value

    def _critic_error(
        self, target: Tensor, value: Tensor, old_value: Tensor | None, out: dict[str, Tensor]
    ) -> Tensor:
        """The critic's error per element, clipped around the old value with ``clip_value``."""
        error = distance_loss(target, value, self.loss_critic_type)
        if self.clip_value is not None:
            if old_value is None:
                raise KeyError(
                    f"{type(self).__name__}: clip_value needs the old values at "
                    f"{self.tensor_keys.value!r}."
                )
            clipped = old_value + (value - old_value).clamp(-self.clip_value, self.clip_value)
            clipped_error = distance_loss(target, clipped, self.loss_critic_type)
            out["value_clip_fraction"] = (clipped_error > error).float().mean()
            error = torch.maximum(error, clipped_error)
        return error

    def _objective(self, log_weight: Tensor, advantage: Tensor, out: dict[str, Tensor]) -> Tensor:
        return -(log_weight.exp() * advantage)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_objective``, ``kl_approx`` (the mean of ``log_pi_old - log_pi``
        over the batch, a sample estimate of ``KL(pi_old || pi)``, as TorchRL logs it) and,
        when enabled, ``loss_entropy``/``entropy`` and ``loss_critic`` (plus subclass
        diagnostics)."""
        td = tensordict.copy()
        if self.clip_value is not None and self.tensor_keys.value not in td.keys(True):
            raise KeyError(
                f"{type(self).__name__}: clip_value is set to {self.clip_value}, but the key "
                f"{self.tensor_keys.value} was not found in the input tensordict. Make sure that "
                f"the value key passed to PPO exists in the input tensordict (the old values "
                f"the clipped critic loss is measured from; rename it with set_keys(value=...))."
            )
        advantage = self._advantage(td)
        log_weight, _, dist = self._log_weight(td, advantage)
        out: dict[str, Tensor] = {}
        objective = self._objective(log_weight, C.squeeze_feature(advantage), out)
        out["loss_objective"] = C.reduce(objective, self.reduction)
        out["kl_approx"] = _kl_approx(log_weight)
        self._entropy_terms(dist, advantage, out)
        self._critic_terms(td, out)
        return TensorDict(out)


def _kl_approx(log_weight: Tensor) -> Tensor:
    """``mean(log_pi_old - log_pi)``, detached: TorchRL's ``kl_approx`` diagnostic."""
    return (-log_weight).detach().mean()
