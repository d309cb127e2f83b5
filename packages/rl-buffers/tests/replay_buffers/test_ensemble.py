import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyTensorStorage,
    ListStorage,
    PrioritizedSampler,
    RandomSampler,
    ReplayBuffer,
    ReplayBufferEnsemble,
    RoundRobinWriter,
    SamplerEnsemble,
    StorageEnsemble,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
    WriterEnsemble,
)


def pixels_and_states(n=10):
    pixels = TensorDictReplayBuffer(storage=LazyTensorStorage(100))
    pixels.extend(TensorDict({"pixels": torch.arange(n).view(n, 1, 1).expand(n, 2, 2)}, [n]))
    states = TensorDictReplayBuffer(storage=LazyTensorStorage(100))
    states.extend(TensorDict({"observation": 100 + torch.arange(2 * n).unsqueeze(-1)}, [2 * n]))
    return pixels, states


def test_sample_from_all_stacks_one_sub_batch_per_buffer_with_index_pairs():
    pixels, states = pixels_and_states()
    ensemble = ReplayBufferEnsemble(pixels, states, batch_size=12, sample_from_all=True)
    assert len(ensemble) == 30
    batch = ensemble.sample()
    assert batch.batch_size == torch.Size([2, 6])
    first, second = batch[0], batch[1]
    assert set(first.keys()) == {"pixels", "index"}
    assert set(second.keys()) == {
        "observation",
        "index",
    }
    assert (first["index"][:, 0] == 0).all()
    assert (second["index"][:, 0] == 1).all()
    # the pairs point at the items the sub-batches hold
    assert torch.equal(first["pixels"][:, 0, 0], first["index"][:, 1])
    assert torch.equal(second["observation"][:, 0], 100 + second["index"][:, 1])
    assert (second["index"][:, 1] < 20).all()


def test_buffers_are_drawn_with_probabilities_p(chi_square):
    pixels, states = pixels_and_states()
    ensemble = ReplayBufferEnsemble(
        pixels,
        states,
        batch_size=4,
        p=[1.0, 3.0],
        num_buffer_sampled=1,
        generator=torch.Generator().manual_seed(0),
    )
    counts = torch.zeros(2)
    for _ in range(400):
        info = ensemble.sample(return_info=True)[1]
        counts[info["buffer_ids"]] += 1
    assert chi_square(counts, torch.tensor([0.25, 0.75]))
    assert not chi_square(counts, torch.tensor([0.5, 0.5]))


def test_same_generator_same_batches_and_writes_go_through_each_buffer():
    batches = []
    for _ in range(2):
        pixels, states = pixels_and_states()
        ensemble = ReplayBufferEnsemble(
            pixels, states, batch_size=8, generator=torch.Generator().manual_seed(3)
        )
        batches.append([ensemble.sample()["index"] for _ in range(3)])
        with pytest.raises(RuntimeError, match=r"write into one of its buffers \(ensemble\[i\]"):
            ensemble.extend(TensorDict({"pixels": torch.zeros(1, 2, 2)}, [1]))
        ensemble[1].extend(TensorDict({"observation": torch.zeros(5, 1, dtype=torch.long)}, [5]))
        assert len(ensemble) == 35
        assert len(ensemble[1]) == 25
        assert ensemble[0, 3]["pixels"][0, 0].item() == 3
    assert all(torch.equal(a, b) for a, b in zip(*batches, strict=True))


def test_priorities_route_to_the_buffer_named_in_the_index():
    plain = TensorDictReplayBuffer(storage=LazyTensorStorage(50))
    plain.extend(TensorDict({"x": torch.arange(10.0)}, [10]))
    prioritized = TensorDictPrioritizedReplayBuffer(
        alpha=1.0, beta=1.0, storage=LazyTensorStorage(50)
    )
    prioritized.extend(TensorDict({"x": 100 + torch.arange(10.0)}, [10]))
    ensemble = ReplayBufferEnsemble(plain, prioritized, batch_size=20, sample_from_all=True)
    batch = ensemble.sample()
    assert "priority_weight" in batch[1].keys()  # the buffer's own post-processing ran
    index = torch.stack([torch.ones(10, dtype=torch.long), torch.arange(10)], -1)
    td = TensorDict({"index": index, "td_error": (torch.arange(10) == 4).double()}, [10])
    ensemble.update_tensordict_priority(td)
    batch = ensemble.sample()
    # p = (priority + 1e-8) ** alpha: 1 for item 4 of buffer 1, 1e-8 for the other nine
    assert (batch[1]["x"] == 104).all()
    with pytest.raises(RuntimeError, match="has no priorities"):
        ensemble.update_priority(torch.tensor([[0, 1]]), 1.0)  # buffer 0 has no priorities


