import torch
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage, SliceSamplerWithoutReplacement


def storage_of(lengths):
    ids = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])
    storage = LazyTensorStorage(100)
    storage.set(torch.arange(ids.numel()), TensorDict({"episode": ids}, [ids.numel()]))
    return storage, ids


def test_each_trajectory_once_per_epoch():
    storage, ids = storage_of([4, 5, 3, 6, 4, 2, 5])
    sampler = SliceSamplerWithoutReplacement(num_slices=2, traj_key="episode")
    for _ in range(3):
        seen = []
        while True:
            index, _ = sampler.sample(storage, 6)
            episode = ids[index].view(-1, 3)
            assert (episode == episode[:, :1]).all()
            seen += episode[:, 0].tolist()
            if sampler.ran_out:
                break
        assert sorted(seen) == [0, 1, 2, 3, 4, 6]  # episode 5 (2 items) is too short


def test_write_starts_a_new_epoch():
    storage, ids = storage_of([3, 3, 3])
    sampler = SliceSamplerWithoutReplacement(num_slices=1, traj_key="episode", shuffle=False)
    assert ids[sampler.sample(storage, 3)[0]].tolist() == [0, 0, 0]
    sampler.extend(torch.tensor([8]))
    assert ids[sampler.sample(storage, 3)[0]].tolist() == [0, 0, 0]
    assert not sampler.ran_out
