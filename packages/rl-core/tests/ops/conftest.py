"""Random trajectories for the value-op tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor

Trajectory = dict[str, Tensor]


def _trajectory(
    shape: tuple[int, ...],
    *,
    time_dim: int = -2,
    dtype: torch.dtype = torch.float64,
    seed: int = 0,
    done_prob: float = 0.2,
    independent_next_value: bool = False,
) -> Trajectory:
    """Tensors of ``shape`` with time at ``time_dim``, consistent across steps.

    ``next_state_value[t] == state_value[t + 1]`` inside an episode (unless
    ``independent_next_value``: then every ``next_state_value`` is drawn on its own, as a
    target network or a critic evaluated twice gives), ``terminated`` is a subset of ``done``,
    and some ends are truncations (done, not terminated).
    """
    gen = torch.Generator().manual_seed(seed)
    moved = (shape[time_dim], *shape[: time_dim % len(shape)], *shape[time_dim % len(shape) + 1 :])

    def rand(*size: int) -> Tensor:
        return torch.randn(size, generator=gen, dtype=dtype)

    steps = moved[0]
    state_value = rand(*moved)
    done = torch.rand(moved, generator=gen) < done_prob
    terminated = done & (torch.rand(moved, generator=gen) < 0.5)
    next_state_value = torch.cat([state_value[1:], rand(1, *moved[1:])]) if steps else rand(*moved)
    # Where an episode ends, the next state is a fresh one (a reset follows).
    next_state_value = torch.where(done, rand(*moved), next_state_value)
    if independent_next_value:
        next_state_value = rand(*moved)
    data = {
        "state_value": state_value,
        "next_state_value": next_state_value,
        "reward": rand(*moved),
        "done": done,
        "terminated": terminated,
        "log_pi": rand(*moved) * 0.5 - 1.0,
        "log_mu": rand(*moved) * 0.5 - 1.0,
    }
    return {key: value.movedim(0, time_dim) for key, value in data.items()}


@pytest.fixture
def make_trajectory() -> Callable[..., Trajectory]:
    return _trajectory
