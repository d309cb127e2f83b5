"""The ProbabilisticActor node's draws from distributions it knows, without building them.

Building a ``torch.distributions`` object validates its arguments (a few reductions per
constraint, a device synchronisation each) and sets up its parts; drawing from it then goes
through a few layers of methods. For a small policy that costs more than the network. A
*draw* here gives exactly what the node's generic path gives (``dist = head.get_dist(td)``,
``dist.rsample()``, ``dist.log_prob(sample)``): the same sample and log-probability, the same
dtype and shape, from the same random calls in the same order (so the global RNG state after
the call is the same). It returns ``None`` before drawing anything wherever it could not be
sure of that, and the node then takes the generic path, which also raises the generic errors:

* argument validation (``validate_args``, or torch's default) is replaced by a check that is
  cheaper and *sufficient*: when it passes, the generic checks pass; when it fails, the
  generic path runs and raises its own error (or passes, where the check is stricter);
* a reparameterised sample is drawn only where its gradient could matter: under
  ``torch.no_grad()`` (the collectors) or for parameters that do not require grad, the
  straight-through sample of ``OneHotCategorical`` is the hard sample itself (the added
  ``probs - probs.detach()`` is exactly zero), so the hard sample is returned.

Known, as the head's ``distribution_class`` exactly (subclasses take the generic path):

* rl_core's :class:`~rl_core.modules.distributions.OneHotCategorical` with ``logits`` (not
  ``probs``), float32 or float64, keyword arguments among ``grad_method`` (``PassThrough``
  or ``None``), ``temperature`` and ``validate_args``;
* rl_core's :class:`~rl_core.modules.distributions.TanhNormal` with ``loc`` and ``scale`` of
  one shape, dtype (float32 or float64) and device, Python-number bounds ``low < high``, and
  the other keyword arguments (``event_dims``, ``tanh_loc``, ``upscale``, ``safe_tanh``,
  ``validate_args``) as plain values; under ``no_grad`` or for parameters without grad.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Real
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import distributions as D
from torch.distributions.utils import _standard_normal, _sum_rightmost
from torch.nn import functional as F

from rl_core._accel.fast_td import get_leaf
from rl_core._accel.policy_classes import PolicyClasses
from rl_core.keys import key_path

# (sample, log-prob or None), or None: take the generic path.
Draw = Callable[[TensorDictBase, bool], "tuple[torch.Tensor, torch.Tensor | None] | None"]

_FLOATS = (torch.float32, torch.float64)


def _dist_kwargs(head: Any) -> dict[str, Any] | None:
    """The head's ``{distribution keyword: tensordict path}``, or ``None`` if unusual."""
    names = []
    for dist_key in head.dist_keys:
        name = dist_key[-1] if isinstance(dist_key, tuple) else dist_key
        if not isinstance(name, str):
            return None
        names.append(name)
    if len(set(names)) != len(names) or len(names) != len(head.in_keys):
        return None
    return {name: key_path(key) for name, key in zip(names, head.in_keys, strict=True)}


