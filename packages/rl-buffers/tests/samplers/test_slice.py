import pytest
import torch
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage, ListStorage, SliceSampler, TensorDictReplayBuffer


def episodes(lengths, done_last=True):
    ids = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])
    done = torch.zeros(ids.numel(), 1, dtype=torch.bool)
    ends = torch.tensor(lengths).cumsum(0) - 1
    done[ends if done_last else ends[:-1]] = True
    step = torch.cat([torch.arange(n) for n in lengths])
    return TensorDict({"episode": ids, "step": step, "next": {"done": done}}, [ids.numel()])


def filled(lengths, size=100, **kwargs):
    storage = LazyTensorStorage(size)
    data = episodes(lengths, **kwargs)
    storage.set(torch.arange(data.shape[0]), data)
    return storage, data


@pytest.mark.parametrize("keys", [{"traj_key": "episode"}, {"end_key": ("next", "done")}, {}])
def test_slices_stay_inside_one_trajectory(keys):
    storage, data = filled([3, 8, 5, 2, 6])
    sampler = SliceSampler(num_slices=50, **keys)
    index, info = sampler.sample(storage, 150)
    episode = data["episode"][index].view(50, 3)
    step = data["step"][index].view(50, 3)
    assert (episode == episode[:, :1]).all()
    assert (step.diff(dim=1) == 1).all()  # consecutive items of the trajectory
    assert set(episode[:, 0].tolist()) <= {0, 1, 2, 4}  # episode 3 is too short
    truncated = info[("next", "truncated")].view(50, 3)
    assert truncated[:, -1].all()
    assert not truncated[:, :-1].any()


def test_trajectories_and_starts_are_uniform(chi_square):
    lengths = [3, 8, 5]
    storage, _data = filled(lengths)
    index, _ = SliceSampler(slice_len=3, traj_key="episode").sample(storage, 3 * 6000)
    starts = index.view(-1, 3)[:, 0]
    counts = torch.bincount(starts, minlength=16)
    probs = torch.zeros(16)
    offset = 0
    for n in lengths:
        probs[offset : offset + n - 2] = 1 / 3 / (n - 2)
        offset += n
    assert chi_square(counts, probs)
    assert not chi_square(counts, torch.tensor([1.0] * 14 + [0.0, 0.0]))


def test_wrap_around_trajectory_and_write_cursor():
    # Capacity 10; episodes of 3, 5 and 5 items: the last one wraps (rows 8, 9, 0, 1, 2) and
    # is still running (no done on its last item). The oldest item (row 3) starts episode 1.
    for keys in ({"traj_key": "episode"}, {"end_key": ("next", "done")}):
        buffer = TensorDictReplayBuffer(
            storage=LazyTensorStorage(10), sampler=SliceSampler(slice_len=5, **keys)
        )
        data = episodes([3, 5, 5], done_last=False)
        buffer.extend(data[:8])
        buffer.extend(data[8:])
        batch = buffer.sample(5 * 40)
        rows = batch["index"].view(40, 5)
        assert {tuple(r) for r in rows.tolist()} == {(3, 4, 5, 6, 7), (8, 9, 0, 1, 2)}
        assert (batch["episode"].view(40, 5).diff(dim=1) == 0).all()
        assert (batch["step"].view(40, 5) == torch.arange(5)).all()


def test_non_strict_takes_short_trajectories_whole():
    storage, data = filled([2, 6])
    sampler = SliceSampler(num_slices=200, strict_length=False, traj_key="episode")
    index, info = sampler.sample(storage, 200 * 4)
    truncated = info[("next", "truncated")].squeeze(-1)
    assert truncated.sum() == 200  # one end per slice
    assert index.numel() < 800  # slices of episode 0 hold 2 items
    pieces = torch.tensor_split(index, (truncated.nonzero().squeeze(-1) + 1)[:-1].tolist())
    assert {len(p) for p in pieces} == {2, 4}
    assert all(len(set(data["episode"][p].tolist())) == 1 for p in pieces)


def test_cache_is_refreshed_after_writes():
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(50),
        sampler=SliceSampler(slice_len=2, traj_key="episode", cache_values=True),
    )
    buffer.extend(episodes([4]))
    assert buffer.sample(4)["episode"].tolist() == [0, 0, 0, 0]
    more = episodes([4, 4])
    more["episode"] += 1
    buffer.extend(more[4:])
    assert set(buffer.sample(200)["episode"].tolist()) == {0, 2}


def test_bad_input():
    with pytest.raises(ValueError, match="exactly one of num_slices and slice_len"):
        SliceSampler()
    with pytest.raises(ValueError, match="expected slice_len to be a positive int, got 0"):
        SliceSampler(slice_len=0)
    storage, _ = filled([3, 4])
    with pytest.raises(ValueError, match="batch_size=10 is not a multiple of slice_len=3"):
        SliceSampler(slice_len=3).sample(storage, 10)
    with pytest.raises(
        RuntimeError, match="no stored trajectory has slice_len=5 items \\(the longest has 4\\)"
    ):
        SliceSampler(slice_len=5).sample(storage, 10)
    with pytest.raises(KeyError, match="no entry 'traj'"):
        SliceSampler(slice_len=2, traj_key="traj").sample(storage, 4)
    lst = ListStorage(4)
    lst.set(0, 1)
    with pytest.raises(
        TypeError, match="expected a TensorStorage of TensorDicts with ndim=1, got ListStorage"
    ):
        SliceSampler(slice_len=1).sample(lst, 1)


def test_traj_key_is_read_when_end_key_is_given_too():
    # two episodes of 3 by id; the done flags (all False) would make one trajectory of 6
    storage = LazyTensorStorage(10)
    data = TensorDict(
        {
            "episode": torch.tensor([0, 0, 0, 1, 1, 1]),
            "next": {"done": torch.zeros(6, 1, dtype=torch.bool)},
        },
        batch_size=[6],
    )
    storage.set(torch.arange(6), data)
    sampler = SliceSampler(slice_len=3, end_key=("next", "done"), traj_key="episode")
    torch.manual_seed(0)
    index, _ = sampler.sample(storage, 30)
    # a slice of 3 fits each episode only whole: rows 0-2 or 3-5
    assert sorted({tuple(row) for row in index.view(-1, 3).tolist()}) == [(0, 1, 2), (3, 4, 5)]
