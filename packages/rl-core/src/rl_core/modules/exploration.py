"""Exploration modules that perturb the action a policy wrote: epsilon-greedy, Gaussian, OU.

Each module explores under ``ExplorationType.RANDOM`` and outside any
``set_exploration_type`` block, and passes the TensorDict through unchanged under
``DETERMINISTIC``, ``MODE`` and ``MEAN``. Put one after a policy:
``TensorDictSequential(actor, EGreedyModule(spec))``.
"""

from __future__ import annotations

import math

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase, dispatch

from rl_core.exploration import ExplorationType, exploration_type
from rl_core.keys import ACTION, IS_INIT, NestedKey
from rl_core.modules._spec_utils import expand_to, leaf_spec
from rl_core.specs import Composite, TensorSpec, Unbounded


def _exploring() -> bool:
    kind = exploration_type()
    return kind is None or kind is ExplorationType.RANDOM


def _check_annealing(n: int, where: str, name: str) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"{where}: expected a positive int {name}, got {n!r}.")


def _per_element(flag: torch.Tensor, batch_dims: int, value: torch.Tensor) -> torch.Tensor:
    """Reshapes a per-batch-element tensor (``[*B]`` or ``[*B, 1]``) to broadcast on ``value``."""
    batch = value.shape[:batch_dims]
    return flag.reshape(*batch, *([1] * (value.ndim - batch_dims)))


def _anneal_(
    value: torch.Tensor, start: torch.Tensor, end: torch.Tensor, frames: int, num_steps: int
) -> None:
    """Moves ``value`` linearly from ``start`` towards ``end`` by ``frames`` of ``num_steps``."""
    delta = (start - end) * frames / num_steps
    value.copy_((value - delta).clamp(torch.minimum(start, end), torch.maximum(start, end)))


class EGreedyModule(TensorDictModuleBase):
    """Replaces the action by a random one from the spec with probability ``eps``.

    Each batch element is replaced independently. ``eps`` starts at ``eps_init`` and
    :meth:`step` lowers it linearly to ``eps_end`` over ``annealing_num_steps`` frames; it is a
    buffer, so it is saved in the state dict. With ``action_mask_key``, random actions are
    drawn among the allowed ones only.

    Args:
        spec: the action spec (``OneHot``, ``Categorical``, ``Bounded``...) or a Composite
            holding it at ``action_key``.
        eps_init: initial probability of a random action. Defaults to 1.0.
        eps_end: final probability. Defaults to 0.1.
        annealing_num_steps: frames to go from ``eps_init`` to ``eps_end``. Defaults to 1000.

    Keyword Args:
        action_key: the action entry. Defaults to ``"action"``.
        action_mask_key: a boolean mask entry (True = allowed), or ``None``.

    Raises:
        ValueError: an epsilon is outside ``[0, 1]`` or ``annealing_num_steps`` is not positive.
        KeyError: a Composite spec has no ``action_key`` entry.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.exploration import ExplorationType, set_exploration_type
        >>> from rl_core.modules import EGreedyModule
        >>> from rl_core.specs import Categorical
        >>> explore = EGreedyModule(Categorical(4), eps_init=1.0, eps_end=0.0, annealing_num_steps=2)
        >>> td = TensorDict(action=torch.zeros(1000, dtype=torch.long), batch_size=[1000])
        >>> with set_exploration_type(ExplorationType.DETERMINISTIC):
        ...     print(int(explore(td.clone())["action"].count_nonzero()))
        0
        >>> explore.step()
        >>> print(explore.eps.item())
        0.5
    """

    def __init__(
        self,
        spec: TensorSpec,
        eps_init: float = 1.0,
        eps_end: float = 0.1,
        annealing_num_steps: int = 1000,
        *,
        action_key: NestedKey = ACTION,
        action_mask_key: NestedKey | None = None,
    ) -> None:
        super().__init__()
        where = "EGreedyModule"
        for name, eps in (("eps_init", eps_init), ("eps_end", eps_end)):
            if not 0.0 <= eps <= 1.0:
                raise ValueError(f"{where}: expected {name} in [0, 1], got {eps}.")
        _check_annealing(annealing_num_steps, where, "annealing_num_steps")
        self.spec = spec
        self.action_spec = leaf_spec(spec, action_key, where)
        self.action_key = action_key
        self.action_mask_key = action_mask_key
        self.annealing_num_steps = annealing_num_steps
        self.register_buffer("eps_init", torch.tensor(float(eps_init)))
        self.register_buffer("eps_end", torch.tensor(float(eps_end)))
        self.register_buffer("eps", torch.tensor(float(eps_init)))
        self.in_keys = [action_key] + ([action_mask_key] if action_mask_key else [])
        self.out_keys = [action_key]

    def step(self, frames: int = 1) -> None:
        """Moves ``eps`` towards ``eps_end`` by ``frames`` annealing steps."""
        _anneal_(self.eps, self.eps_init, self.eps_end, frames, self.annealing_num_steps)

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Replaces each batch element's action by a random one with probability ``eps``."""
        if not _exploring():
            return tensordict
        action = tensordict.get(self.action_key)
        spec = expand_to(self.action_spec, action.shape)
        if self.action_mask_key is not None:
            spec = spec.clone()
            spec.update_mask(tensordict.get(self.action_mask_key))
        random_action = spec.rand().to(action.device)
        replace = torch.rand(tensordict.batch_size, device=action.device) < self.eps
        replace = _per_element(replace, tensordict.batch_dims, action)
        tensordict.set(self.action_key, torch.where(replace, random_action, action))
        return tensordict