class _OneHotCategoricalDraw:
    """``OneHotCategorical(logits=...)``: ``rsample()`` (or ``sample()``) and ``log_prob``.

    The generic path builds ``Categorical(logits)`` inside the distribution (the logits
    normalised: ``logits - logits.logsumexp(-1)``), validates the normalised logits
    (``real_vector``: no NaN) and, for ``OneHotCategorical`` itself, ``probs =
    softmax(normalised)`` (``simplex``: every entry ``>= 0`` and ``|sum - 1| < 1e-6`` per row)
    and the logits again. The check here is the ``simplex`` sum test alone, with the same
    tensor expression: a row whose normalised logits hold a NaN has a NaN in the softmax's
    denominator, so a NaN sum, and fails it; a row without NaN has a finite maximum (the
    normalisation turns ``+inf`` and all ``-inf`` rows into NaN), so its softmax entries are
    ``exp(x - max) / sum >= 0``. The draw is the one of ``OneHotCategorical.sample``
    (``Categorical.sample``: one ``multinomial`` draw per row of ``probs``; then ``one_hot``),
    written out here on the tensors instead of through the two distribution objects, and the
    log-probability is the normalised logit of the drawn index (what ``log_prob`` reads for a
    one-hot value).
    """

    __slots__ = ("hard", "logits", "validate_args", "validating")

    def __init__(
        self,
        logits: tuple[str, ...],
        validate_args: bool | None,
        hard: bool,
        validating: Callable[[bool | None], bool],
    ) -> None:
        self.logits, self.validate_args, self.hard = logits, validate_args, hard
        self.validating = validating

    def __call__(
        self, tensordict: TensorDictBase, with_log_prob: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None] | None:
        logits = get_leaf(tensordict, self.logits, None)
        if (
            type(logits) is not torch.Tensor
            or logits.dtype not in _FLOATS
            or logits.dim() < 1
            or logits.numel() == 0
        ):
            return None
        # The straight-through sample carries a gradient: the generic rsample then.
        if not self.hard and logits.requires_grad and torch.is_grad_enabled():
            return None
        # Categorical(logits=...): the normalised logits, their softmax (its ``probs``).
        normalised = logits - logits.logsumexp(dim=-1, keepdim=True)
        probs = F.softmax(normalised, dim=-1)
        if (self.validating(self.validate_args) or D.Distribution._validate_args) and not bool(
            ((probs.sum(-1) - 1).abs() < 1e-6).all()
        ):
            return None
        # Categorical.sample(()): one multinomial draw per row, in the batch's shape.
        events = normalised.shape[-1]
        index = torch.multinomial(probs.reshape(-1, events), 1, True).T
        index = index.reshape(normalised.shape[:-1])
        sample = F.one_hot(index, events).to(probs)
        if not with_log_prob:
            return sample, None
        return sample, normalised.gather(-1, index.unsqueeze(-1)).squeeze(-1)


def _one_hot_categorical(head: Any, classes: PolicyClasses) -> Draw | None:
    keys = _dist_kwargs(head)
    options = dict(head.distribution_kwargs)
    if (
        keys is None
        or set(keys) != {"logits"}
        or not set(options)
        <= {
            "grad_method",
            "temperature",
            "validate_args",
        }
    ):
        return None
    strategy = classes.reparam_strategy
    grad_method = options.get("grad_method", strategy.PassThrough)
    if grad_method is not None:
        try:
            grad_method = strategy(grad_method)
        except ValueError:
            return None
        if grad_method is not strategy.PassThrough:
            return None
    validate_args = options.get("validate_args")
    if validate_args not in (None, True, False):
        return None
    return _OneHotCategoricalDraw(
        keys["logits"], validate_args, hard=grad_method is None, validating=classes.validating
    )


_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))  # as torch's Normal.log_prob writes it