def test_transforms_of_each_buffer_then_of_the_ensemble(rename):
    xs = TensorDictReplayBuffer(storage=LazyTensorStorage(100))
    xs.extend(TensorDict({"x": torch.arange(10.0)}, [10]))
    ys = TensorDictReplayBuffer(storage=LazyTensorStorage(100))
    ys.extend(TensorDict({"y": 100 + torch.arange(10.0)}, [10]))
    ys.append_transform(rename(in_keys=["y"], out_keys=["x"]))
    ensemble = ReplayBufferEnsemble(
        xs,
        ys,
        batch_size=4,
        sample_from_all=True,
        transform=rename(in_keys=["x"], out_keys=["data"]),
    )
    batch = ensemble.sample()
    assert set(batch.keys()) == {"data", "index"}
    assert (batch[0]["data"] < 10).all()
    assert (batch[1]["data"] >= 100).all()


def test_built_from_components_with_collate_fns():
    storages = StorageEnsemble(ListStorage(10), ListStorage(10))
    ensemble = ReplayBufferEnsemble(
        storages=storages,
        samplers=SamplerEnsemble(RandomSampler(), RandomSampler(), sample_from_all=True),
        writers=WriterEnsemble(RoundRobinWriter(), RoundRobinWriter()),
        collate_fns=[torch.stack, lambda items: -torch.stack(items)],
        batch_size=6,
    )
    ensemble[0].extend([torch.tensor(1.0)] * 3)
    ensemble[1].extend([torch.tensor(2.0)] * 3)
    batch = ensemble.sample()
    assert batch.tolist() == [[1.0] * 3, [-2.0] * 3]
    assert storages[1] is ensemble[1].storage


def test_checkpoint_round_trip(tmp_path):
    pixels, states = pixels_and_states()
    ensemble = ReplayBufferEnsemble(pixels, states, batch_size=4)
    ensemble.dumps(tmp_path / "ckpt")
    fresh = ReplayBufferEnsemble(
        TensorDictReplayBuffer(storage=LazyTensorStorage(100)),
        TensorDictReplayBuffer(storage=LazyTensorStorage(100)),
        batch_size=4,
    )
    fresh.loads(tmp_path / "ckpt")
    assert len(fresh[0]) == 10
    assert len(fresh[1]) == 20
    assert torch.equal(fresh[1][:]["observation"], states[:]["observation"])
    (tmp_path / "ckpt" / "rb_1" / "buffer.json").unlink()
    with pytest.raises(FileNotFoundError, match="no complete checkpoint of 2 buffers"):
        fresh.loads(tmp_path / "ckpt")
    ensemble.empty()
    assert len(pixels) == len(states) == 0


def test_bad_arguments():
    pixels, states = pixels_and_states()
    with pytest.raises(ValueError, match="p and sample_from_all=True exclude each other"):
        ReplayBufferEnsemble(pixels, states, p=[0.5, 0.5], sample_from_all=True)
    with pytest.raises(
        ValueError, match=r"expected p to hold 2 finite non-negative weights, got \[1.0\]"
    ):
        ReplayBufferEnsemble(pixels, states, p=[1.0])
    with pytest.raises(TypeError, match="expected ReplayBuffer instances, got LazyTensorStorage"):
        ReplayBufferEnsemble(pixels, LazyTensorStorage(3))
    with pytest.raises(ValueError, match="either buffers or storages="):
        ReplayBufferEnsemble(pixels, storages=StorageEnsemble(LazyTensorStorage(3)))
    with pytest.raises(ValueError, match="all of storages=, samplers= and writers="):
        ReplayBufferEnsemble()
    ensemble = ReplayBufferEnsemble(pixels, states, sample_from_all=True)
    with pytest.raises(ValueError, match=r"multiple of num_buffer_sampled=2.*got 5"):
        ensemble.sample(5)
    with pytest.raises(TypeError, match="expected a buffer number or"):
        ensemble["pixels"]
    with pytest.raises(RuntimeError, match="StorageEnsemble is read-only"):
        ensemble.storage.set(0, torch.zeros(1))
    with pytest.raises(TypeError, match="a StorageEnsemble of 2 storages, got LazyTensorStorage"):
        ensemble.sampler.sample(pixels.storage, 4)
    with pytest.raises(TypeError, match="expected Sampler instances, got int"):
        SamplerEnsemble(RandomSampler(), 3)
    with pytest.raises(ValueError, match="expected at least one storage"):
        StorageEnsemble()
    with pytest.raises(TypeError, match="expected Writer instances"):
        WriterEnsemble(PrioritizedSampler(3, 1.0, 1.0))
    empty = ReplayBufferEnsemble(ReplayBuffer(storage=LazyTensorStorage(3)), batch_size=2)
    with pytest.raises(RuntimeError, match="Cannot sample from an empty storage"):
        empty.sample()
