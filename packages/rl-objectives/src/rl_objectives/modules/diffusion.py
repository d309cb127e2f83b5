"""DiffusionActor: a diffusion policy (Chi et al. 2023) that denoises an action, or a chunk of
actions, conditioned on the observation, with a DDPM (Ho et al. 2020) or DDIM (Song et al.
2021) sampler over a fixed linear noise schedule."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from rl_core.exploration import ExplorationType, exploration_type
from rl_core.keys import ACTION, OBSERVATION, NestedKey
from rl_core.modules import SafeModule
from rl_core.specs import TensorSpec

__all__ = ["DiffusionActor"]

_SAMPLERS = ("ddpm", "ddim")


def _positive_int(value: object, name: str, where: str = "DiffusionActor") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}: expected {name} to be an int >= 1, got {value!r}.")
    return value


def _ddpm_step(
    x: Tensor, eps: Tensor, beta: Tensor, alpha_bar: Tensor, noise: Tensor | None
) -> Tensor:
    """One reverse step of DDPM (Ho et al. 2020, Algorithm 2), ``x_t -> x_{t-1}``:
    ``(x - beta / sqrt(1 - alpha_bar) * eps) / sqrt(1 - beta) + sqrt(beta) * noise``
    (``noise`` is ``None`` at ``t = 0`` and in deterministic mode). Scalars ``beta`` and
    ``alpha_bar`` are step ``t``'s; ``x``, ``eps`` and ``noise`` share a shape."""
    mean = (x - beta / torch.sqrt(1.0 - alpha_bar) * eps) / torch.sqrt(1.0 - beta)
    return mean if noise is None else mean + torch.sqrt(beta) * noise


def _ddim_step(
    x: Tensor,
    eps: Tensor,
    alpha_bar: Tensor,
    alpha_bar_prev: Tensor,
    eta: float,
    noise: Tensor | None,
) -> Tensor:
    """One reverse step of DDIM (Song et al. 2021, eq. 12) from ``alpha_bar`` to
    ``alpha_bar_prev`` (1 after the last step): the predicted clean sample
    ``x0 = (x - sqrt(1 - alpha_bar) * eps) / sqrt(alpha_bar)``, then
    ``sqrt(alpha_bar_prev) * x0 + sqrt(1 - alpha_bar_prev - sigma^2) * eps + sigma * noise``
    with ``sigma = eta * sqrt((1 - alpha_bar_prev) / (1 - alpha_bar)) *
    sqrt(1 - alpha_bar / alpha_bar_prev)`` (``eta = 0``: deterministic)."""
    x0 = (x - torch.sqrt(1.0 - alpha_bar) * eps) / torch.sqrt(alpha_bar)
    sigma = (
        eta
        * torch.sqrt((1.0 - alpha_bar_prev) / (1.0 - alpha_bar))
        * torch.sqrt(1.0 - alpha_bar / alpha_bar_prev)
    )
    out = torch.sqrt(alpha_bar_prev) * x0 + torch.sqrt(1.0 - alpha_bar_prev - sigma**2) * eps
    return out if noise is None else out + sigma * noise


