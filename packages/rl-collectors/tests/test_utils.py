import pytest
import torch
from tensordict import TensorDict

from rl_collectors import split_trajectories


def batch_with(ids=None, done=None, shape=(2, 4)):
    td = TensorDict(obs=torch.arange(8.0).reshape(shape) + 1, batch_size=shape)
    if ids is not None:
        td.set(("collector", "traj_ids"), ids)
    if done is not None:
        td.set(("next", "done"), done.unsqueeze(-1))
    return td


def test_split_by_trajectory_ids_cuts_at_row_ends():
    ids = torch.tensor([[0, 0, 2, 2], [1, 1, 1, 1]])
    out = split_trajectories(batch_with(ids=ids))
    assert out.batch_size == torch.Size([3, 4])
    assert out["collector", "mask"].sum(-1).tolist() == [2, 2, 4]
    assert out["obs"].tolist() == [[1, 2, 0, 0], [3, 4, 0, 0], [5, 6, 7, 8]]


def test_split_by_done_flags():
    done = torch.tensor([[False, False, False, False], [True, False, True, False]])
    out = split_trajectories(batch_with(done=done))
    assert out["collector", "mask"].sum(-1).tolist() == [4, 1, 2, 1]
    assert out["obs"][2].tolist() == [6.0, 7.0, 0.0, 0.0]


def test_ids_win_over_done_flags():
    ids = torch.zeros(2, 4, dtype=torch.int64)
    done = torch.ones(2, 4, dtype=torch.bool)
    out = split_trajectories(batch_with(ids=ids, done=done))
    assert out.batch_size == torch.Size([2, 4])


def test_errors():
    with pytest.raises(KeyError, match="found neither"):
        split_trajectories(batch_with())
    with pytest.raises(ValueError, match="expected a TensorDict with a time dim"):
        split_trajectories(TensorDict(obs=torch.zeros(()), batch_size=[]))
