"""Random Network Distillation's predictor loss: :class:`RNDLoss`.

Burda et al., "Exploration by Random Network Distillation" (2018,
https://arxiv.org/abs/1810.12894). The predictor is regressed on the embedding that a fixed,
randomly initialised target network gives the same (next) observation; its error on an
observation is the intrinsic reward rl-envs' ``RNDTransform`` writes while collecting, so
training it here makes familiar observations less rewarding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_core.keys import NEXT, NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C

__all__ = ["RNDLoss"]


class RNDLoss(LossModule):
    """The predictor's mean squared error against the frozen random target.

    With ``o`` the observation at ``observation`` (``("next", "observation")``, cast to
    float), standardised and clipped as the transform does when ``obs_rms`` is given
    (``clip(obs_rms.normalize(o), -obs_clip, obs_clip)``):
    ``l_i = mean_features((predictor(o_i) - sg(target(o_i)))**2)`` per sample. As in the
    paper, each sample enters the loss with probability ``update_fraction`` (a random mask,
    so that the predictor does not outlearn the policy on large batches): ``"mean"`` averages
    ``l`` over the kept samples (0 when none is kept), ``"sum"`` sums them, ``"none"``
    returns ``l`` with the dropped samples at 0.

    Args:
        predictor_network: the trained network (the one given to ``RNDTransform``).
        target_network: the random network (the same object as the transform's); its
            parameters are frozen here.

    Keyword Args:
        obs_rms: running observation statistics with ``normalize(x)``, e.g. the transform's
            ``obs_rms`` (a ``RunningMeanStd``). Defaults to None (raw observations).
        obs_clip: the clip of standardised observations, > 0. Defaults to 5.0.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.
        update_fraction: probability of each sample entering the loss, in ``[0, 1]``.
            Defaults to 0.25 (the paper's share).

    Raises:
        TypeError: a network is not an ``nn.Module``, or ``obs_rms`` has no ``normalize``.
        ValueError: ``update_fraction`` outside ``[0, 1]``, ``obs_clip`` <= 0, an unknown
            ``reduction``; (when called) outputs of different shapes.
        KeyError: (when called) no observation at ``observation``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives import RNDLoss
        >>> predictor, target = torch.nn.Linear(4, 8), torch.nn.Linear(4, 8)
        >>> loss = RNDLoss(predictor, target, update_fraction=1.0)
        >>> td = TensorDict({"next": {"observation": torch.randn(32, 4)}}, batch_size=[32])
        >>> out = loss(td)
        >>> out["loss_predictor"].backward()
        >>> out["loss_predictor"].shape, target.weight.grad is None
        (torch.Size([]), True)
    """

    @dataclass
    class _AcceptedKeys:
        """``observation``: the observation whose embedding is predicted."""

        observation: NestedKey = (NEXT, "observation")

    out_keys: ClassVar[list[str]] = ["loss_predictor"]

    def __init__(
        self,
        predictor_network: nn.Module,
        target_network: nn.Module,
        *,
        obs_rms: Any = None,
        obs_clip: float = 5.0,
        reduction: str | None = None,
        update_fraction: float = 0.25,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        for name, network in (
            ("predictor_network", predictor_network),
            ("target_network", target_network),
        ):
            if not isinstance(network, nn.Module):
                raise TypeError(
                    f"{owner}: expected {name} as a torch.nn.Module, got {type(network).__name__}."
                )
        if obs_rms is not None and not callable(getattr(obs_rms, "normalize", None)):
            raise TypeError(
                f"{owner}: expected obs_rms with a normalize(x) method (e.g. RNDTransform's "
                f"obs_rms, a RunningMeanStd), got {type(obs_rms).__name__}."
            )
        if (
            isinstance(update_fraction, bool)
            or not isinstance(update_fraction, (int, float))
            or not 0.0 <= update_fraction <= 1.0
        ):
            raise ValueError(
                f"{owner}: expected update_fraction in [0, 1] (the share of each batch the "
                f"predictor learns from), got {update_fraction!r}."
            )
        if (
            isinstance(obs_clip, bool)
            or not isinstance(obs_clip, (int, float))
            or not (math.isfinite(obs_clip) and obs_clip > 0)
        ):
            raise ValueError(
                f"{owner}: expected obs_clip as a finite number > 0, got {obs_clip!r}."
            )
        self.reduction = C.check_reduction(owner, reduction)
        self.predictor_network = predictor_network
        self.target_network = target_network.requires_grad_(False)
        self.obs_rms = obs_rms
        self.obs_clip = float(obs_clip)
        self.update_fraction = float(update_fraction)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return [self.tensor_keys.observation]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_predictor``."""
        key = self.tensor_keys.observation
        obs = tensordict.get(key, None)
        if obs is None:
            raise KeyError(
                f"RNDLoss: expected the observation at {key!r}; the batch holds "
                f"{sorted(map(str, tensordict.keys(include_nested=True, leaves_only=True)))}. "
                f"Rename it with set_keys(observation=...)."
            )
        obs = obs if obs.is_floating_point() else obs.float()
        if self.obs_rms is not None:
            obs = self.obs_rms.normalize(obs).clamp(-self.obs_clip, self.obs_clip)
        with torch.no_grad():
            target = self.target_network(obs)
        prediction = self.predictor_network(obs)
        if prediction.shape != target.shape:
            raise ValueError(
                f"RNDLoss: expected the predictor's output shaped like the target's "
                f"{tuple(target.shape)}, got {tuple(prediction.shape)}."
            )
        error = (prediction - target).square().mean(-1)
        if self.update_fraction < 1.0:
            keep = torch.rand(error.shape, device=error.device) < self.update_fraction
            error = torch.where(keep, error, torch.zeros_like(error))
            if self.reduction == "mean":
                loss = error.sum() / keep.sum().clamp_min(1)
                return TensorDict(loss_predictor=loss)
        return TensorDict(loss_predictor=C.reduce(error, self.reduction))
