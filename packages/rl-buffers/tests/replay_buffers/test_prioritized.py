import pytest
import torch

from rl_buffers import LazyTensorStorage, PrioritizedReplayBuffer, RandomSampler


def test_samples_by_priority(chi_square):
    buffer = PrioritizedReplayBuffer(alpha=1.0, beta=0.4, storage=LazyTensorStorage(8))
    index = buffer.extend(torch.arange(8.0))
    priorities = torch.tensor([1.0, 2.0, 3.0, 4.0, 0.0, 1.0, 2.0, 3.0])
    buffer.update_priority(index, priorities)
    data, info = buffer.sample(20_000, return_info=True)
    assert chi_square(torch.bincount(data.long(), minlength=8), priorities + 1e-8)
    assert info["priority_weight"].shape == (20_000,)


def test_defaults_and_errors():
    buffer = PrioritizedReplayBuffer(alpha=0.5, beta=0.5)
    assert buffer.storage.max_size == 1000
    assert buffer.sampler.max_capacity == 1000
    with pytest.raises(TypeError, match="the sampler is built from alpha and beta"):
        PrioritizedReplayBuffer(alpha=0.5, beta=0.5, sampler=RandomSampler())


def test_buffer_refuses_infinite_priorities_and_unwritten_slots():
    # the two reports, through the buffer: +inf made every draw return one item with
    # weight 1; a priority at index 12 with 8 items stored made draws return zero rows
    buffer = PrioritizedReplayBuffer(
        alpha=0.7, beta=0.5, storage=LazyTensorStorage(16), batch_size=64
    )
    buffer.extend(torch.arange(1.0, 9.0).unsqueeze(-1))
    with pytest.raises(ValueError, match="expected finite priorities, got inf"):
        buffer.update_priority(torch.tensor([1]), torch.tensor([float("inf")]))
    with pytest.raises(IndexError, match=r"expected indices in \[0, 8\) \(the items written"):
        buffer.update_priority(torch.tensor([12]), torch.tensor([100.0]))
    data, info = buffer.sample(return_info=True)
    assert bool((data > 0).all())  # no unwritten (zero) row served
    assert len(set(info["index"].tolist())) > 1
