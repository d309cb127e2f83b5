import torch

from rl_buffers import LazyTensorStorage, RandomSampler


def test_uniform_over_stored_items(chi_square):
    storage = LazyTensorStorage(100)
    storage.set(torch.arange(20), torch.zeros(20, 1))
    index, info = RandomSampler().sample(storage, 20_000)
    assert info == {}
    assert int(index.min()) >= 0
    assert int(index.max()) < 20
    counts = torch.bincount(index, minlength=20)
    assert chi_square(counts, torch.ones(20))
    # The check has power: the same counts do not fit a skewed distribution.
    assert not chi_square(counts, torch.linspace(1, 2, 20))
