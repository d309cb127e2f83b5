"""A small trajectory batch in the TED layout, with mid-batch ends and truncations."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from rl_core.modules import MLP, ValueOperator


def value_net(obs_dim=3, seed=0):
    torch.manual_seed(seed)
    return ValueOperator(MLP(obs_dim, 1, depth=1, num_cells=8), in_keys=["observation"])


def trajectories(batch=(2, 9), obs_dim=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = (*batch, 1)
    done = torch.rand(shape, generator=g) < 0.2
    term = done & (torch.rand(shape, generator=g) < 0.5)
    return TensorDict(
        observation=torch.randn(*batch, obs_dim, generator=g),
        action=torch.randn(*batch, 1, generator=g),
        next=TensorDict(
            observation=torch.randn(*batch, obs_dim, generator=g),
            reward=torch.randn(shape, generator=g),
            done=done,
            terminated=term,
            batch_size=batch,
        ),
        batch_size=batch,
    )