class _TimeEmbedding(nn.Module):
    """Replaces the last input column (the diffusion step ``t``) by ``t / num_steps`` and
    ``sin``/``cos`` of ``pi * 2^k * t / num_steps`` for ``k < width // 2``."""

    def __init__(self, num_steps: int, width: int = 16) -> None:
        super().__init__()
        self.num_steps = num_steps
        frequency = math.pi * 2.0 ** torch.arange(width // 2, dtype=torch.float32)
        self.register_buffer("frequency", frequency, persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        phase = x[..., -1:] / self.num_steps
        angle = phase * self.frequency.to(x.dtype)
        return torch.cat([x[..., :-1], phase, torch.sin(angle), torch.cos(angle)], dim=-1)


def _default_score_network(in_features: int | None, out_features: int, num_steps: int) -> nn.Module:
    """A 256-256 SiLU MLP over ``[noisy action, observation, step features]``."""
    width = 16
    first = nn.LazyLinear(256) if in_features is None else nn.Linear(in_features + width, 256)
    return nn.Sequential(
        _TimeEmbedding(num_steps, width),
        first,
        nn.SiLU(),
        nn.Linear(256, 256),
        nn.SiLU(),
        nn.Linear(256, out_features),
    )


class _DDPMModule(nn.Module):
    """The noise schedule, the forward noising, the noise prediction and the samplers of a
    :class:`DiffusionActor` (its ``.module``); see there for the arguments."""

    def __init__(
        self,
        score_network: nn.Module,
        action_shape: tuple[int, ...],
        num_steps: int,
        beta_start: float,
        beta_end: float,
        sampler: str,
        sampling_steps: int,
        eta: float,
        obs_dim: int | None,
    ) -> None:
        super().__init__()
        self.score_network = score_network
        self.action_shape = action_shape
        self.action_dim = action_shape[-1]
        self.num_steps = num_steps
        self.sampler = sampler
        self.sampling_steps = sampling_steps
        self.eta = eta
        self.obs_dim = obs_dim
        betas = torch.linspace(beta_start, beta_end, num_steps, dtype=torch.float64)
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.register_buffer("betas", betas.float())
        self.register_buffer("alphas", (1.0 - betas).float())
        self.register_buffer("alphas_cumprod", alphas_cumprod.float())

    def _check_action(self, action: Tensor, name: str) -> torch.Size:
        n = len(self.action_shape)
        if action.dim() < n or tuple(action.shape[action.dim() - n :]) != self.action_shape:
            raise ValueError(
                f"DiffusionActor: expected {name} shaped [*B, "
                f"{', '.join(map(str, self.action_shape))}], got {tuple(action.shape)}."
            )
        return action.shape[: action.dim() - n]

    def _check_steps(self, t: Tensor, batch: torch.Size) -> None:
        if not isinstance(t, Tensor) or t.dtype.is_floating_point or t.dtype == torch.bool:
            raise TypeError(f"DiffusionActor: expected t to be an integer tensor, got {t!r}.")
        if t.shape != batch:
            raise ValueError(
                f"DiffusionActor: expected t shaped like the action's batch {tuple(batch)}, got "
                f"{tuple(t.shape)}."
            )
        if t.numel() and (t.min() < 0 or t.max() >= self.num_steps):
            raise ValueError(
                f"DiffusionActor: expected t in [0, num_steps={self.num_steps}), got values in "
                f"[{t.min().item()}, {t.max().item()}]."
            )

    def add_noise(
        self, clean_action: Tensor, t: Tensor, noise: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Samples ``q(x_t | x_0)``: ``sqrt(alpha_bar_t) * x_0 + sqrt(1 - alpha_bar_t) * noise``.

        Args:
            clean_action: ``[*B, *action_shape]``.
            t: ``[*B]`` integer steps in ``[0, num_steps)``.
            noise: ``[*B, *action_shape]``; drawn from ``N(0, I)`` when ``None``.

        Returns:
            ``(noisy_action, noise)``.
        """
        batch = self._check_action(clean_action, "clean_action")
        self._check_steps(t, batch)
        if noise is None:
            noise = torch.randn_like(clean_action)
        elif noise.shape != clean_action.shape:
            raise ValueError(
                f"DiffusionActor: expected noise shaped like clean_action "
                f"{tuple(clean_action.shape)}, got {tuple(noise.shape)}."
            )
        alpha_bar = self.alphas_cumprod[t].to(clean_action.dtype)
        alpha_bar = alpha_bar.reshape(*alpha_bar.shape, *([1] * len(self.action_shape)))
        noisy = torch.sqrt(alpha_bar) * clean_action + torch.sqrt(1.0 - alpha_bar) * noise
        return noisy, noise

    def predict_noise(self, noisy_action: Tensor, observation: Tensor, t: Tensor) -> Tensor:
        """The score network's noise estimate from ``[noisy action (flattened), observation,
        t]`` concatenated; shaped like ``noisy_action``."""
        batch = self._check_action(noisy_action, "noisy_action")
        if observation.shape[:-1] != batch or (
            self.obs_dim is not None and observation.shape[-1] != self.obs_dim
        ):
            expected = "obs_dim" if self.obs_dim is None else str(self.obs_dim)
            raise ValueError(
                f"DiffusionActor: expected the observation shaped [{', '.join(map(str, batch))}"
                f"{', ' if len(batch) else ''}{expected}], got {tuple(observation.shape)}."
            )
        step = t.to(observation.dtype).reshape(*batch, 1)
        flat = noisy_action.reshape(*batch, -1)
        eps = self.score_network(torch.cat([flat, observation, step], dim=-1))
        return eps.reshape(noisy_action.shape)

    def forward(self, observation: Tensor) -> Tensor:
        """Samples an action from ``x_T ~ N(0, I)`` down the reverse chain.

        Random draws, in order: ``x_T``, then at each reverse step that adds noise one
        ``N(0, I)`` draw shaped like the action (DDPM: every step but the last; DDIM with
        ``eta > 0``: every step but the last). Under
        ``set_exploration_type(ExplorationType.DETERMINISTIC)`` no noise is added after
        ``x_T`` (DDPM keeps each step's mean; DDIM runs with ``eta = 0``).
        """
        batch = observation.shape[:-1]
        deterministic = exploration_type() == ExplorationType.DETERMINISTIC
        x = torch.randn(
            *batch, *self.action_shape, dtype=observation.dtype, device=observation.device
        )
        betas = self.betas.to(observation.dtype)
        alphas_cumprod = self.alphas_cumprod.to(observation.dtype)
        if self.sampler == "ddpm":
            for t in reversed(range(self.num_steps)):
                steps = torch.full(batch, t, dtype=torch.long, device=observation.device)
                eps = self.predict_noise(x, observation, steps)
                noise = None if deterministic or t == 0 else torch.randn_like(x)
                x = _ddpm_step(x, eps, betas[t], alphas_cumprod[t], noise)
            return x
        eta = 0.0 if deterministic else self.eta
        timesteps = self.ddim_timesteps().tolist()
        one = alphas_cumprod.new_ones(())
        for i, t in enumerate(timesteps):
            steps = torch.full(batch, t, dtype=torch.long, device=observation.device)
            eps = self.predict_noise(x, observation, steps)
            last = i == len(timesteps) - 1
            prev = one if last else alphas_cumprod[timesteps[i + 1]]
            noise = None if eta == 0.0 or last else torch.randn_like(x)
            x = _ddim_step(x, eps, alphas_cumprod[t], prev, eta, noise)
        return x

    def ddim_timesteps(self) -> Tensor:
        """The DDIM sampler's steps, from ``num_steps - 1`` down to 0, ``sampling_steps`` of
        them evenly spaced (rounded)."""
        return torch.linspace(self.num_steps - 1, 0, self.sampling_steps).round().long()


class DiffusionActor(SafeModule):
    """A diffusion policy: the action is denoised from Gaussian noise, conditioned on the
    observation (Chi et al. 2023, "Diffusion Policy").

    A score network predicts the noise ``eps`` in a noisy action ``x_t`` from
    ``[x_t (flattened), observation, t]`` concatenated on the last dim (``t`` as a float);
    it is trained by :class:`~rl_objectives.DiffusionBCLoss`. The schedule is linear,
    ``beta_t`` from ``beta_start`` to ``beta_end`` over ``num_steps`` steps, ``alpha_bar_t =
    prod_{s <= t} (1 - beta_s)``. A call starts from ``x_T ~ N(0, I)`` and runs the reverse
    chain: ``"ddpm"`` (Ho et al. 2020) takes all ``num_steps`` steps, ``x_{t-1} = (x_t -
    beta_t / sqrt(1 - alpha_bar_t) * eps) / sqrt(1 - beta_t) + sqrt(beta_t) * z`` (no ``z``
    at the last step); ``"ddim"`` (Song et al. 2021) takes ``sampling_steps`` evenly spaced
    steps, deterministic with ``eta = 0``. Under
    ``set_exploration_type(ExplorationType.DETERMINISTIC)`` no noise is added after ``x_T``.

    With ``chunk_size`` the actor denoises a chunk of actions ``[*B, chunk_size,
    action_dim]`` at once (as the paper's policy), e.g. to be executed by
    :class:`~rl_envs.transforms.MultiAction` or step by step.

    Args:
        action_dim: the action's size.
        obs_dim: the observation's size; needed only to size the default score network's
            first layer (otherwise a ``LazyLinear`` infers it) and then checked on calls.
        score_network: the noise predictor, ``[..., action_dim * (chunk_size or 1) + obs_dim
            + 1] -> [..., action_dim * (chunk_size or 1)]``. Defaults to a 256-256 SiLU MLP
            over sinusoidal features of ``t``.
        num_steps: diffusion steps ``T``. Defaults to 100.
        beta_start: the first ``beta``. Defaults to 1e-4.
        beta_end: the last ``beta``. Defaults to 0.02.
        in_keys: the observation key. Defaults to ``["observation"]``.
        out_keys: the action key. Defaults to ``["action"]``.

    Keyword Args:
        spec: the action spec.
        safe: project the action into ``spec``. Defaults to ``False``.
        chunk_size: denoise chunks of this many actions. Defaults to ``None`` (one action).
        sampler: ``"ddpm"`` or ``"ddim"``. Defaults to ``"ddpm"``.
        sampling_steps: DDIM's steps (``<= num_steps``). Defaults to ``num_steps``.
        eta: DDIM's noise scale (0: deterministic, 1: DDPM-like). Defaults to 0.0.

    Raises:
        ValueError: a size that is not a positive int, betas outside ``0 < beta_start <=
            beta_end < 1``, an unknown sampler, ``sampling_steps`` out of ``[1,
            num_steps]`` or with ``"ddpm"``, ``eta < 0``; on a call, an observation of
            another size than ``obs_dim``.
        TypeError: ``score_network`` is not an ``nn.Module``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> actor = DiffusionActor(action_dim=2, obs_dim=3, num_steps=10)
        >>> actor(TensorDict(observation=torch.randn(4, 3), batch_size=[4]))["action"].shape
        torch.Size([4, 2])
        >>> chunked = DiffusionActor(2, 3, num_steps=10, chunk_size=5, sampler="ddim", sampling_steps=4)
        >>> chunked(TensorDict(observation=torch.randn(4, 3), batch_size=[4]))["action"].shape
        torch.Size([4, 5, 2])
    """

    def __init__(
        self,
        action_dim: int,
        obs_dim: int | None = None,
        score_network: nn.Module | None = None,
        num_steps: int = 100,
        beta_start: float = 1e-4,
        beta_end: float = 0.02,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        *,
        spec: TensorSpec | None = None,
        safe: bool = False,
        chunk_size: int | None = None,
        sampler: str = "ddpm",
        sampling_steps: int | None = None,
        eta: float = 0.0,
    ) -> None:
        _positive_int(action_dim, "action_dim")
        if obs_dim is not None:
            _positive_int(obs_dim, "obs_dim")
        _positive_int(num_steps, "num_steps")
        if chunk_size is not None:
            _positive_int(chunk_size, "chunk_size")
        for name, value in (("beta_start", beta_start), ("beta_end", beta_end)):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"DiffusionActor: expected {name} to be a float, got {value!r}.")
        if not 0.0 < beta_start <= beta_end < 1.0:
            raise ValueError(
                f"DiffusionActor: expected 0 < beta_start <= beta_end < 1, got "
                f"beta_start={beta_start}, beta_end={beta_end}."
            )
        if sampler not in _SAMPLERS:
            raise ValueError(f"DiffusionActor: expected sampler in {_SAMPLERS}, got {sampler!r}.")
        if sampling_steps is not None:
            _positive_int(sampling_steps, "sampling_steps")
            if sampler == "ddpm" and sampling_steps != num_steps:
                raise ValueError(
                    f"DiffusionActor: sampler='ddpm' takes all num_steps={num_steps} steps, got "
                    f"sampling_steps={sampling_steps}; use sampler='ddim' for fewer."
                )
            if sampling_steps > num_steps:
                raise ValueError(
                    f"DiffusionActor: expected sampling_steps <= num_steps={num_steps}, got "
                    f"{sampling_steps}."
                )
        if isinstance(eta, bool) or not isinstance(eta, int | float) or eta < 0:
            raise ValueError(f"DiffusionActor: expected eta >= 0, got {eta!r}.")
        action_shape = (action_dim,) if chunk_size is None else (chunk_size, action_dim)
        flat = math.prod(action_shape)
        if score_network is None:
            score_network = _default_score_network(
                None if obs_dim is None else flat + obs_dim + 1, flat, num_steps
            )
        elif not isinstance(score_network, nn.Module):
            raise TypeError(
                f"DiffusionActor: expected score_network to be an nn.Module, got "
                f"{type(score_network).__name__}."
            )
        module = _DDPMModule(
            score_network,
            action_shape,
            num_steps,
            float(beta_start),
            float(beta_end),
            sampler,
            num_steps if sampling_steps is None else sampling_steps,
            float(eta),
            obs_dim,
        )
        super().__init__(
            module,
            in_keys=[OBSERVATION] if in_keys is None else in_keys,
            out_keys=[ACTION] if out_keys is None else out_keys,
            spec=spec,
            safe=safe,
        )
