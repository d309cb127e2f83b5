"""Random Network Distillation's exploration bonus: :class:`RNDTransform` and the running
statistics it normalises with, :class:`RunningMeanStd`.

Burda et al., "Exploration by Random Network Distillation" (2018,
https://arxiv.org/abs/1810.12894): a fixed, randomly initialised *target* network ``f`` embeds
the next observation, a *predictor* ``f_hat`` is trained to match it (rl-objectives'
``RNDLoss``), and the prediction error ``||f_hat(o') - f(o')||^2`` (here averaged over the
embedding's features) is the intrinsic reward: high on observations seen rarely, falling as the
predictor learns them. Observations are standardised by their running mean and standard
deviation and clipped to ``[-obs_clip, obs_clip]`` before both networks; the reward is divided
by its own running standard deviation (so its scale does not drift as the predictor learns)
and clipped to ``[-reward_clip, reward_clip]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core import Composite, Transform, Unbounded
from rl_core.keys import NestedKey

__all__ = ["RNDTransform", "RunningMeanStd"]


class RunningMeanStd(nn.Module):
    """Running mean and (population) variance of a stream of batches.

    ``update(x)`` merges the batch's count ``n``, mean ``m`` and variance ``v`` (over all
    leading dims of ``x``, the trailing dims being ``shape``) into the running ``count``,
    ``mean`` and ``var`` (Chan et al.'s pairwise update): with ``d = m - mean`` and
    ``N = count + n``, ``mean += d * n / N`` and
    ``var = (var * count + v * n + d**2 * count * n / N) / N``. The statistics start at mean 0,
    variance 1 and a count of ``epsilon``; they are buffers (saved in ``state_dict``, moved by
    ``.to``).

    Args:
        shape: the shape of one sample's features, ``()`` for scalars. Defaults to ``()``.
        epsilon: the initial count. Defaults to 1e-4.

    Raises:
        ValueError: ``epsilon`` is not a finite number > 0; (``update``) ``x`` does not end
            with ``shape``.

    Examples:
        >>> import torch
        >>> from rl_envs import RunningMeanStd
        >>> rms = RunningMeanStd(shape=(2,), epsilon=1e-12)
        >>> rms.update(torch.tensor([[0.0, 1.0], [2.0, 5.0]]))
        >>> rms.mean.tolist(), rms.var.tolist()
        ([1.0, 3.0], [1.0, 4.0])
        >>> rms.normalize(torch.tensor([3.0, 3.0])).tolist()
        [2.0, 0.0]
    """

    def __init__(self, shape: Sequence[int] | torch.Size = (), epsilon: float = 1e-4) -> None:
        super().__init__()
        if (
            isinstance(epsilon, bool)
            or not isinstance(epsilon, (int, float))
            or not (math.isfinite(epsilon) and epsilon > 0)
        ):
            raise ValueError(
                f"RunningMeanStd: expected epsilon (the initial count) as a finite number > 0, "
                f"got {epsilon!r}."
            )
        shape = torch.Size(shape)
        self.register_buffer("mean", torch.zeros(shape))
        self.register_buffer("var", torch.ones(shape))
        self.register_buffer("count", torch.tensor(float(epsilon)))

    def update(self, x: torch.Tensor) -> None:
        """Merges the samples of ``x`` (``[*N, *shape]``) into the statistics."""
        shape = self.mean.shape
        if x.ndim < len(shape) or tuple(x.shape[x.ndim - len(shape) :]) != tuple(shape):
            raise ValueError(
                f"RunningMeanStd.update: expected samples ending with the feature shape "
                f"{tuple(shape)}, got a tensor of shape {tuple(x.shape)}."
            )
        x = x.detach().to(self.mean.dtype).reshape(-1, *shape)
        n = x.shape[0]
        if n == 0:
            return
        batch_mean = x.mean(0)
        batch_var = x.var(0, unbiased=False) if n > 1 else torch.zeros_like(batch_mean)
        delta = batch_mean - self.mean
        total = self.count + n
        merged = self.var * self.count + batch_var * n + delta.square() * self.count * n / total
        self.mean.add_(delta * n / total)
        self.var.copy_(merged / total)
        self.count.copy_(total)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """``(x - mean) / sqrt(var)`` (the variance floored at 1e-8), in float32 or wider."""
        dtype = torch.promote_types(x.dtype, self.mean.dtype)
        return (x.to(dtype) - self.mean) / self.var.clamp_min(1e-8).sqrt()

    def std(self) -> torch.Tensor:
        """``sqrt(var)``, the variance floored at 1e-8."""
        return self.var.clamp_min(1e-8).sqrt()


def _check_clip(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"RNDTransform: expected {name} as a number > 0, got {value!r}.")
    return float(value)


class RNDTransform(Transform):
    """Writes RND's intrinsic reward of each step's next observation at ``out_keys[0]``.

    At every step (and on a plain TensorDict, e.g. a replay-buffer sample's ``"next"``), with
    ``o`` the observation at ``in_keys[0]`` (cast to float):

    1. with ``normalize_obs``, ``o = clip((o - mean_o) / std_o, -obs_clip, obs_clip)``, the
       statistics of :attr:`obs_rms` updated with the batch first (in training mode);
    2. ``r = mean_features((predictor(o) - target(o))**2)``, of shape ``[*B, 1]``, without
       gradient;
    3. with ``normalize_reward``, ``r = clip(r / std_r, -reward_clip, reward_clip)``, the
       statistics of :attr:`reward_rms` updated with ``r`` first (in training mode).

    The reward (and ``reward_spec``) of the env are left as they are: a learner mixes the two,
    e.g. ``reward + beta * intrinsic_reward``. The target network's parameters are frozen; the
    predictor learns through rl-objectives' ``RNDLoss`` (give it the same two networks and
    ``obs_rms=transform.obs_rms``). The running statistics are created at the first step, with
    the observation's feature size.

    Args:
        target_network: the fixed random network.
        predictor_network: the trained network, same output shape.
        in_keys: the observation, one key. Defaults to ``["observation"]``.
        out_keys: the intrinsic reward, one key. Defaults to ``["intrinsic_reward"]``.

    Keyword Args:
        normalize_obs: standardise and clip the observation. Defaults to True.
        normalize_reward: divide the reward by its running std and clip it. Defaults to True.
        obs_clip: the observation's clip, > 0. Defaults to 5.0.
        reward_clip: the reward's clip, > 0. Defaults to 5.0.

    Raises:
        TypeError: a network is not an ``nn.Module``.
        ValueError: not one in and one out key, or a clip <= 0; (at a step) the networks'
            outputs differ in shape.
        KeyError: (at a step) no observation at ``in_keys[0]``.

    Examples:
        >>> import torch
        >>> from rl_core import TransformedEnv
        >>> from rl_envs import GymEnv, RNDTransform
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> target, predictor = torch.nn.Linear(4, 8), torch.nn.Linear(4, 8)
        >>> env = TransformedEnv(GymEnv("CartPole-v1"), RNDTransform(target, predictor))
        >>> traj = env.rollout(5)
        >>> traj["next", "intrinsic_reward"].shape, bool((traj["next", "intrinsic_reward"] >= 0).all())
        (torch.Size([5, 1]), True)
    """

    def __init__(
        self,
        target_network: nn.Module,
        predictor_network: nn.Module,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        *,
        normalize_obs: bool = True,
        normalize_reward: bool = True,
        obs_clip: float = 5.0,
        reward_clip: float = 5.0,
    ) -> None:
        super().__init__(
            in_keys=["observation"] if in_keys is None else in_keys,
            out_keys=["intrinsic_reward"] if out_keys is None else out_keys,
        )
        if len(self.in_keys) != 1:
            raise ValueError(
                f"RNDTransform: expected one observation key in in_keys, got {self.in_keys}."
            )
        for name, network in (
            ("target_network", target_network),
            ("predictor_network", predictor_network),
        ):
            if not isinstance(network, nn.Module):
                raise TypeError(
                    f"RNDTransform: expected {name} as a torch.nn.Module, got "
                    f"{type(network).__name__}."
                )
        self.target_network = target_network.requires_grad_(False)
        self.predictor_network = predictor_network
        self.normalize_obs = bool(normalize_obs)
        self.normalize_reward = bool(normalize_reward)
        self.obs_clip = _check_clip("obs_clip", obs_clip)
        self.reward_clip = _check_clip("reward_clip", reward_clip)
        self.obs_rms: RunningMeanStd | None = None
        self.reward_rms: RunningMeanStd | None = None

    def _ensure_stats(self, obs: torch.Tensor) -> None:
        if self.normalize_obs and self.obs_rms is None:
            self.obs_rms = RunningMeanStd(shape=obs.shape[-1:]).to(obs.device)
        if self.normalize_reward and self.reward_rms is None:
            self.reward_rms = RunningMeanStd(shape=()).to(obs.device)

    def _load_from_state_dict(self, state_dict: Any, prefix: str, *args: Any) -> None:
        # statistics saved after the first step: build them so that they load
        for name in ("obs_rms", "reward_rms"):
            mean = state_dict.get(f"{prefix}{name}.mean")
            if mean is not None and getattr(self, name) is None:
                setattr(self, name, RunningMeanStd(shape=mean.shape).to(mean.device))
        super()._load_from_state_dict(state_dict, prefix, *args)

    def intrinsic_reward(self, observation: torch.Tensor) -> torch.Tensor:
        """The (normalised) intrinsic reward ``[*B, 1]`` of observations ``[*B, obs_dim]``,
        updating the running statistics in training mode."""
        obs = observation if observation.is_floating_point() else observation.float()
        self._ensure_stats(obs)
        if self.obs_rms is not None:
            if self.training:
                self.obs_rms.update(obs)
            obs = self.obs_rms.normalize(obs).clamp(-self.obs_clip, self.obs_clip)
        with torch.no_grad():
            target = self.target_network(obs)
            prediction = self.predictor_network(obs)
        if target.shape != prediction.shape:
            raise ValueError(
                f"RNDTransform: expected the predictor's output shaped like the target's "
                f"{tuple(target.shape)}, got {tuple(prediction.shape)}."
            )
        reward = (prediction - target).square().mean(-1, keepdim=True)
        if self.reward_rms is not None:
            if self.training:
                self.reward_rms.update(reward)
            reward = (reward / self.reward_rms.std()).clamp(-self.reward_clip, self.reward_clip)
        return reward

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        key = self.in_keys[0]
        obs = tensordict.get(key, None)
        if obs is None:
            raise KeyError(
                f"RNDTransform: expected the observation at {key!r}, found keys "
                f"{sorted(map(str, tensordict.keys()))}. Set in_keys to the observation's key."
            )
        tensordict.set(self.out_keys[0], self.intrinsic_reward(obs).to(obs.device))
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset  # a reward belongs to steps only

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        shape = (*reward_spec.shape, 1)
        reward_spec[self.out_keys[0]] = Unbounded(
            shape=shape, device=reward_spec.device, dtype=torch.float32
        )
        return reward_spec

    def extra_repr(self) -> str:
        return (
            f"normalize_obs={self.normalize_obs}, normalize_reward={self.normalize_reward}, "
            f"obs_clip={self.obs_clip}, reward_clip={self.reward_clip}"
        )
