"""gSDE: generalized state-dependent exploration (Raffin et al., 2021), TorchRL's ``gSDEModule``
and ``LazygSDEModule``.

The exploration noise of action dim ``i`` is ``sum_j sigma_ij * eps_ij * s_j`` for the policy's
features ``s`` and a noise matrix ``eps`` (``N(0, 1)``) drawn once per episode and kept in the
TensorDict (``"_eps_gSDE"``, primed to zeros at each reset by ``rl_envs``' ``gSDENoise``: zeros
ask the module to draw a new matrix), so the noise changes smoothly with the state instead of
at every step.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.distributions import Transform
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedBuffer, UninitializedParameter

from rl_core import ExplorationType, exploration_type


def _inv_softplus(x: torch.Tensor) -> torch.Tensor:
    return x.expm1().log()


class gSDEModule(nn.Module):
    """Adds gSDE noise to a policy's mean: ``forward(mu, state, _eps_gSDE)`` returns
    ``(mu, scale, action, _eps_gSDE)`` with ``action = mu + (sigma * eps) @ state`` (exploring)
    or ``mu`` (``DETERMINISTIC``, ``MODE`` or ``MEAN`` exploration types), and
    ``scale_i = sqrt(sum_j (sigma_ij * s_j)^2)``, the noise's standard deviation.

    ``_eps_gSDE`` is ``[*B, action_dim, state_dim]``; ``None`` or all zeros (what ``gSDENoise``
    primes at reset, any shape with one element per batch entry) draws a new ``N(0, 1)``
    matrix while exploring (zeros are kept otherwise).

    Args:
        action_dim: the action size.
        state_dim: the feature size.
        sigma_init: the initial ``sigma`` of every entry. Defaults to
            ``sqrt((1 - scale_min) / state_dim)`` (noise of variance about ``1 - scale_min``
            for unit features).
        scale_min: the least ``sigma`` entry. Defaults to 0.01.
        scale_max: the largest ``sigma`` entry. Defaults to 10.
        learn_sigma: ``sigma = softplus(log_sigma)`` with ``log_sigma`` a parameter; else a
            fixed buffer. Defaults to True.
        transform: a ``torch.distributions.Transform`` applied to the action (e.g. tanh).
        device: device of ``sigma``.

    Raises:
        ValueError: ``mu`` and ``state`` (or ``_eps_gSDE``) disagree on the batch dims.

    Examples:
        >>> import torch
        >>> m = gSDEModule(action_dim=2, state_dim=3)
        >>> mu, scale, action, eps = m(torch.zeros(4, 2), torch.ones(4, 3), None)
        >>> action.shape, eps.shape
        (torch.Size([4, 2]), torch.Size([4, 2, 3]))
    """

    def __init__(
        self,
        action_dim: int,
        state_dim: int,
        sigma_init: float | None = None,
        scale_min: float = 0.01,
        scale_max: float = 10.0,
        learn_sigma: bool = True,
        transform: Transform | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.action_dim, self.state_dim = action_dim, state_dim
        self.scale_min, self.scale_max = float(scale_min), float(scale_max)
        self.learn_sigma = bool(learn_sigma)
        self.transform = transform
        if state_dim > 0:
            if sigma_init is None:
                sigma_init = math.sqrt((1.0 - scale_min) / state_dim)
            value = torch.full((action_dim, state_dim), float(sigma_init), device=device)
            if self.learn_sigma:
                self.log_sigma = nn.Parameter(_inv_softplus(value))
            else:
                self.register_buffer("_sigma", value)

    @property
    def sigma(self) -> torch.Tensor:
        """``[action_dim, state_dim]``, at least ``scale_min``."""
        raw = nn.functional.softplus(self.log_sigma) if self.learn_sigma else self._sigma
        return raw.clamp_min(self.scale_min)

    def forward(
        self, mu: torch.Tensor, state: torch.Tensor, _eps_gSDE: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        sigma = self.sigma.clamp_max(self.scale_max)
        batch = state.shape[:-1]
        if mu.shape[:-1] != batch:
            raise ValueError(
                f"gSDEModule: mu and state must share their batch dims, got shapes "
                f"{tuple(mu.shape)} and {tuple(state.shape)}."
            )
        mode = exploration_type()
        explore = mode is None or mode == ExplorationType.RANDOM
        eps = _eps_gSDE
        fresh = eps is None or (eps.numel() == math.prod(batch) and not eps.any())
        if fresh:
            shape = (*batch, *sigma.shape)
            draw = torch.randn if explore else torch.zeros
            eps = draw(shape, device=sigma.device, dtype=sigma.dtype)
        elif eps.shape[: len(batch)] != batch:
            raise ValueError(
                f"gSDEModule: _eps_gSDE {tuple(eps.shape)} does not start with the batch dims "
                f"{tuple(batch)} of state {tuple(state.shape)}."
            )
        noise = ((sigma * eps) @ state.unsqueeze(-1)).squeeze(-1)
        action = mu + noise if explore else mu
        scale = (sigma * state.unsqueeze(-2)).pow(2).sum(-1).clamp_min(1e-5).sqrt()
        if self.transform is not None:
            action = self.transform(action)
        return mu, scale, action, eps


class LazygSDEModule(LazyModuleMixin, gSDEModule):
    """:class:`gSDEModule` whose sizes come from its first call (``mu``'s and ``state``'s
    last dims); it then becomes a :class:`gSDEModule`. ``sigma`` starts so that the noise's
    variance is about ``sigma_init ** 2`` (default 1) on that first batch of features:
    ``sigma_ij = sigma_init / sqrt(state_dim * mean(s_j ** 2))`` over the batch (1 for a
    single state).

    Args:
        sigma_init: the noise's initial standard deviation. Defaults to 1.
        scale_min, scale_max, learn_sigma, transform, device: as :class:`gSDEModule`.

    Examples:
        >>> import torch
        >>> m = LazygSDEModule()
        >>> _ = m(torch.zeros(4, 2), torch.ones(4, 3), None)
        >>> type(m).__name__, tuple(m.sigma.shape)
        ('gSDEModule', (2, 3))
    """

    cls_to_become = gSDEModule

    def __init__(
        self,
        sigma_init: float | None = None,
        scale_min: float = 0.01,
        scale_max: float = 10.0,
        learn_sigma: bool = True,
        transform: Transform | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(0, 0, None, scale_min, scale_max, learn_sigma, transform, device)
        self._sigma_init = 1.0 if sigma_init is None else float(sigma_init)
        if self.learn_sigma:
            self.log_sigma = UninitializedParameter(device=device)
        else:
            self._sigma = UninitializedBuffer(device=device)

    def reset_parameters(self) -> None:
        """Nothing to reset before the sizes are known."""

    def initialize_parameters(self, mu: torch.Tensor, state: torch.Tensor, *args: Any) -> None:
        if not self.has_uninitialized_params():
            return
        self.action_dim, self.state_dim = mu.shape[-1], state.shape[-1]
        with torch.no_grad():
            flat = state.reshape(-1, self.state_dim)
            power = flat.pow(2).mean(0) if flat.shape[0] > 1 else torch.ones(self.state_dim)
            power = power.clamp_min(self.scale_min).to(mu.dtype)
            row = self._sigma_init / (self.state_dim * power).sqrt()
            value = row.expand(self.action_dim, self.state_dim).clone()
            target = self.log_sigma if self.learn_sigma else self._sigma
            target.materialize((self.action_dim, self.state_dim))
            target.copy_(_inv_softplus(value) if self.learn_sigma else value)


__all__ = ["LazygSDEModule", "gSDEModule"]
