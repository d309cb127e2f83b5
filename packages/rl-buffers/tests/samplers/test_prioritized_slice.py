import pytest
import torch
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage, PrioritizedSliceSampler


def setup(lengths, priorities, slice_len=3, strict_length=True):
    ids = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])
    n = ids.numel()
    storage = LazyTensorStorage(64)
    storage.set(torch.arange(n), TensorDict({"episode": ids}, [n]))
    sampler = PrioritizedSliceSampler(
        64, 1.0, 1.0, slice_len=slice_len, traj_key="episode", strict_length=strict_length
    )
    sampler.extend(torch.arange(n))
    sampler.update_priority(torch.arange(n), priorities)
    return storage, sampler, ids


def test_start_distribution_follows_item_priorities(chi_square):
    lengths = [5, 2, 4]
    priorities = torch.tensor([1.0, 2.0, 0.5, 3.0, 1.0, 9.0, 9.0, 2.0, 1.0, 4.0, 1.0])
    storage, sampler, ids = setup(lengths, priorities)
    index, info = sampler.sample(storage, 3 * 8000)
    slices = index.view(-1, 3)
    assert (ids[slices] == ids[slices[:, :1]]).all()
    assert not (ids[slices[:, 0]] == 1).any()  # episode 1 is shorter than slice_len
    # Episode 0 (items 0-4): starts 0, 1, 2; items 3 and 4 map to start 2.
    # Episode 2 (items 7-10): starts 7, 8; items 9 and 10 map to start 8.
    p = priorities + 1e-8
    probs = torch.zeros(11)
    probs[0], probs[1], probs[2] = p[0], p[1], p[2:5].sum()
    probs[7], probs[8] = p[7], p[8:11].sum()
    counts = torch.bincount(slices[:, 0], minlength=11)
    assert chi_square(counts, probs)
    assert not chi_square(counts, (ids != 1).float())
    weights = info["priority_weight"]
    torch.testing.assert_close(weights, (p[index] / p.min()) ** -1.0)


def test_non_strict_short_trajectories():
    storage, sampler, _ids = setup([5, 2], torch.ones(7), slice_len=3, strict_length=False)
    index, info = sampler.sample(storage, 3 * 100)
    assert 200 < index.numel() < 300
    assert info[("next", "truncated")].sum() == 100


def test_dominant_short_trajectory_raises():
    priorities = torch.tensor([1e-9] * 5 + [1e9] * 2)
    storage, sampler, _ = setup([5, 2], priorities)
    with pytest.raises(RuntimeError, match="after 64 draws, items of trajectories shorter"):
        sampler.sample(storage, 3 * 100)


def test_state_round_trip():
    _storage, sampler, _ = setup([5, 4], torch.arange(9.0))
    other = PrioritizedSliceSampler(64, 1.0, 1.0, slice_len=3, traj_key="episode")
    other.load_state_dict(sampler.state_dict())
    assert torch.equal(other.priorities._tree, sampler.priorities._tree)


def test_max_priority_within_buffer_reaches_the_priorities():
    _storage, sampler, _ids = setup([4], torch.tensor([1.0, 6.0, 2.0, 1.0]))
    within = PrioritizedSliceSampler(
        64, 1.0, 1.0, slice_len=2, traj_key="episode", max_priority_within_buffer=True
    )
    within.extend(torch.arange(4))
    within.update_priority(torch.arange(4), torch.tensor([1.0, 6.0, 2.0, 1.0]))
    within.update_priority(torch.tensor([1]), torch.tensor([0.5]))
    assert within.priorities.default_priority == pytest.approx(2.0)
    sampler.update_priority(torch.tensor([1]), torch.tensor([0.5]))
    assert sampler.priorities.default_priority == pytest.approx(6.0)
