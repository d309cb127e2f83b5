import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyTensorStorage,
    ListStorage,
    StalenessAwareSampler,
    TensorDictReplayBuffer,
)


def versioned(versions, key="policy_version"):
    versions = torch.as_tensor(versions)
    return TensorDict({key: versions, "obs": torch.arange(len(versions))}, [len(versions)])


def test_draws_follow_one_over_staleness_plus_one_below_the_cutoff(chi_square):
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(10),
        sampler=StalenessAwareSampler(max_staleness=3),
        batch_size=4000,
        generator=torch.Generator().manual_seed(0),
    )
    buffer.extend(versioned([0, 1, 2, 3, 4, 5]))
    buffer.sampler.consumer_version = 5
    batch = buffer.sample()
    counts = torch.bincount(batch["obs"], minlength=6)
    # staleness 5, 4, 3, 2, 1, 0: the first two are cut; weights 1/4, 1/3, 1/2, 1 (float64)
    expected = torch.tensor([0.0, 0.0, 1 / 4, 1 / 3, 1 / 2, 1.0], dtype=torch.float64)
    assert counts[:2].sum() == 0
    assert chi_square(counts, expected)
    assert not chi_square(counts, torch.tensor([0.0, 0.0, 1.0, 1.0, 1.0, 1.0]))
    assert torch.equal(batch["staleness"], 5 - batch["policy_version"])


def test_custom_weight_and_key_and_consumer_version_in_the_state():
    sampler = StalenessAwareSampler(
        staleness_weight_fn=lambda s: (s == 2).double(), version_key=("meta", "v")
    )
    storage = LazyTensorStorage(10)
    data = TensorDict({"meta": {"v": torch.tensor([7, 8, 9])}}, [3])
    storage.set(torch.arange(3), data)
    sampler.consumer_version = 10
    index, _ = sampler.sample(storage, 50)
    assert set(index.tolist()) == {1}  # only staleness 2 has weight
    restored = StalenessAwareSampler()
    restored.load_state_dict(sampler.state_dict())
    assert restored.consumer_version == 10


def test_errors():
    with pytest.raises(ValueError, match="max_staleness to be an int >= -1"):
        StalenessAwareSampler(max_staleness=-2)
    storage = LazyTensorStorage(10)
    storage.set(torch.arange(2), versioned([0, 0]))
    sampler = StalenessAwareSampler(max_staleness=1)
    sampler.consumer_version = 5
    with pytest.raises(ValueError, match="no stored item is fresh enough"):
        sampler.sample(storage, 4)
    bad = StalenessAwareSampler(staleness_weight_fn=lambda s: -s.double())
    bad.consumer_version = 3
    with pytest.raises(ValueError, match="finite non-negative weight per item"):
        bad.sample(storage, 4)
    with pytest.raises(KeyError, match="no entry 'version'"):
        StalenessAwareSampler(version_key="version").sample(storage, 4)
    listed = ListStorage(3)
    listed.set(0, versioned([0]))
    with pytest.raises(TypeError, match="expected a tensor storage of TensorDicts"):
        StalenessAwareSampler().sample(listed, 1)
