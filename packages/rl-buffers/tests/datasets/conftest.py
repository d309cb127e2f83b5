"""Fixtures of the dataset tests: a hand-written TED rollout."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict


@pytest.fixture
def episodes() -> TensorDict:
    """Episodes of 3 and 2 steps (the second truncated): observations 10, 11, 12 -> 13
    (terminal), then a reset to 20, 21 -> 22 (truncated); a nested entry rides along."""
    obs = torch.tensor([10.0, 11.0, 12.0, 20.0, 21.0]).unsqueeze(-1)
    next_obs = torch.tensor([11.0, 12.0, 13.0, 21.0, 22.0]).unsqueeze(-1)
    terminated = torch.tensor([False, False, True, False, False]).unsqueeze(-1)
    truncated = torch.tensor([False, False, False, False, True]).unsqueeze(-1)
    false = torch.zeros(5, 1, dtype=torch.bool)
    return TensorDict(
        {
            "observation": obs,
            "pixels": {"a": obs.expand(5, 3).clone().to(torch.uint8)},
            "action": torch.arange(5).unsqueeze(-1),
            "done": false,
            "terminated": false.clone(),
            "truncated": false.clone(),
            "next": {
                "observation": next_obs,
                "pixels": {"a": next_obs.expand(5, 3).clone().to(torch.uint8)},
                "reward": torch.arange(5.0).unsqueeze(-1) / 10,
                "done": terminated | truncated,
                "terminated": terminated,
                "truncated": truncated,
            },
        },
        [5],
    )
