import pytest
import torch

from rl_buffers import ConsumingSampler, LazyTensorStorage, ListStorage, ReplayBuffer


def test_each_item_is_returned_max_sample_count_times_until_rewritten():
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(10),
        sampler=ConsumingSampler(max_sample_count=2),
        batch_size=3,
        generator=torch.Generator().manual_seed(0),
    )
    buffer.extend(torch.arange(4))
    drawn = []
    for _ in range(3):
        batch = buffer.sample()
        assert batch.unique().numel() == batch.numel()  # no repeat inside a batch
        drawn += batch.tolist()
    # 4 items x 2 returns = 8: batches of 3, 3, then the 2 left
    assert len(drawn) == 8
    assert sorted(drawn) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert buffer.sampler.num_available == 0
    with pytest.raises(RuntimeError, match="max_sample_count=2 times; write new items"):
        buffer.sample()
    buffer.extend(torch.tensor([40, 50]))  # slots 4, 5: fresh
    assert buffer.sampler.can_sample(buffer.storage, 2)
    assert not buffer.sampler.can_sample(buffer.storage, 3)
    assert sorted(buffer.sample(5).tolist()) == [40, 50]


def test_an_overwritten_slot_is_available_again_and_state_round_trips():
    buffer = ReplayBuffer(storage=ListStorage(2), sampler=ConsumingSampler(), batch_size=2)
    buffer.extend([torch.tensor(0), torch.tensor(1)])
    buffer.sample()
    buffer.add(torch.tensor(7))  # overwrites slot 0
    state = buffer.sampler.state_dict()
    assert buffer.sample().tolist() == [7]
    restored = ConsumingSampler()
    restored.load_state_dict(state)
    assert restored.num_available == 1
    buffer.empty()
    assert buffer.sampler.num_available == 0


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_sample_count to be a positive int, got 0"):
        ConsumingSampler(0)
    storage = LazyTensorStorage(4, ndim=2)
    storage.set(torch.arange(2), torch.zeros(2, 2))
    with pytest.raises(TypeError, match="expected a 1-D storage, got ndim=2"):
        ConsumingSampler().sample(storage, 1)
