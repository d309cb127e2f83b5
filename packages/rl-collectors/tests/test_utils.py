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
    # No "collector" entry: TorchRL writes the mask and the ids it computed at the root.
    assert "collector" not in out.keys()
    assert out["mask"].tolist() == [
        [True, True, True, True],
        [True, False, False, False],
        [True, True, False, False],
        [True, False, False, False],
    ]
    assert out["traj_ids"].tolist() == [[0, 0, 0, 0], [1, 0, 0, 0], [2, 2, 0, 0], [3, 0, 0, 0]]
    assert out["obs"].tolist() == [[1, 2, 3, 4], [5, 0, 0, 0], [6, 7, 0, 0], [8, 0, 0, 0]]


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


def test_prefix_names_where_ids_are_read_and_the_mask_written():
    done = torch.tensor([[False, True, False, False], [False, False, False, True]])
    out = split_trajectories(batch_with(done=done), prefix="collector")
    assert out["collector", "mask"].sum(-1).tolist() == [2, 2, 4]
    assert out["collector", "traj_ids"][:, 0].tolist() == [0, 1, 2]
    td = TensorDict(obs=torch.arange(5.0), batch_size=[5])
    td.set(("meta", "traj_ids"), torch.tensor([4, 4, 4, 9, 9]))
    out = split_trajectories(td, prefix="meta")
    assert out["meta", "mask"].tolist() == [[True, True, True], [True, True, False]]
    assert out["obs"].tolist() == [[0, 1, 2], [3, 4, 0]]
    assert out["meta", "traj_ids"].tolist() == [[4, 4, 4], [9, 9, 0]]


def test_trajectory_key_puts_the_mask_beside_it():
    td = TensorDict(obs=torch.arange(4.0), batch_size=[4])
    td.set(("a", "episode"), torch.tensor([0, 1, 1, 1]))
    td.set(("next", "done"), torch.zeros(4, 1, dtype=torch.bool))  # ids win over done
    out = split_trajectories(td, trajectory_key=("a", "episode"))
    assert out["a", "mask"].tolist() == [[True, False, False], [True, True, True]]
    assert out["obs"].tolist() == [[0, 0, 0], [1, 2, 3]]
    out = split_trajectories(td.set("episode", td["a", "episode"]), trajectory_key="episode")
    assert out["mask"].sum(-1).tolist() == [1, 3]


def test_done_key_is_read_under_next():
    td = TensorDict(obs=torch.arange(4.0), batch_size=[4])
    td.set(("next", "terminated"), torch.tensor([[False], [False], [True], [False]]))
    for done_key in ("terminated", ("next", "terminated")):
        out = split_trajectories(td, done_key=done_key)
        assert out["mask"].sum(-1).tolist() == [3, 1]


def test_as_nested_gives_one_component_per_trajectory():
    ids = torch.tensor([[0, 0, 2, 2], [1, 1, 1, 1]])
    td = batch_with(ids=ids)
    td.set(("next", "obs"), td["obs"] * 10)
    nested = split_trajectories(td, as_nested=True)
    assert nested.batch_size == torch.Size([3, -1])
    assert nested["next", "obs"].is_nested
    assert [t.tolist() for t in nested["obs"].unbind(0)] == [[1, 2], [3, 4], [5, 6, 7, 8]]
    assert [t.tolist() for t in nested["next", "obs"].unbind(0)] == [
        [10, 20],
        [30, 40],
        [50, 60, 70, 80],
    ]
    assert [t.tolist() for t in nested["collector", "traj_ids"].unbind(0)] == [
        [0, 0],
        [2, 2],
        [1, 1, 1, 1],
    ]
    padded = split_trajectories(td, as_nested=torch.strided).to_padded_tensor(
        mask_key=("collector", "mask")
    )
    assert (padded == split_trajectories(td)).all()


def test_as_nested_from_done_flags_carries_the_ids():
    done = torch.tensor([False, True, False]).unsqueeze(-1)
    td = TensorDict(
        obs=torch.arange(3.0), next=TensorDict(done=done, batch_size=[3]), batch_size=[3]
    )
    nested = split_trajectories(td, as_nested=True)
    assert [t.tolist() for t in nested["traj_ids"].unbind(0)] == [[0, 0], [1]]
    assert "mask" not in nested.keys()


def test_as_nested_errors():
    td = batch_with(ids=torch.zeros(2, 4, dtype=torch.int64))
    with pytest.raises(TypeError, match=r"as_nested must be a bool or a torch\.layout, got 'yes'"):
        split_trajectories(td, as_nested="yes")
    with pytest.raises(ValueError, match=r"as_nested=torch\.jagged is not supported"):
        split_trajectories(td, as_nested=torch.jagged)
