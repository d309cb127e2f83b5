"""DreamerV3's losses: :class:`DreamerV3ModelLoss`, :class:`DreamerV3ActorLoss`,
:class:`DreamerV3ValueLoss`, and the categorical KL terms of its world model.

Hafner et al., "Mastering Diverse Domains through World Models" (DreamerV3,
https://arxiv.org/abs/2301.04104). Where they differ from Dreamer (V1, ``dreamer.py``):

- the latents are categorical (``RSSMPriorV3``/``RSSMPosteriorV3`` write logits
  ``[*B, num_categoricals, num_classes]``); the KL is *balanced* (the prior is trained towards
  the stopped posterior more than the posterior towards the stopped prior) and clamped below
  by ``free_bits``;
- observations are reconstructed in ``symlog`` space;
- reward (and value) heads are categorical over ``symexp`` bins, trained by two-hot
  cross-entropy (``rl_objectives.modules.two_hot_cross_entropy``);
- the actor divides the lambda-returns by ``max(min_scale, P95 - P5)`` of their moving
  percentiles (:class:`~rl_objectives.value.PercentileValueNorm`) and adds an entropy bonus.

As TorchRL's, each ``forward`` returns ``(losses, tensordict)``. Every loss term here is a
scalar (TorchRL's model terms have shape ``[1]``), as in this package's Dreamer (V1) losses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor, nn
from torch.nn import functional as F

from rl_core.keys import NEXT, NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.losses.dreamer import (
    _check_weight,
    _discounts,
    _ImaginationActorLoss,
    _ImaginedValueLoss,
    _refuse_non_finite,
)
from rl_objectives.modules.dreamer_v3_utils import SymExpTwoHot, symlog, two_hot_cross_entropy
from rl_objectives.value.value_norm import PercentileValueNorm

__all__ = [
    "DreamerV3ModelLoss",
    "DreamerV3ActorLoss",
    "DreamerV3ValueLoss",
    "categorical_kl_balanced",
    "categorical_kl_terms",
]


def _check_logits(where: str, posterior_logits: Tensor, prior_logits: Tensor) -> None:
    if posterior_logits.shape != prior_logits.shape or posterior_logits.ndim < 2:
        raise ValueError(
            f"{where}: expected posterior and prior logits of one shape [..., num_categoricals, "
            f"num_classes], got {tuple(posterior_logits.shape)} and {tuple(prior_logits.shape)}."
        )


def categorical_kl_balanced(
    posterior_logits: Tensor,
    prior_logits: Tensor,
    alpha: float = 0.8,
    free_bits: float = 1.0,
) -> Tensor:
    """DreamerV3's balanced KL of categorical latents, each categorical clamped at ``free_bits``.

    With ``q = softmax(posterior_logits)`` and ``p = softmax(prior_logits)`` (both clamped
    below at 1e-8) and ``KL_c`` the KL of categorical ``c``:
    ``alpha * mean(max(KL_c(sg(q) || p), free_bits)) + (1 - alpha) *
    mean(max(KL_c(q || sg(p)), free_bits))``, means over the batch and the categoricals; the
    first term trains the prior only, the second the posterior only.

    Args:
        posterior_logits: ``[*B, num_categoricals, num_classes]``.
        prior_logits: the same shape.
        alpha: weight of the prior's term. Defaults to 0.8.
        free_bits: lower clamp of each categorical's KL (nats). Defaults to 1.0.

    Returns:
        A scalar.

    Raises:
        ValueError: the logits' shapes differ or have no categorical dims.

    Examples:
        >>> import torch
        >>> from rl_objectives import categorical_kl_balanced
        >>> q, p = torch.zeros(4, 2, 3), torch.zeros(4, 2, 3)
        >>> categorical_kl_balanced(q, p, free_bits=0.0).item()  # equal distributions
        0.0
        >>> categorical_kl_balanced(q, p).item()  # clamped at one nat
        1.0
    """
    _check_logits("categorical_kl_balanced", posterior_logits, prior_logits)
    q = torch.softmax(posterior_logits, -1).clamp_min(1e-8)
    p = torch.softmax(prior_logits, -1).clamp_min(1e-8)
    q_sg, p_sg = q.detach(), p.detach()
    kl_prior = (q_sg * (q_sg.log() - p.log())).sum(-1)
    kl_post = (q * (q.log() - p_sg.log())).sum(-1)
    return (
        alpha * kl_prior.clamp_min(free_bits).mean()
        + (1 - alpha) * kl_post.clamp_min(free_bits).mean()
    )


def categorical_kl_terms(
    posterior_logits: Tensor,
    prior_logits: Tensor,
    free_nats: float = 1.0,
    unimix: float = 0.01,
) -> tuple[Tensor, Tensor]:
    """DreamerV3's dynamics and representation KL terms (the paper's ``L_dyn`` and ``L_rep``).

    With ``q``, ``p`` the posterior and prior probabilities mixed with ``unimix`` of the uniform
    (``(1 - unimix) * softmax + unimix / num_classes``), and the KL summed over the
    categoricals: ``dynamics = mean(max(KL(sg(q) || p), free_nats))`` (trains the prior),
    ``representation = mean(max(KL(q || sg(p)), free_nats))`` (trains the posterior).

    Args:
        posterior_logits: ``[*B, num_categoricals, num_classes]``.
        prior_logits: the same shape.
        free_nats: lower clamp of the summed KL. Defaults to 1.0.
        unimix: share of the uniform distribution. Defaults to 0.01.

    Returns:
        ``(dynamics, representation)``, scalars.

    Raises:
        ValueError: the logits' shapes differ, or ``unimix`` is outside ``[0, 1)``.

    Examples:
        >>> import torch
        >>> from rl_objectives import categorical_kl_terms
        >>> dyn, rep = categorical_kl_terms(torch.randn(4, 2, 3), torch.randn(4, 2, 3))
        >>> dyn.shape, bool(dyn >= 1.0), bool(torch.isclose(dyn, rep))
        (torch.Size([]), True, True)
    """
    _check_logits("categorical_kl_terms", posterior_logits, prior_logits)
    if not 0.0 <= unimix < 1.0:
        raise ValueError(f"categorical_kl_terms: expected unimix in [0, 1), got {unimix!r}.")

    def probs(logits: Tensor) -> Tensor:
        return (1 - unimix) * torch.softmax(logits, -1) + unimix / logits.shape[-1]

    q, p = probs(posterior_logits), probs(prior_logits)
    log_q, log_p = q.log(), p.log()
    dynamics = (q.detach() * (log_q.detach() - log_p)).sum((-2, -1))
    representation = (q * (log_q - log_p.detach())).sum((-2, -1))
    if free_nats:
        dynamics = dynamics.clamp_min(free_nats)
        representation = representation.clamp_min(free_nats)
    return dynamics.mean(), representation.mean()


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


class DreamerV3ModelLoss(LossModule):
    """DreamerV3's world-model loss: categorical KL, symlog reconstruction, two-hot reward.

    ``world_model`` runs on a copy of the batch in which ``("next", reward)`` is renamed
    ``("next", true_reward)``; it writes (under ``"next"``) ``prior_logits``,
    ``posterior_logits``, the reconstructions ``reco_pixels`` and the reward prediction
    (``reward_logits`` over ``num_reward_bins`` symexp bins with ``reward_two_hot``, else the
    value at ``reward``). With ``B`` the batch dims (``[batch, time]``):

    - ``kl_mode="balanced"``: ``loss_model_kl = lambda_kl *`` :func:`categorical_kl_balanced`
      ``(alpha=kl_alpha, free_bits=free_bits)``; ``kl_mode="separate"``:
      ``loss_model_dynamic = lambda_kl * lambda_dynamic * dyn`` and
      ``loss_model_representation = lambda_kl * lambda_representation * rep`` with
      :func:`categorical_kl_terms` ``(free_nats=free_bits, unimix=unimix)``;
    - ``loss_model_reco = lambda_reco * sum_heads mean_B(sum_features d(f(obs), f(reco)))``,
      ``f = symlog`` where ``reco_symlog`` (else integer pixels are scaled by 1/255), ``d``
      the squared (``"l2"``) or absolute (``"l1"``) error; ``global_average`` averages over the
      features instead of summing them;
    - ``loss_model_reward = lambda_reward * mean_B(two_hot_cross_entropy(reward_logits,
      true_reward))``, or ``mean_B((symlog(true_reward) - symlog(reward))**2)``;
    - with ``lambda_continue > 0`` and ``continue_pred`` (logits) and ``terminated`` (or
      ``done``) present: ``loss_model_continue = lambda_continue * BCE(continue_pred,
      continue_target_scale * (1 - terminated))``.

    Args:
        world_model: a TensorDict module (encoder, ``RSSMRollout`` of ``RSSMPriorV3`` and
            ``RSSMPosteriorV3``, decoder, reward head).

    Keyword Args:
        lambda_kl: weight of the KL terms. Defaults to 1.0.
        lambda_reco: weight of the reconstruction. Defaults to 1.0.
        lambda_reward: weight of the reward. Defaults to 1.0.
        lambda_continue: weight of the continuation. Defaults to 0.0 (off).
        kl_mode: ``"balanced"`` or ``"separate"``. Defaults to ``"balanced"``.
        lambda_dynamic: weight of the dynamics KL (``"separate"``). Defaults to 1.0.
        lambda_representation: weight of the representation KL (``"separate"``). Defaults to
            0.1.
        unimix: uniform share of the ``"separate"`` KL's probabilities. Defaults to 0.0.
        continue_target_scale: the continuation target of a live step, in ``(0, 1]``.
            Defaults to 1.0.
        kl_alpha: ``alpha`` of the balanced KL. Defaults to 0.8.
        free_bits: the KL's lower clamp. Defaults to 1.0.
        reco_loss: ``"l2"`` or ``"l1"``. Defaults to ``"l2"``.
        reco_symlog: reconstruct in symlog space (one bool, or one per observation key).
            Defaults to True.
        reward_two_hot: categorical reward head. Defaults to True.
        num_reward_bins: bins of the reward head. Defaults to 255.
        global_average: average over the features instead of summing them. Defaults to False.
        detach_output: return the world model's output detached. Defaults to True.

    Raises:
        ValueError: an unknown ``kl_mode`` or ``reco_loss``, ``continue_target_scale`` outside
            ``(0, 1]``, a weight or ``free_bits`` that is not a finite number >= 0,
            ``kl_alpha`` outside ``[0, 1]``; (when called) mismatched observation/
            reconstruction keys, reward logits of the wrong width, true rewards not shaped
            like the logits' steps, or a NaN or infinite loss term (the message names the
            first input or world-model output holding a NaN or infinite value; eager calls
            only).
        TypeError: ``reco_symlog`` is not a bool or a list of bools.
        KeyError: ``reward_two_hot`` and no ``reward_logits`` written by the world model.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives import DreamerV3ModelLoss
        >>> class Toy(torch.nn.Module):  # stands in for the encoder/RSSM/decoder/reward heads
        ...     def forward(self, obs):
        ...         logits = torch.zeros(*obs.shape[:-1], 2, 4)
        ...         return logits, logits, obs, torch.zeros(*obs.shape[:-1], 255)
        >>> model = TensorDictModule(Toy(), [("next", "pixels")], [("next", k) for k in (
        ...     "prior_logits", "posterior_logits", "reco_pixels", "reward_logits")])
        >>> td = TensorDict(next=TensorDict(pixels=torch.zeros(4, 5, 3),
        ...                                 reward=torch.zeros(4, 5, 1)), batch_size=[4, 5])
        >>> losses, _ = DreamerV3ModelLoss(model)(td)
        >>> sorted(losses.keys()), round(losses["loss_model_reward"].item(), 4)  # log(255)
        (['loss_model_kl', 'loss_model_reco', 'loss_model_reward'], 5.5413)
    """

    @dataclass
    class _AcceptedKeys:
        """Keys read under ``"next"``: ``reward`` (renamed ``true_reward`` before the model
        runs), ``reward_logits``, ``prior_logits``, ``posterior_logits``, the observations
        ``pixels`` and their reconstructions ``reco_pixels`` (a key or a list of keys),
        ``continue_pred``, ``done`` and ``terminated``."""

        reward: NestedKey = "reward"
        reward_logits: NestedKey = "reward_logits"
        true_reward: NestedKey = "true_reward"
        prior_logits: NestedKey = "prior_logits"
        posterior_logits: NestedKey = "posterior_logits"
        pixels: NestedKey | list[NestedKey] = "pixels"
        reco_pixels: NestedKey | list[NestedKey] = "reco_pixels"
        continue_pred: NestedKey = "continue_pred"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"

    def __init__(
        self,
        world_model: nn.Module,
        *,
        lambda_kl: float = 1.0,
        lambda_reco: float = 1.0,
        lambda_reward: float = 1.0,
        lambda_continue: float = 0.0,
        kl_mode: str = "balanced",
        lambda_dynamic: float = 1.0,
        lambda_representation: float = 0.1,
        unimix: float = 0.0,
        continue_target_scale: float = 1.0,
        kl_alpha: float = 0.8,
        free_bits: float = 1.0,
        reco_loss: str = "l2",
        reco_symlog: bool | list[bool] = True,
        reward_two_hot: bool = True,
        num_reward_bins: int = 255,
        global_average: bool = False,
        detach_output: bool = True,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        if kl_mode not in ("balanced", "separate"):
            raise ValueError(f"{owner}: kl_mode must be 'balanced' or 'separate', got {kl_mode!r}.")
        if reco_loss not in ("l2", "l1"):
            raise ValueError(f"{owner}: reco_loss must be 'l2' or 'l1', got {reco_loss!r}.")
        if not 0.0 < continue_target_scale <= 1.0:
            raise ValueError(
                f"{owner}: expected continue_target_scale in (0, 1], got {continue_target_scale}."
            )
        if not 0.0 <= unimix < 1.0:
            raise ValueError(f"{owner}: expected unimix in [0, 1), got {unimix!r}.")
        for name, value in (
            ("lambda_kl", lambda_kl),
            ("lambda_reco", lambda_reco),
            ("lambda_reward", lambda_reward),
            ("lambda_continue", lambda_continue),
            ("lambda_dynamic", lambda_dynamic),
            ("lambda_representation", lambda_representation),
            ("free_bits", free_bits),
        ):
            _check_weight(owner, name, value)
        _check_weight(owner, "kl_alpha", kl_alpha, at_most=1.0)
        flags = reco_symlog if isinstance(reco_symlog, list) else [reco_symlog]
        if not flags or not all(isinstance(flag, bool) for flag in flags):
            raise TypeError(
                f"{owner}: expected reco_symlog as a bool or a non-empty list of bools (one per "
                f"pixels key), got {reco_symlog!r}."
            )
        self.convert_to_functional(world_model, "world_model", functional=False)
        self.lambda_kl = lambda_kl
        self.lambda_reco = lambda_reco
        self.lambda_reward = lambda_reward
        self.lambda_continue = lambda_continue
        self.kl_mode = kl_mode
        self.lambda_dynamic = lambda_dynamic
        self.lambda_representation = lambda_representation
        self.unimix = unimix
        self.continue_target_scale = continue_target_scale
        self.kl_alpha = kl_alpha
        self.free_bits = free_bits
        self.reco_loss = reco_loss
        self.reco_symlog = reco_symlog
        self.reward_two_hot = reward_two_hot
        self.num_reward_bins = num_reward_bins
        self.global_average = global_average
        self.detach_output = detach_output
        self.register_buffer("reward_bins", SymExpTwoHot(num_reward_bins).bins)

    def set_keys(self, **kwargs: Any) -> DreamerV3ModelLoss:
        """As ``LossModule.set_keys``; ``pixels`` and ``reco_pixels`` also take a list of keys
        (one reconstruction head each, in order).

        Raises:
            TypeError: an empty list, or a list with an entry that is not a key.
        """
        lists = {}
        for name in ("pixels", "reco_pixels"):
            value = kwargs.get(name)
            if isinstance(value, list):
                if not value or not all(isinstance(k, (str, tuple)) and k for k in value):
                    raise TypeError(
                        f"{type(self).__name__}.set_keys: {name} must be a key or a non-empty "
                        f"list of keys, got {value!r}."
                    )
                lists[name] = kwargs.pop(name)
        super().set_keys(**kwargs)
        for name, value in lists.items():
            setattr(self.tensor_keys, name, value)
        return self

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return [
            (NEXT, self.tensor_keys.reward),
            *((NEXT, k) for k in _as_list(self.tensor_keys.pixels)),
        ]

    def _reconstruction(self, nxt: TensorDictBase, batch_dims: int) -> Tensor:
        keys = self.tensor_keys
        obs_keys, reco_keys = _as_list(keys.pixels), _as_list(keys.reco_pixels)
        symlogs = (
            [self.reco_symlog] * len(obs_keys)
            if isinstance(self.reco_symlog, bool)
            else list(self.reco_symlog)
        )
        if not obs_keys or not len(obs_keys) == len(reco_keys) == len(symlogs):
            raise ValueError(
                f"{type(self).__name__}: expected as many pixels keys, reco_pixels keys and "
                f"reco_symlog flags (at least one), got {obs_keys}, {reco_keys} and {symlogs}."
            )
        total = None
        for obs_key, reco_key, use_symlog in zip(obs_keys, reco_keys, symlogs):
            target, prediction = nxt.get(obs_key), nxt.get(reco_key)
            if use_symlog:
                target, prediction = symlog(target), symlog(prediction)
            elif not target.is_floating_point():
                target = target.to(prediction.dtype) / 255.0
            error = target - prediction
            error = error.pow(2) if self.reco_loss == "l2" else error.abs()
            if not self.global_average:
                error = error.flatten(batch_dims).sum(-1)
            term = error.mean()
            total = term if total is None else total + term
        return total

    def forward(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        keys = self.tensor_keys
        batch_dims = tensordict.batch_dims
        tensordict = tensordict.copy()
        nxt = tensordict.get(NEXT).copy()
        nxt.rename_key_(keys.reward, keys.true_reward)
        tensordict.set(NEXT, nxt)
        tensordict = self.world_model(tensordict)
        nxt = tensordict.get(NEXT)
        posterior_logits, prior_logits = nxt.get(keys.posterior_logits), nxt.get(keys.prior_logits)
        losses = TensorDict()
        if self.kl_mode == "separate":
            dyn, rep = categorical_kl_terms(
                posterior_logits, prior_logits, free_nats=self.free_bits, unimix=self.unimix
            )
            losses.set("loss_model_dynamic", self.lambda_kl * self.lambda_dynamic * dyn)
            losses.set("loss_model_representation",
                       self.lambda_kl * self.lambda_representation * rep)  # fmt: skip
        else:
            kl = categorical_kl_balanced(
                posterior_logits, prior_logits, alpha=self.kl_alpha, free_bits=self.free_bits
            )
            losses.set("loss_model_kl", self.lambda_kl * kl)
        losses.set("loss_model_reco", self.lambda_reco * self._reconstruction(nxt, batch_dims))
        true_reward = nxt.get(keys.true_reward)
        if self.reward_two_hot:
            logits = nxt.get(keys.reward_logits, None)
            if logits is None:
                raise KeyError(
                    f"{type(self).__name__}: reward_two_hot=True reads the reward head's logits "
                    f"at ('next', {keys.reward_logits!r}), which the world model did not write. "
                    f"Write them there, or build the loss with reward_two_hot=False."
                )
            if logits.shape[-1] != self.num_reward_bins:
                raise ValueError(
                    f"{type(self).__name__}: expected reward logits over {self.num_reward_bins} "
                    f"bins (num_reward_bins), got shape {tuple(logits.shape)}."
                )
            if true_reward.shape not in (logits.shape[:-1], (*logits.shape[:-1], 1)):
                raise ValueError(
                    f"{type(self).__name__}: expected the batch's ('next', {keys.reward!r}) of "
                    f"shape {(*logits.shape[:-1], 1)} (one reward per step of the reward logits "
                    f"{tuple(logits.shape)}), got {tuple(true_reward.shape)}."
                )
            reward = two_hot_cross_entropy(logits, true_reward, self.reward_bins)
        else:
            prediction = nxt.get(keys.reward)
            reward = (symlog(true_reward) - symlog(prediction)).pow(2)
        losses.set("loss_model_reward", self.lambda_reward * reward.mean())
        if self.lambda_continue > 0:
            continue_pred = nxt.get(keys.continue_pred, None)
            terminated = nxt.get(keys.terminated, None)
            if terminated is None:
                terminated = nxt.get(keys.done, None)
            if continue_pred is not None and terminated is not None:
                target = (~terminated).to(continue_pred.dtype) * self.continue_target_scale
                bce = F.binary_cross_entropy_with_logits(
                    continue_pred, target.expand_as(continue_pred)
                )
                losses.set("loss_model_continue", self.lambda_continue * bce)
        _refuse_non_finite(type(self).__name__, losses, self._sources(nxt))
        return losses, tensordict.detach() if self.detach_output else tensordict

    def _sources(self, nxt: TensorDictBase) -> list[tuple[str, Tensor | None]]:
        """What a non-finite term may come from: the batch's observations and rewards, then
        the world model's logits, reconstructions and reward head."""
        keys = self.tensor_keys
        observed = [
            (f"the batch's ('next', {key!r})", nxt.get(key, None)) for key in _as_list(keys.pixels)
        ]
        written = [
            (f"the world model's ('next', {key!r})", nxt.get(key, None))
            for key in (
                keys.posterior_logits,
                keys.prior_logits,
                *_as_list(keys.reco_pixels),
                keys.reward_logits,
                keys.reward,
                keys.continue_pred,
            )
        ]
        reward = (f"the batch's ('next', {keys.reward!r})", nxt.get(keys.true_reward, None))
        return [*observed, reward, *written]