class _TanhNormalDraw:
    """``TanhNormal(loc, scale, low, high, ...)``: ``rsample()`` or ``rsample_and_log_prob()``.

    The generic path validates ``loc`` (``real``: no NaN) and ``scale`` (``positive``), and
    when it scores the draw, the pre-tanh draw ``x`` (``real``); the check here asks for
    ``loc + scale`` finite and ``scale > 0``: then ``loc`` and ``scale`` are finite, so ``x =
    loc + eps * scale`` holds no NaN. The draw is ``Normal.rsample`` (``_standard_normal``,
    ``loc + eps * scale``) through the distribution's own two transforms (``tanh``, clamped
    when ``safe_tanh``, then the affine map onto ``[low, high]``, with the bounds as the
    distribution makes them), and the score is ``TanhNormal._score``: the Gaussian's
    log-density summed over the event, less each transform's log-determinant.
    """

    __slots__ = (
        "affine_log_dets",
        "clamped_tanh",
        "event_dims",
        "high",
        "loc",
        "low",
        "safe_tanh",
        "scale",
        "tanh_loc",
        "transforms",
        "upscale",
        "validate_args",
        "validating",
    )

    def __init__(
        self, keys: dict[str, tuple[str, ...]], options: dict[str, Any], classes: PolicyClasses
    ) -> None:
        self.validating, self.clamped_tanh = classes.validating, classes.clamped_tanh
        self.loc, self.scale = keys["loc"], keys["scale"]
        self.low, self.high = options.get("low", -1.0), options.get("high", 1.0)
        self.event_dims = options.get("event_dims", 1)
        self.tanh_loc = options.get("tanh_loc", False)
        self.upscale = options.get("upscale", 5.0)
        self.safe_tanh = options.get("safe_tanh", True)
        self.validate_args = options.get("validate_args")
        # (dtype, device) -> the transforms TanhNormal builds, for their pure methods.
        self.transforms: dict[tuple[torch.dtype, torch.device], tuple[Any, Any]] = {}
        # (dtype, device, shape) -> the affine map's log-determinant summed over the event: a
        # constant of the bounds and the shape, computed once by the transform itself.
        self.affine_log_dets: dict[tuple[torch.dtype, torch.device, torch.Size], Any] = {}

    def _transforms(self, like: torch.Tensor) -> tuple[Any, Any]:
        key = (like.dtype, like.device)
        found = self.transforms.get(key)
        if found is None:
            low = torch.as_tensor(self.low, dtype=like.dtype, device=like.device)
            high = torch.as_tensor(self.high, dtype=like.dtype, device=like.device)
            found = (
                self.clamped_tanh(clamp=self.safe_tanh),
                D.AffineTransform((high + low) / 2, (high - low) / 2, cache_size=1),
            )
            self.transforms[key] = found
        return found

    def __call__(
        self, tensordict: TensorDictBase, with_log_prob: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None] | None:
        loc = get_leaf(tensordict, self.loc, None)
        scale = get_leaf(tensordict, self.scale, None)
        if (
            type(loc) is not torch.Tensor
            or type(scale) is not torch.Tensor
            or loc.dtype not in _FLOATS
            or scale.dtype != loc.dtype
            or scale.shape != loc.shape
            or scale.device != loc.device
            or self.event_dims > loc.dim()
            or (torch.is_grad_enabled() and (loc.requires_grad or scale.requires_grad))
        ):
            return None
        if self.tanh_loc:
            loc = self.upscale * torch.tanh(loc / self.upscale)
        if self.validating(self.validate_args) and not bool(
            (torch.isfinite(loc + scale) & (scale > 0)).all()
        ):
            return None
        squash, affine = self._transforms(loc)
        eps = _standard_normal(loc.shape, dtype=loc.dtype, device=loc.device)
        x = loc + eps * scale
        squashed = squash._call(x)
        sample = affine._call(squashed)
        if not with_log_prob:
            return sample, None
        log_prob = -((x - loc) ** 2) / (2 * scale**2) - scale.log() - _LOG_SQRT_2PI
        log_prob = _sum_rightmost(log_prob, self.event_dims)
        log_prob = log_prob - self._summed(squash.log_abs_det_jacobian(x, squashed), sample)
        key = (sample.dtype, sample.device, sample.shape)
        affine_log_det = self.affine_log_dets.get(key)
        if affine_log_det is None:
            affine_log_det = self._summed(affine.log_abs_det_jacobian(squashed, sample), sample)
            self.affine_log_dets[key] = affine_log_det
        return sample, log_prob - affine_log_det

    def _summed(self, log_det: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        # TanhNormal._score: broadcast to the sample, summed over the event dims.
        log_det = log_det.expand(like.shape)
        if self.event_dims:
            log_det = log_det.sum(tuple(range(-self.event_dims, 0)))
        return log_det


def _tanh_normal(head: Any, classes: PolicyClasses) -> Draw | None:
    keys = _dist_kwargs(head)
    options = dict(head.distribution_kwargs)
    if (
        keys is None
        or set(keys) != {"loc", "scale"}
        or not set(options)
        <= {
            "low",
            "high",
            "event_dims",
            "tanh_loc",
            "upscale",
            "safe_tanh",
            "validate_args",
        }
    ):
        return None
    low, high = options.get("low", -1.0), options.get("high", 1.0)
    event_dims = options.get("event_dims", 1)
    if (
        not isinstance(low, Real)
        or not isinstance(high, Real)
        or isinstance(low, bool)
        or isinstance(high, bool)
        or not low < high
        or type(event_dims) is not int
        or event_dims < 0
        or type(options.get("tanh_loc", False)) is not bool
        or type(options.get("safe_tanh", True)) is not bool
        or type(options.get("upscale", 5.0)) not in (int, float)
        or options.get("validate_args") not in (None, True, False)
    ):
        return None
    return _TanhNormalDraw(keys, options, classes)


def draw_for(head: Any, classes: PolicyClasses) -> Draw | None:
    """The draw of ``head``'s distribution if this module knows it (exactly rl_core's
    ``OneHotCategorical`` or ``TanhNormal``, from ``classes``), else ``None``."""
    kind = head.distribution_class
    if kind is classes.one_hot_categorical:
        return _one_hot_categorical(head, classes)
    if kind is classes.tanh_normal:
        return _tanh_normal(head, classes)
    return None
