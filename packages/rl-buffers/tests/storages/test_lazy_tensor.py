import pytest
import torch
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage, TensorStorage
from rl_core import ops


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


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_storage_with_prioritized_sampling():
    # A CUDA storage gets CUDA trees where rl-kernels' CUDA kernels serve them (draws,
    # indices and weights on the GPU), else CPU trees; priorities and indices from another
    # device are moved to the trees.
    from rl_buffers import TensorDictPrioritizedReplayBuffer

    buffer = TensorDictPrioritizedReplayBuffer(
        alpha=1.0, beta=0.5, storage=LazyTensorStorage(100, device="cuda"), batch_size=8
    )
    compiled = torch._C._dispatch_has_kernel_for_dispatch_key(
        "rl_core::sum_min_tree_priority_update_", "CUDA"
    )
    tree_device = "cuda" if compiled else "cpu"
    assert buffer.sampler._tree.device.type == tree_device
    buffer.extend(batch(20))
    sample = buffer.sample()
    assert sample["obs"].device.type == "cuda"
    if compiled:
        assert sample["priority_weight"].device.type == "cuda"
    index = sample["index"]
    sample.set("td_error", index.float() + 1)  # a priority per item: repeats agree
    buffer.update_tensordict_priority(sample)
    leaves = buffer.sampler._tree[buffer.sampler._capacity :]
    expected = (index.cpu().float() + 1).tolist()
    assert leaves[index.cpu()].tolist() == pytest.approx(expected, rel=1e-6)
    buffer.update_priority(index.cpu(), torch.full((8,), 2.0))
    assert leaves[index.cpu()].tolist() == pytest.approx([2.0] * 8, rel=1e-6)


def transitions(n, start=0, dtype=torch.float32):
    gen = torch.Generator().manual_seed(start)
    return TensorDict(
        {
            "observation": torch.randn(n, 17, generator=gen).to(dtype),
            "action": torch.randn(n, 2, 3, generator=gen).to(dtype),
            "empty": torch.zeros(n, 0),
            "next": {
                "observation": torch.randn(n, 17, generator=gen).to(dtype),
                "reward": torch.randn(n, generator=gen).to(dtype),
                "done": torch.rand(n, 1, generator=gen) < 0.5,
                "terminated": torch.rand(n, 1, generator=gen) < 0.5,
            },
        },
        [n],
    )


@pytest.fixture
def kernels_loaded(monkeypatch):
    # Storages pack their entries where a kernel package serves gather_rows; without one
    # (rl-buffers installed alone) the op's reference kernel serves it, with the same values.
    if not ops.load_kernel_packages():
        monkeypatch.setattr(ops, "load_kernel_packages", lambda: ("reference",))


def test_without_kernel_packages_entries_stay_separate(monkeypatch):
    monkeypatch.setattr(ops, "load_kernel_packages", lambda: ())
    storage = LazyTensorStorage(10)
    storage.set(slice(0, 4), transitions(4))
    assert all(leaf.is_contiguous() for _, leaf in storage._tree.leaves)


def test_cpu_entries_of_one_dtype_are_columns_of_one_table(kernels_loaded):
    storage = LazyTensorStorage(10)
    storage.set(slice(0, 4), transitions(4))
    leaves = dict(storage._tree.leaves)
    floats = [("observation",), ("action",), ("next", "observation"), ("next", "reward")]
    bases = {leaves[key].untyped_storage().data_ptr() for key in floats}
    assert len(bases) == 1  # one table, 41 floats per item
    assert [leaves[key].storage_offset() for key in floats] == [0, 17, 23, 40]
    assert all(leaves[key].stride(0) == 41 for key in floats)
    # the flags take 2 bytes per item: less than a cache line, they stay apart
    for key in [("next", "done"), ("next", "terminated")]:
        assert leaves[key].is_contiguous()
    groups = [
        (table is not None, [i for i, _ in members])
        for table, members in storage._tree.write_groups
    ]
    assert groups == [(True, [0, 1, 2, 3, 4]), (False, [5]), (False, [6])]


def test_packed_storage_reads_and_writes_like_separate_tensors(kernels_loaded):
    # The oracle: a TensorStorage over separate contiguous zero tensors gets the same writes.
    # Writes cover the cat path (slices of float32 batches, one with a step), the per-entry
    # path (float64 batches that need a cast), a wrap-around (tensor index) and a single
    # item.
    packed = LazyTensorStorage(12)
    packed.set(slice(0, 5), transitions(5, 0))
    separate = TensorStorage(transitions(12).apply(torch.zeros_like))
    separate.set(slice(0, 5), transitions(5, 0))
    for storage in (packed, separate):
        storage.set(slice(5, 9), transitions(4, 1, torch.float64))
        storage.set(slice(9, 11), transitions(2, 2))
        storage.set(slice(2, 8, 3), transitions(2, 6))  # a slice with a step
        storage.set(torch.tensor([11, 0, 1]), transitions(3, 3))
        storage.set(4, transitions(1, 4)[0])
    index = torch.tensor([0, 11, 5, 9, 4, 1, 10, 7, 7])
    got, expected = packed.get(index), separate.get(index)
    assert set(got.keys(True, True)) == set(expected.keys(True, True))
    for key, value in expected.items(True, True):
        assert got[key].dtype == value.dtype
        assert got[key].is_contiguous()
        assert torch.equal(got[key], value), key


def test_packed_storage_checkpoints_round_trip(tmp_path, kernels_loaded):
    from rl_buffers import ReplayBuffer

    buffer = ReplayBuffer(storage=LazyTensorStorage(12))
    buffer.extend(transitions(15, 5))  # wraps around
    every = torch.arange(12)
    expected = buffer.storage.get(every)
    buffer.dumps(tmp_path / "ckpt")
    restored = ReplayBuffer(storage=LazyTensorStorage(12))
    restored.loads(tmp_path / "ckpt")
    again = LazyTensorStorage(12)
    again.load_state_dict(buffer.storage.state_dict())
    for storage in (restored.storage, again):
        assert storage._tree.write_groups[0][0] is not None  # packed again
        got = storage.get(every)
        for key, value in expected.items(True, True):
            assert torch.equal(got[key], value), key
