import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyMemmapStorage,
    LazyTensorStorage,
    OfflineToOnlineReplayBuffer,
    SamplerWithoutReplacement,
    TensorDictReplayBuffer,
)


def offline_dataset(n=50):
    dataset = TensorDictReplayBuffer(
        storage=LazyTensorStorage(n), sampler=SamplerWithoutReplacement()
    )
    dataset.extend(TensorDict({"obs": torch.arange(n, dtype=torch.float32)}, [n]))
    return dataset


def online(n, start=1000):
    return TensorDict({"obs": start + torch.arange(n, dtype=torch.float32)}, [n])


@pytest.mark.parametrize(("fraction", "batch_size"), [(0.5, 10), (0.3, 7), (0.75, 6), (1.0, 4)])
def test_every_batch_holds_exactly_the_rounded_offline_share(fraction, batch_size):
    rb = OfflineToOnlineReplayBuffer(
        offline_dataset(), online_capacity=100, offline_fraction=fraction, batch_size=batch_size
    )
    rb.extend(online(20))
    expected_offline = round(fraction * batch_size)  # Python's round: 2.1 -> 2, 4.5 -> 4
    for _ in range(5):
        batch = rb.sample()
        assert batch.batch_size == torch.Size([batch_size])
        is_offline = batch["obs"] < 1000
        assert int(is_offline.sum()) == expected_offline
        assert bool(is_offline[:expected_offline].all())  # offline items first


def test_empty_online_part_and_annealing_to_zero():
    dataset = offline_dataset()
    rb = OfflineToOnlineReplayBuffer(dataset, online_storage=LazyTensorStorage(100))
    assert (rb.sample(8)["obs"] < 1000).all()  # nothing online yet: all offline
    rb.extend(online(5))
    rb.offline_fraction = 0.0
    assert (rb.sample(8)["obs"] >= 1000).all()
    assert len(rb) == 55
    assert len(dataset) == 50  # never written


def test_memmap_online_storage_and_transform(tmp_path, rename):
    rb = OfflineToOnlineReplayBuffer(
        offline_dataset(),
        online_storage=LazyMemmapStorage(100, scratch_dir=tmp_path),
        transform=rename(in_keys=["obs"], out_keys=["observation"]),
        batch_size=4,
    )
    rb.extend(online(10))
    batch = rb.sample()
    assert "observation" in batch.keys()
    assert (batch["observation"] < 1000).sum() == 2


def test_bad_arguments():
    with pytest.raises(TypeError, match="MinariExperienceReplay"):
        OfflineToOnlineReplayBuffer("minari:mujoco/hopper/expert-v0")
    with pytest.raises(TypeError, match="dataset keyword arguments"):
        OfflineToOnlineReplayBuffer(offline_dataset(), download=True)
    with pytest.raises(ValueError, match="online_storage or online_capacity, not both"):
        OfflineToOnlineReplayBuffer(
            offline_dataset(), online_storage=LazyTensorStorage(3), online_capacity=3
        )
    with pytest.raises(ValueError, match=r"offline_fraction in \[0, 1\], got 1.5"):
        OfflineToOnlineReplayBuffer(offline_dataset(), offline_fraction=1.5)
    rb = OfflineToOnlineReplayBuffer(offline_dataset(), online_capacity=10)
    with pytest.raises(ValueError, match="no batch_size"):
        rb.sample()
    rb.extend(TensorDict({"other": torch.zeros(3)}, [3]))
    with pytest.raises(ValueError, match=r"different entries \(offline only: \['obs'\]"):
        rb.sample(4)
