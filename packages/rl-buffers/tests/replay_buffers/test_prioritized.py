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