class AdditiveGaussianModule(TensorDictModuleBase):
    """Adds Gaussian noise ``sigma * N(mean, std)`` to the action, then projects it into the spec.

    ``sigma`` starts at ``sigma_init`` and :meth:`step` lowers it linearly to ``sigma_end``
    over ``annealing_num_steps`` frames (a buffer, saved in the state dict).

    Args:
        spec: the action spec (usually ``Bounded``), or a Composite holding it at
            ``action_key``.
        sigma_init: initial noise scale. Defaults to 1.0.
        sigma_end: final noise scale. Defaults to 0.1.
        annealing_num_steps: frames to go from ``sigma_init`` to ``sigma_end``. Defaults to
            1000.
        mean: mean of the unscaled noise. Defaults to 0.0.
        std: standard deviation of the unscaled noise. Defaults to 1.0.

    Keyword Args:
        action_key: the action entry. Defaults to ``"action"``.
        safe: whether to project the noisy action into the spec. Defaults to ``True``.

    Raises:
        ValueError: ``annealing_num_steps`` is not positive.
        KeyError: a Composite spec has no ``action_key`` entry.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import AdditiveGaussianModule
        >>> from rl_core.specs import Bounded
        >>> noise = AdditiveGaussianModule(Bounded(-1.0, 1.0, shape=(2,)), sigma_init=10.0)
        >>> td = noise(TensorDict(action=torch.zeros(100, 2), batch_size=[100]))
        >>> print(bool(td["action"].abs().max() <= 1.0))
        True
    """

    def __init__(
        self,
        spec: TensorSpec,
        sigma_init: float = 1.0,
        sigma_end: float = 0.1,
        annealing_num_steps: int = 1000,
        mean: float = 0.0,
        std: float = 1.0,
        *,
        action_key: NestedKey = ACTION,
        safe: bool = True,
    ) -> None:
        super().__init__()
        where = "AdditiveGaussianModule"
        _check_annealing(annealing_num_steps, where, "annealing_num_steps")
        self.spec = spec
        self.action_spec = leaf_spec(spec, action_key, where)
        self.action_key = action_key
        self.safe = safe
        self.mean = mean
        self.std = std
        self.annealing_num_steps = annealing_num_steps
        self.register_buffer("sigma_init", torch.tensor(float(sigma_init)))
        self.register_buffer("sigma_end", torch.tensor(float(sigma_end)))
        self.register_buffer("sigma", torch.tensor(float(sigma_init)))
        self.in_keys = [action_key]
        self.out_keys = [action_key]

    def step(self, frames: int = 1) -> None:
        """Moves ``sigma`` towards ``sigma_end`` by ``frames`` annealing steps."""
        _anneal_(self.sigma, self.sigma_init, self.sigma_end, frames, self.annealing_num_steps)

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Adds the scaled noise to the action (and projects it when ``safe``)."""
        if not _exploring():
            return tensordict
        action = tensordict.get(self.action_key)
        noise = torch.randn_like(action) * self.std + self.mean
        noisy = action + self.sigma.to(action.device) * noise
        if self.safe:
            noisy = expand_to(self.action_spec, noisy.shape).project(noisy)
        tensordict.set(self.action_key, noisy)
        return tensordict


class OrnsteinUhlenbeckProcessModule(TensorDictModuleBase):
    """Adds temporally correlated Ornstein-Uhlenbeck noise, kept per env in the TensorDict.

    With ``x`` the previous noise, each call draws ``x' = x - theta * x * dt + sigma_t *
    sqrt(dt) * N(0, 1)`` and writes ``action + eta * x'``. The noise and a per-env step count
    live in the TensorDict at ``noise_key`` (``"_ou_prev_noise"``) and ``steps_key``
    (``"_ou_steps"``), so every env of a batch has its own process; both restart (noise
    ``x0``, count 0) where ``is_init`` is True, and start there when missing. With
    ``sigma_min``, ``sigma_t`` decreases linearly from ``sigma`` to ``sigma_min`` over
    ``n_steps_annealing`` steps of each env. :meth:`noise_state_spec` gives the specs of the
    two entries, for an env transform that carries them from step to step.

    Args:
        spec: the action spec (usually ``Bounded``), or a Composite holding it at
            ``action_key`` (its batch shape is then the env batch shape of the state specs).
        eta: scale of the noise added to the action. Defaults to 0.6.
        sigma: noise volatility. Defaults to 0.2.
        theta: mean-reversion rate. Defaults to 0.15.
        dt: time step. Defaults to 0.01.
        x0: initial noise (a float or a tensor broadcastable to the action). Defaults to 0.
        sigma_min: volatility after annealing, or ``None`` for a constant ``sigma``.
        n_steps_annealing: steps from ``sigma`` to ``sigma_min``. Defaults to 1000.

    Keyword Args:
        action_key: the action entry. Defaults to ``"action"``.
        is_init_key: the reset marker. Defaults to ``"is_init"``.
        safe: whether to project the noisy action into the spec. Defaults to ``True``.

    Raises:
        ValueError: ``n_steps_annealing`` is not positive.
        KeyError: a Composite spec has no ``action_key`` entry.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import OrnsteinUhlenbeckProcessModule
        >>> from rl_core.specs import Bounded
        >>> ou = OrnsteinUhlenbeckProcessModule(Bounded(-1.0, 1.0, shape=(2,)))
        >>> td = ou(TensorDict(action=torch.zeros(4, 2), batch_size=[4]))
        >>> td["_ou_prev_noise"].shape, td["_ou_steps"].view(-1).tolist()
        (torch.Size([4, 2]), [1, 1, 1, 1])
        >>> sorted(ou.noise_state_spec().keys())
        ['_ou_prev_noise', '_ou_steps']
    """

    noise_key: str = "_ou_prev_noise"
    steps_key: str = "_ou_steps"

    def __init__(
        self,
        spec: TensorSpec,
        eta: float = 0.6,
        sigma: float = 0.2,
        theta: float = 0.15,
        dt: float = 0.01,
        x0: float | torch.Tensor | None = None,
        sigma_min: float | None = None,
        n_steps_annealing: int = 1000,
        *,
        action_key: NestedKey = ACTION,
        is_init_key: NestedKey = IS_INIT,
        safe: bool = True,
    ) -> None:
        super().__init__()
        where = "OrnsteinUhlenbeckProcessModule"
        _check_annealing(n_steps_annealing, where, "n_steps_annealing")
        self.spec = spec
        self.action_spec = leaf_spec(spec, action_key, where)
        self.action_key = action_key
        self.is_init_key = is_init_key
        self.safe = safe
        self.eta = eta
        self.sigma = sigma
        self.theta = theta
        self.dt = dt
        self.sigma_min = sigma_min
        self.n_steps_annealing = n_steps_annealing
        self.register_buffer("x0", torch.as_tensor(0.0 if x0 is None else x0, dtype=torch.float))
        self.in_keys = [action_key, self.noise_key, self.steps_key, is_init_key]
        self.out_keys = [action_key, self.noise_key, self.steps_key]

    def noise_state_spec(self) -> Composite:
        """Returns the specs of the noise state entries, for a primer-like env transform.

        Returns:
            A Composite, of the batch shape of a Composite ``spec`` (else ``()``), with
            ``noise_key`` (float, the action's shape) and ``steps_key`` (int64, ``(*batch,
            1)``). Zeros of it are the state of a fresh env.
        """
        batch = self.spec.shape if isinstance(self.spec, Composite) else torch.Size(())
        action = self.action_spec
        return Composite(
            {
                self.noise_key: Unbounded(
                    shape=action.shape, device=action.device, dtype=action.dtype
                ),
                self.steps_key: Unbounded(
                    shape=(*batch, 1), device=action.device, dtype=torch.int64
                ),
            },
            shape=batch,
        )

    def _sigma_at(self, steps: torch.Tensor) -> torch.Tensor | float:
        if self.sigma_min is None:
            return self.sigma
        slope = (self.sigma - self.sigma_min) / self.n_steps_annealing
        return (self.sigma - slope * steps.float()).clamp_min(self.sigma_min)

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Advances each env's noise process and adds it to the action."""
        if not _exploring():
            return tensordict
        action = tensordict.get(self.action_key)
        batch_dims = tensordict.batch_dims
        x0 = self.x0.to(device=action.device, dtype=action.dtype).expand_as(action)
        prev = tensordict.get(self.noise_key, None)
        steps = tensordict.get(self.steps_key, None)
        if prev is None:
            prev = x0
        if steps is None:
            steps = torch.zeros(
                (*tensordict.batch_size, 1), dtype=torch.int64, device=action.device
            )
        is_init = tensordict.get(self.is_init_key, None)
        if is_init is not None:
            prev = torch.where(_per_element(is_init, batch_dims, prev), x0, prev)
            steps = torch.where(_per_element(is_init, batch_dims, steps), 0, steps)
        sigma = self._sigma_at(steps)
        if isinstance(sigma, torch.Tensor):
            sigma = _per_element(sigma, batch_dims, prev)
        noise = (
            prev - self.theta * prev * self.dt + sigma * math.sqrt(self.dt) * torch.randn_like(prev)
        )
        noisy = action + self.eta * noise
        if self.safe:
            noisy = expand_to(self.action_spec, noisy.shape).project(noisy)
        tensordict.set(self.action_key, noisy)
        tensordict.set(self.noise_key, noise)
        tensordict.set(self.steps_key, steps + 1)
        return tensordict


__all__ = ["EGreedyModule", "AdditiveGaussianModule", "OrnsteinUhlenbeckProcessModule"]
