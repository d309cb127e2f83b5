"""TED2Nested / Nested2TED: one nested component per trajectory, and back."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import Nested2TED, TED2Nested


def test_nested_splits_at_each_done_and_joins_back_exactly(tmp_path, episodes):
    ted = episodes
    nested = TED2Nested()(ted, path=tmp_path / "nested")
    assert nested.batch_size == torch.Size([2])
    first, second = nested["observation"].unbind(0)
    assert first.squeeze(-1).tolist() == [10.0, 11.0, 12.0]
    assert second.squeeze(-1).tolist() == [20.0, 21.0]
    assert [t.shape for t in nested["next", "pixels", "a"].unbind(0)] == [(3, 3), (2, 3)]
    assert (Nested2TED()(nested) == ted).all()
    assert (Nested2TED()(TensorDict.load_memmap(tmp_path / "nested")) == ted).all()


def test_an_unfinished_last_trajectory_is_kept(episodes):
    ted = episodes[:4]  # the second episode has not ended
    nested = TED2Nested()(ted)
    assert [t.shape[0] for t in nested["action"].unbind(0)] == [3, 1]
    assert (Nested2TED()(nested) == ted).all()


def test_mismatched_trajectories_are_refused_naming_the_entry(episodes):
    nested = TED2Nested()(episodes)
    bad = TensorDict(
        {"a": nested["action"], "b": torch.nested.nested_tensor([torch.zeros(1), torch.zeros(4)])},
        batch_size=[2],
    )
    with pytest.raises(ValueError, match=r"lengths \[3, 2\].*got \[1, 4\] at 'b'"):
        Nested2TED()(bad)
