import pytest
import torch
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage


def batch(n, start=0):
    return TensorDict(
        {
            "obs": torch.arange(start, start + n).float().unsqueeze(-1).expand(n, 3).clone(),
            "next": {"reward": torch.ones(n, 1)},
        },
        [n],
    )


def test_allocates_from_first_batch():
    storage = LazyTensorStorage(10)
    assert len(storage) == 0
    assert not storage.initialized
    storage.set(torch.arange(4), batch(4))
    assert storage.initialized
    assert len(storage) == 4
    assert storage._data.batch_size == torch.Size([10])
    assert storage.get(torch.tensor([3]))["obs"].tolist() == [[3.0, 3.0, 3.0]]


def test_mismatched_keys_and_shapes_name_key_and_shapes():
    storage = LazyTensorStorage(10)
    storage.set(torch.arange(2), batch(2))
    bad = batch(2)
    bad["obs"] = torch.zeros(2, 4)
    with pytest.raises(
        ValueError,
        match=r"key 'obs' has per-item shape \(4,\) in the data but \(3,\) in the storage",
    ):
        storage.set(torch.arange(2), bad)
    bad = batch(2).exclude(("next", "reward"))
    with pytest.raises(KeyError, match=r"missing \[\('next', 'reward'\)\], unexpected none"):
        storage.set(torch.arange(2), bad)
    bad = batch(2).set("extra", torch.zeros(2))
    with pytest.raises(KeyError, match=r"missing none, unexpected \['extra'\]"):
        storage.set(torch.arange(2), bad)
    with pytest.raises(TypeError, match="expected a tensor or a TensorDict, got list"):
        storage.set(torch.arange(2), [1, 2])


def test_get_on_empty_storage_raises():
    with pytest.raises(RuntimeError, match="the storage is empty"):
        LazyTensorStorage(3).get(torch.tensor([0]))


def test_ndim_two_rows_and_flat_items():
    storage = LazyTensorStorage(12, ndim=2)
    data = TensorDict({"x": torch.arange(6).view(2, 3)}, [2, 3])
    storage.set(torch.arange(2), data)
    assert storage._data.batch_size == torch.Size([4, 3])
    assert len(storage) == 6
    assert storage.num_rows == 2
    flat = torch.tensor([0, 4, 5])
    assert storage.get(flat)["x"].tolist() == [0, 4, 5]
    multi = storage.unravel(flat)
    assert [m.tolist() for m in multi] == [[0, 1, 1], [0, 1, 2]]
    assert storage.ravel(multi).tolist() == [0, 4, 5]
    assert storage.ravel(flat).tolist() == [0, 4, 5]
    with pytest.raises(ValueError, match=r"batch dims \[\*, 3\] \(ndim=2\), got \(2, 4\)"):
        storage.set(torch.arange(2), TensorDict({"x": torch.zeros(2, 4, dtype=torch.long)}, [2, 4]))
    with pytest.raises(ValueError, match="holds no row of 20 items"):
        LazyTensorStorage(10, ndim=2).rows_for(TensorDict({}, [1, 20]))


def test_device_and_dtype_kept():
    storage = LazyTensorStorage(4, device="cpu")
    storage.set(torch.arange(2), TensorDict({"a": torch.zeros(2, dtype=torch.float64)}, [2]))
    assert storage.get(torch.tensor([0]))["a"].dtype == torch.float64
    assert storage.device == torch.device("cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_storage_samples_on_device():
    from rl_buffers import TensorDictReplayBuffer

    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(100, device="cuda"), batch_size=8)
    buffer.extend(batch(20))  # CPU data, moved to the storage's device
    sample = buffer.sample()
    assert sample["obs"].device.type == "cuda"
    assert torch.equal(sample["obs"][:, 0].cpu(), sample["index"].float().cpu())