class DreamerV3ActorLoss(_ImaginationActorLoss):
    """DreamerV3's actor loss: normalised lambda-returns of imagined trajectories, plus entropy.

    As :class:`~rl_objectives.DreamerActorLoss`, ``model_based_env`` imagines
    ``imagination_horizon`` steps from the (detached, flattened) latents of the batch under
    ``actor_model`` (exploration RANDOM), ``value_model`` values the imagined next states and
    the value estimator (TD(lambda), ``gamma=0.99``, ``lmbda=0.95`` by default) gives the
    lambda-returns ``G``. With ``w_t = gamma**t`` (``discount_loss``; else 1) and ``S`` the
    return scale (``max(min_scale, high - low)`` of the moving ``quantiles`` of ``G``, updated
    in training mode before use; 1 without ``return_normalization``):

    - dynamics backpropagation (default): ``loss_actor = -mean(w_t G_t / S)``;
    - ``use_reinforce``: ``loss_actor = -mean(w_t log pi(sg(a_t) | sg(s_t)) sg(G_t - V(s_t)) / S)``;
    - minus ``entropy_bonus * mean(w_t H_t)``, ``H`` the policy's entropy (analytic where the
      distribution has one, else minus the log-probability of one reparameterised sample).

    The world model and the value network are held out (no gradient into their parameters).

    Args:
        actor_model: the policy (a ``ProbabilisticActor`` for ``use_reinforce`` or the bonus).
        value_model: writes ``value`` (the decoded value) from the latents.
        model_based_env: the imagination env (a ``DreamerEnv``).

    Keyword Args:
        imagination_horizon: imagined steps. Defaults to 15.
        discount_loss: weight step ``t`` by ``gamma**t``. Defaults to True.
        entropy_bonus: weight of the entropy. Defaults to 3e-4.
        use_reinforce: score-function gradient instead of dynamics backpropagation (for
            discrete actions). Defaults to False.
        return_normalization: divide by the percentile scale. Defaults to True.
        return_normalization_rate: step of the moving percentiles. Defaults to 0.01.
        return_normalization_quantiles: the low and high quantiles. Defaults to (0.05, 0.95).
        return_normalization_min_scale: floor of the scale. Defaults to 1.0.
        gamma: refused, as in TorchRL: set it with ``make_value_estimator(gamma=...)``.
        lmbda: refused, as in TorchRL: set it with ``make_value_estimator(lmbda=...)``.

    Raises:
        TypeError: ``gamma`` or ``lmbda`` given, ``model_based_env`` is not an env, or
            ``value_model`` is not a module.
        ValueError: ``imagination_horizon`` is not a positive int, ``entropy_bonus`` is not a
            finite number >= 0, or bad normalisation settings; (when called) a latent whose
            trailing dims are not the env's latent shape, or a NaN or infinite ``loss_actor``
            (naming the latent, imagined reward or lambda-return holding a NaN or infinite
            value; eager calls only).

    ``forward`` returns ``(losses, fake_data)``: ``loss_actor``, ``actor_entropy``,
    ``return_low``, ``return_high`` and ``return_scale`` (the last four detached), and the
    imagined trajectory (detached, ``[N, imagination_horizon]``) with ``"lambda_target"`` and
    ``discount_weight`` for :class:`DreamerV3ValueLoss`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.envs import EnvBase
        >>> from rl_core.specs import Bounded, Composite, Unbounded
        >>> from rl_objectives import DreamerV3ActorLoss
        >>> class Imagination(EnvBase):  # stands in for a DreamerEnv: state' = state + action
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.observation_spec = Composite(state=Unbounded(shape=(1,)),
        ...                                           belief=Unbounded(shape=(1,)))
        ...         self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        ...     def reset(self, tensordict=None, **kwargs):
        ...         return tensordict
        ...     def _reset(self, tensordict, **kwargs):
        ...         return tensordict
        ...     def _step(self, td):
        ...         state = td["state"] + td["action"]
        ...         return TensorDict(state=state, belief=td["belief"], reward=-state.pow(2),
        ...                           terminated=torch.zeros_like(state, dtype=torch.bool),
        ...                           batch_size=td.batch_size)
        ...     def _set_seed(self, seed):
        ...         pass
        >>> actor = TensorDictModule(torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.Tanh()),
        ...                          ["state"], ["action"])
        >>> value = TensorDictModule(torch.nn.Linear(1, 1), ["state"], ["state_value"])
        >>> loss = DreamerV3ActorLoss(actor, value, Imagination(), imagination_horizon=3,
        ...                           entropy_bonus=0.0)
        >>> td = TensorDict(state=torch.randn(2, 5, 1), belief=torch.randn(2, 5, 1), batch_size=[2, 5])
        >>> losses, fake_data = loss(td)
        >>> losses["loss_actor"].backward()
        >>> actor.module[0].weight.grad is not None, value.module.weight.grad is None
        (True, True)
        >>> fake_data["lambda_target"].shape, fake_data["discount_weight"].shape
        (torch.Size([10, 3, 1]), torch.Size([10, 3, 1]))
    """

    @dataclass
    class _AcceptedKeys:
        """``state`` and ``belief`` (the latents imagination starts from), and the imagined
        trajectory's ``reward``, ``value``, ``action``, ``done``, ``terminated`` and the
        ``discount_weight`` written for the value loss."""

        state: NestedKey = "state"
        belief: NestedKey = "belief"
        reward: NestedKey = "reward"
        value: NestedKey = "state_value"
        action: NestedKey = "action"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        discount_weight: NestedKey = "discount_weight"

    def __init__(
        self,
        actor_model: nn.Module,
        value_model: nn.Module,
        model_based_env: Any,
        *,
        imagination_horizon: int = 15,
        discount_loss: bool = True,
        entropy_bonus: float = 3e-4,
        use_reinforce: bool = False,
        return_normalization: bool = True,
        return_normalization_rate: float = 0.01,
        return_normalization_quantiles: tuple[float, float] = (0.05, 0.95),
        return_normalization_min_scale: float = 1.0,
        gamma: float | None = None,
        lmbda: float | None = None,
    ) -> None:
        super().__init__(
            actor_model,
            value_model,
            model_based_env,
            imagination_horizon=imagination_horizon,
            discount_loss=discount_loss,
            gamma=gamma,
            lmbda=lmbda,
        )
        _check_weight(type(self).__name__, "entropy_bonus", entropy_bonus)
        self.entropy_bonus = entropy_bonus
        self.use_reinforce = use_reinforce
        self.return_normalization = return_normalization
        self.retnorm = PercentileValueNorm(
            quantiles=return_normalization_quantiles,
            rate=return_normalization_rate,
            min_scale=return_normalization_min_scale,
        )
        self.make_value_estimator()

    @property
    def return_low(self) -> Tensor:
        """The moving low quantile of the returns (a 0-dim view)."""
        return self.retnorm.low.squeeze(-1)

    @property
    def return_high(self) -> Tensor:
        """The moving high quantile of the returns (a 0-dim view)."""
        return self.retnorm.high.squeeze(-1)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return [self.tensor_keys.state, self.tensor_keys.belief]

    def _return_scale(self, returns: Tensor) -> Tensor:
        if not self.return_normalization:
            return torch.ones((), dtype=returns.dtype, device=returns.device)
        if self.training:
            self.retnorm.update(returns)
        return self.retnorm.scale().squeeze(-1).to(returns.dtype)

    def forward(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        keys = self.tensor_keys
        fake_data, lambda_target = self._imagine(tensordict, keys.state, break_when_any_done=False)
        if self.discount_loss:
            discount = _discounts(self.value_estimator.gamma, lambda_target)
        else:
            discount = torch.ones_like(lambda_target)
        discount = discount.detach()
        fake_data.set(keys.discount_weight, discount)
        dist = None
        if self.use_reinforce or self.entropy_bonus > 0:
            in_keys = getattr(self.actor_model, "in_keys", [keys.state, keys.belief])
            dist = C.actor_dist(self.actor_model, fake_data.select(*in_keys).detach())
        sources = self._imagined_sources(tensordict, keys.state, fake_data)
        # before the moving percentiles see the returns: a NaN would stay in them for good
        _refuse_non_finite(type(self).__name__, {"lambda_target": lambda_target}, sources)
        scale = self._return_scale(lambda_target)
        if self.use_reinforce:
            log_prob = dist.log_prob(fake_data.get(keys.action).detach())
            log_prob = _match_trailing_dim(log_prob, lambda_target)
            with torch.no_grad():
                baseline = self.value_model(fake_data.select(*self.value_model.in_keys).copy())
            advantage = (lambda_target - baseline.get(keys.value)).detach() / scale
            actor_loss = -(discount * log_prob * advantage).mean()
        else:
            actor_loss = -(discount * lambda_target / scale).mean()
        if dist is not None and self.entropy_bonus > 0:
            entropy = _entropy(dist)
            entropy = (discount * _match_trailing_dim(entropy, discount)).mean()
            actor_loss = actor_loss - self.entropy_bonus * entropy
        else:
            entropy = actor_loss.new_zeros(())
        losses = TensorDict(
            loss_actor=actor_loss,
            actor_entropy=entropy.detach(),
            return_low=self.return_low.detach().clone(),
            return_high=self.return_high.detach().clone(),
            return_scale=scale.detach().clone(),
        )
        _refuse_non_finite(type(self).__name__, losses.select("loss_actor"), sources)
        return losses, fake_data.detach()


def _entropy(dist: Any) -> Tensor:
    try:
        return dist.entropy()
    except NotImplementedError:
        if hasattr(dist, "rsample_and_log_prob"):
            return -dist.rsample_and_log_prob()[1]
        return -dist.log_prob(dist.rsample())


def _match_trailing_dim(source: Tensor, reference: Tensor) -> Tensor:
    """``source`` with the dims of ``reference``: a missing trailing dim added, an extra one
    (per-dimension log-probabilities) summed."""
    if source.ndim == reference.ndim - 1:
        return source.unsqueeze(-1)
    if source.ndim == reference.ndim + 1:
        return source.sum(-1, keepdim=True)
    if source.ndim != reference.ndim:
        raise ValueError(
            f"DreamerV3ActorLoss: cannot align a policy term of shape {tuple(source.shape)} with "
            f"the returns of shape {tuple(reference.shape)}."
        )
    return source


class DreamerV3ValueLoss(_ImaginedValueLoss):
    """DreamerV3's value loss: the value of imagined states regressed on their lambda-returns.

    Over the imagined trajectory of :class:`DreamerV3ActorLoss` (``"lambda_target"`` ``G``,
    detached, ``[*B, T, 1]``): ``loss_value = reduce(w_t * l_t)`` with

    - ``value_loss="symlog_mse"``: ``l = (symlog(V) - symlog(G))**2``, ``V`` at ``value``;
    - ``value_loss="two_hot"``: ``l = two_hot_cross_entropy(value_logits, G)`` over
      ``num_value_bins`` symexp bins, the logits at ``value_logits``;

    ``w_t`` the trajectory's ``discount_weight`` when present, else ``gamma**t`` along the time
    dim with ``discount_loss``, else 1; ``reduce`` the ``reduction``.

    Args:
        value_model: writes ``value`` (and ``value_logits`` for ``"two_hot"``).
        value_loss: ``"symlog_mse"`` or ``"two_hot"``. Defaults to ``"symlog_mse"``.
        discount_loss: weight step ``t`` by ``gamma**t`` when the input has no
            ``discount_weight``. Defaults to True.
        gamma: that discount. Defaults to 0.99 (an ``actor_loss``'s estimator's wins).
        num_value_bins: bins of the value head. Defaults to 255.

    Keyword Args:
        actor_loss: a :class:`DreamerV3ActorLoss` whose value estimator's ``gamma`` is used.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.

    Raises:
        ValueError: an unknown ``value_loss`` or ``reduction``, ``gamma`` outside ``[0, 1]``;
            (when called) value logits of the wrong width, a value or value logits not shaped
            like ``"lambda_target"``, or a NaN or infinite loss (naming ``"lambda_target"`` or
            the value head's output; eager calls only).
        KeyError: ``value_loss="two_hot"`` and no ``value_logits`` written by ``value_model``.

    ``forward`` returns ``(losses, fake_data)``: ``loss_value`` and the input.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives import DreamerV3ValueLoss
        >>> value = TensorDictModule(torch.nn.Linear(4, 1), ["state"], ["state_value"])
        >>> fake = TensorDict(state=torch.randn(8, 3, 4), lambda_target=torch.randn(8, 3, 1),
        ...                   batch_size=[8, 3])
        >>> DreamerV3ValueLoss(value)(fake)[0]["loss_value"].shape
        torch.Size([])
    """

    @dataclass
    class _AcceptedKeys:
        """``value`` and ``value_logits`` (written by ``value_model``) and the trajectory's
        ``discount_weight``."""

        value: NestedKey = "state_value"
        value_logits: NestedKey = "state_value_logits"
        discount_weight: NestedKey = "discount_weight"

    def __init__(
        self,
        value_model: nn.Module,
        value_loss: str = "symlog_mse",
        discount_loss: bool = True,
        gamma: float = 0.99,
        num_value_bins: int = 255,
        *,
        actor_loss: DreamerV3ActorLoss | None = None,
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        if value_loss not in ("symlog_mse", "two_hot"):
            raise ValueError(
                f"{owner}: value_loss must be 'symlog_mse' or 'two_hot', got {value_loss!r}."
            )
        self.reduction = C.check_reduction(owner, reduction)
        _check_weight(owner, "gamma", gamma, at_most=1.0)
        self.convert_to_functional(value_model, "value_model", functional=False)
        self.value_loss = value_loss
        self.discount_loss = discount_loss
        self.gamma = gamma
        self.num_value_bins = num_value_bins
        self.__dict__["_actor_loss"] = actor_loss
        self.register_buffer("value_bins", SymExpTwoHot(num_value_bins).bins)

    def _gamma(self) -> Any:
        actor_loss = self.__dict__.get("_actor_loss")
        return self.gamma if actor_loss is None else actor_loss.value_estimator.gamma

    def forward(self, fake_data: TensorDictBase) -> tuple[TensorDictBase, TensorDictBase]:
        keys = self.tensor_keys
        target = fake_data.get("lambda_target").detach()
        out = self._value_output(fake_data)
        discount = fake_data.get(keys.discount_weight, None)
        if discount is None:
            if self.discount_loss and target.ndim >= 3:
                discount = _discounts(self._gamma(), target)
            else:
                discount = torch.ones_like(target)
        discount = discount.detach().squeeze(-1)
        target = target.squeeze(-1)
        if self.value_loss == "two_hot":
            logits = out.get(keys.value_logits, None)
            if logits is None:
                raise KeyError(
                    f"{type(self).__name__}: value_loss='two_hot' reads the value head's logits "
                    f"at {keys.value_logits!r}, which value_model did not write (it wrote "
                    f"{sorted(map(str, out.keys()))}). Write them there, rename the key with "
                    f"set_keys(value_logits=...), or use value_loss='symlog_mse'."
                )
            if logits.shape[:-1] != target.shape:
                raise ValueError(
                    f"{type(self).__name__}: expected 'lambda_target' of shape "
                    f"{(*logits.shape[:-1], 1)} (one return per step of the value logits "
                    f"{tuple(logits.shape)}), got {(*target.shape, 1)}."
                )
            if logits.shape[-1] != self.num_value_bins:
                raise ValueError(
                    f"{type(self).__name__}: expected value logits over {self.num_value_bins} "
                    f"bins (num_value_bins), got shape {tuple(logits.shape)}."
                )
            loss = two_hot_cross_entropy(logits, target, self.value_bins)
            prediction = logits
        else:
            value = out.get(keys.value)
            self._check_target(keys.value, value, fake_data.get("lambda_target"))
            prediction = value = value.squeeze(-1)
            loss = (symlog(value) - symlog(target)).pow(2)
        losses = TensorDict(loss_value=C.reduce(discount * loss, self.reduction))
        _refuse_non_finite(
            type(self).__name__,
            losses,
            [
                ("the batch's 'lambda_target'", target),
                ("value_model's output", prediction),
            ],
        )
        return losses, fake_data
