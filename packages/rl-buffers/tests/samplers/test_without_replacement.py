import pytest
import torch

from rl_buffers import LazyTensorStorage, SamplerWithoutReplacement


def filled(n, size=100):
    storage = LazyTensorStorage(size)
    storage.set(torch.arange(n), torch.zeros(n, 1))
    return storage


def test_each_epoch_covers_every_item_once():
    storage = filled(23)
    sampler = SamplerWithoutReplacement()
    for _ in range(3):
        seen = []
        while True:
            index, _ = sampler.sample(storage, 5)
            seen += index.tolist()
            if sampler.ran_out:
                break
        assert sorted(seen) == list(range(23))  # no repeat, nothing missed
        assert len(seen) == 23


def test_drop_last_and_no_shuffle():
    storage = filled(7)
    sampler = SamplerWithoutReplacement(drop_last=True, shuffle=False)
    assert sampler.sample(storage, 3)[0].tolist() == [0, 1, 2]
    assert sampler.sample(storage, 3)[0].tolist() == [3, 4, 5]
    assert sampler.ran_out
    assert sampler.sample(storage, 3)[0].tolist() == [0, 1, 2]
    with pytest.raises(
        RuntimeError, match="drop_last=True and the buffer holds 7 items, fewer than batch_size=8"
    ):
        sampler.sample(storage, 8)


def test_order_is_uniform_permutation(chi_square):
    storage = filled(6)
    sampler = SamplerWithoutReplacement()
    firsts = torch.zeros(6)
    for _ in range(3000):
        firsts[sampler.sample(storage, 6)[0][0]] += 1
    assert chi_square(firsts, torch.ones(6))


def test_state_round_trip():
    storage = filled(10)
    sampler = SamplerWithoutReplacement()
    sampler.sample(storage, 4)
    other = SamplerWithoutReplacement()
    other.load_state_dict(sampler.state_dict())
    assert torch.equal(other.sample(storage, 4)[0], sampler.sample(storage, 4)[0])
