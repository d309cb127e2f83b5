import pytest
import torch

from rl_buffers import LazyTensorStorage, RandomSampler, Sampler
from rl_buffers.samplers.sampler import check_batch_size


def test_base_contract():
    sampler = Sampler()
    with pytest.raises(NotImplementedError):
        sampler.sample(LazyTensorStorage(2), 1)
    with pytest.raises(RuntimeError, match="Sampler has no priorities; use a PrioritizedSampler"):
        sampler.update_priority(torch.tensor([0]), torch.tensor([1.0]))
    assert not sampler.ran_out
    assert not sampler.supports_epochs
    assert sampler.state_dict() == {}


def test_empty_storage_and_bad_batch_size():
    with pytest.raises(
        RuntimeError, match=r"RandomSampler\.sample: Cannot sample from an empty storage"
    ):
        RandomSampler().sample(LazyTensorStorage(2), 1)
    with pytest.raises(ValueError, match="expected batch_size to be a positive int, got 0"):
        check_batch_size("here", 0)
