"""Helpers SerialEnv and ParallelEnv share (_meta)."""

import torch

from rl_envs.batched._meta import rows_to_reset


def test_rows_to_reset_merges_the_masks_of_every_level():
    root = torch.tensor([[False], [True], [False]])
    nested = torch.tensor([[False, False], [False, False], [False, True]])
    assert rows_to_reset([root, None, nested], 3).tolist() == [False, True, True]
    assert rows_to_reset([None], 3) is None
    assert rows_to_reset([], 3) is None
