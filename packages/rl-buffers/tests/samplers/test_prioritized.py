import pytest
import torch

from rl_buffers import LazyTensorStorage, PrioritizedSampler


def setup(priorities, alpha=0.7, beta=0.5, capacity=64):
    n = priorities.numel()
    storage = LazyTensorStorage(capacity)
    storage.set(torch.arange(n), torch.zeros(n, 1))
    sampler = PrioritizedSampler(capacity, alpha, beta)
    sampler.extend(torch.arange(n))
    sampler.update_priority(torch.arange(n), priorities)
    return storage, sampler


def test_draws_proportionally_to_priority_power(chi_square):
    priorities = torch.tensor([0.1, 1.0, 2.0, 0.0, 5.0, 3.0, 0.5, 1.5, 4.0, 2.5])
    alpha = 0.7
    storage, sampler = setup(priorities, alpha=alpha)
    index, _ = sampler.sample(storage, 30_000)
    counts = torch.bincount(index, minlength=10)
    expected = (priorities + 1e-8) ** alpha
    assert chi_square(counts, expected)
    assert not chi_square(counts, priorities)  # alpha matters: the check can fail


def test_importance_weights():
    priorities = torch.tensor([1.0, 4.0, 2.0])
    storage, sampler = setup(priorities, alpha=1.0, beta=0.5)
    index, info = sampler.sample(storage, 50)
    p = priorities + 1e-8
    expected = (p[index] / p.min()) ** -0.5
    torch.testing.assert_close(info["priority_weight"], expected)
    assert float(info["priority_weight"].max()) <= 1.0


def test_new_items_get_max_priority():
    storage, sampler = setup(torch.tensor([3.0, 1.0]), alpha=1.0)
    storage.set(torch.arange(2, 3), torch.zeros(1, 1))
    sampler.extend(torch.tensor([2]))
    assert sampler.default_priority == pytest.approx(3.0)
    assert sampler._leaves(3).tolist() == pytest.approx([3.0, 1.0, 3.0])


def test_reduction_of_extra_dims_and_scalar():
    _storage, sampler = setup(torch.ones(4), alpha=1.0)
    sampler.update_priority(torch.tensor([0, 1]), torch.tensor([[1.0, 3.0], [2.0, 0.5]]))
    assert sampler._leaves(2).tolist() == pytest.approx([3.0, 2.0])
    sampler.update_priority(torch.tensor([2, 3]), 7.0)
    assert sampler._leaves(4).tolist()[2:] == pytest.approx([7.0, 7.0])


def test_bad_input():
    storage, sampler = setup(torch.ones(4))
    with pytest.raises(ValueError, match="expected priorities >= 0"):
        sampler.update_priority(torch.tensor([0]), torch.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"expected priorities >= 0.*nan"):
        sampler.update_priority(torch.tensor([0]), torch.tensor([float("nan")]))
    with pytest.raises(IndexError, match=r"expected indices in \[0, 64\)"):
        sampler.update_priority(torch.tensor([64]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="expected 2 priorities for 2 indices, got shape"):
        sampler.update_priority(torch.tensor([0, 1]), torch.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="expected alpha >= 0, got -1"):
        PrioritizedSampler(4, -1, 0.5)
    with pytest.raises(ValueError, match="expected max_capacity >= 1"):
        PrioritizedSampler(0, 1.0, 0.5)
    small = PrioritizedSampler(2, 1.0, 1.0)
    with pytest.raises(RuntimeError, match="holds 4 items but max_capacity is 2"):
        small.sample(storage, 1)


def test_state_round_trip_and_empty():
    _storage, sampler = setup(torch.tensor([1.0, 2.0]))
    other = PrioritizedSampler(64, 0.7, 0.5)
    other.load_state_dict(sampler.state_dict())
    assert torch.equal(other._tree, sampler._tree)
    with pytest.raises(ValueError, match="the saved tree has 64 leaves, this sampler 8"):
        PrioritizedSampler(8, 0.7, 0.5).load_state_dict(sampler.state_dict())
    sampler._empty()
    assert float(sampler._tree.sum()) == 0.0
