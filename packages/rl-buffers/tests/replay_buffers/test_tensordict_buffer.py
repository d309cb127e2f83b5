import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyTensorStorage,
    ListStorage,
    PrioritizedSampler,
    SliceSampler,
    TensorDictReplayBuffer,
    TensorStorage,
)


def td(n, start=0):
    obs = torch.arange(start, start + n, dtype=torch.float32).unsqueeze(-1).expand(n, 17).clone()
    return TensorDict(
        {"observation": obs, "action": torch.zeros(n, 6), "next": {"reward": torch.ones(n, 1)}}, [n]
    )


def test_sample_carries_index_and_matches_storage():
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(100), batch_size=16)
    buffer.extend(td(30))
    batch = buffer.sample()
    assert batch.batch_size == torch.Size([16])
    assert torch.equal(batch["observation"][:, 0], batch["index"].float())
    expected = buffer.storage._data[batch["index"]]  # generic TensorDict indexing: the oracle
    assert (batch.exclude("index") == expected.exclude("index")).all()


def test_list_storage_of_tensordicts():
    buffer = TensorDictReplayBuffer(storage=ListStorage(10), batch_size=4)
    buffer.extend(td(6))
    batch = buffer.sample()
    assert batch["observation"].shape == (4, 17)
    assert torch.equal(batch["observation"][:, 0], batch["index"].float())


def test_prioritized_sampler_priorities_from_data_and_update():
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(10), sampler=PrioritizedSampler(10, 1.0, 1.0), batch_size=64
    )
    data = td(4).set("td_error", torch.tensor([0.0, 0.0, 0.0, 1.0]))
    buffer.extend(data)
    assert set(buffer.sample()["index"].tolist()) == {3}
    batch = buffer.sample()
    assert "priority_weight" in batch.keys()
    batch["td_error"] = torch.zeros(64)
    buffer.update_tensordict_priority(batch)
    data["td_error"] = torch.tensor([0.0, 2.0, 0.0, 0.0])
    buffer.update_tensordict_priority(data)  # extend wrote data["index"]
    assert set(buffer.sample()["index"].tolist()) == {1}
    with pytest.raises(KeyError, match="has no 'td_error' entry"):
        buffer.update_tensordict_priority(td(2).set("index", torch.arange(2)))


def test_slice_sampler_marks_slice_ends():
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(50), sampler=SliceSampler(slice_len=4, traj_key="episode")
    )
    buffer.extend(td(20).set("episode", torch.arange(20) // 10))
    batch = buffer.sample(12)
    assert batch["next", "truncated"].view(3, 4)[:, -1].all()


def test_ndim_two_index_and_priorities():
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(40, ndim=2), sampler=PrioritizedSampler(40, 1.0, 0.5)
    )
    data = TensorDict({"x": torch.arange(12.0).view(3, 4)}, [3, 4])
    assert buffer.extend(data).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    batch = buffer.sample(10)
    assert batch["index"].shape == (10, 2)
    assert torch.equal(batch["x"], (batch["index"][:, 0] * 4 + batch["index"][:, 1]).float())
    everything = buffer.storage.get(torch.arange(12))
    everything["index"] = torch.stack(buffer.storage.unravel(torch.arange(12)), -1)
    everything["td_error"] = (everything["x"] == 5).float()
    buffer.update_tensordict_priority(everything)
    assert set(buffer.sample(50)["x"].tolist()) == {5.0}


def test_directory_of_memory_mapped_data(tmp_path):
    td(12).memmap(tmp_path)
    buffer = TensorDictReplayBuffer(
        storage=TensorStorage(TensorDict.load_memmap(tmp_path)), batch_size=5
    )
    assert len(buffer) == 12
    batch = buffer.sample()
    assert torch.equal(batch["observation"][:, 0], batch["index"].float())


def test_add_one_row_of_a_two_dim_storage():
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(8, ndim=2), sampler=PrioritizedSampler(8, 1.0, 1.0)
    )
    buffer.extend(TensorDict({"x": torch.zeros(1, 4)}, [1, 4]))
    buffer.update_priority(torch.arange(4), torch.zeros(4))
    buffer.add(TensorDict({"x": torch.ones(4)}, [4]))  # row 1: items 4-7 at max priority
    assert len(buffer) == 8
    assert set(buffer.sample(64)["x"].tolist()) == {1.0}


class _OwnRead(TensorDictReplayBuffer):
    def _read(self, index, info):
        return super()._read(index, info)


@pytest.mark.parametrize("prioritized", [False, True])
def test_sample_without_batch_size_gives_what_the_generic_layers_give(prioritized):
    # sample() of the buffer's batch size goes straight to the sampler and _read; an
    # explicit batch size, a subclass's _read and a transform take ReplayBuffer's layers:
    # the same draws give the same batch and info
    from rl_core.transforms import Transform

    class Scale(Transform):
        def _call(self, data):
            return data.set("observation", data["observation"] * 2)

    def buffer(cls=TensorDictReplayBuffer):
        sampler = PrioritizedSampler(64, 0.7, 0.5) if prioritized else None
        out = cls(storage=LazyTensorStorage(64), sampler=sampler, batch_size=8)
        out.extend(td(40))
        if prioritized:
            out.update_priority(torch.arange(40), torch.arange(40.0))
        return out

    direct, generic, own_read = buffer(), buffer(), buffer(_OwnRead)
    assert direct._direct
    assert not own_read._direct
    for _ in range(3):
        state = torch.get_rng_state()
        batch, info = direct.sample(return_info=True)
        for other in (lambda: generic.sample(8, return_info=True), own_read.sample):
            torch.set_rng_state(state)
            out = other()
            other_batch, other_info = out if isinstance(out, tuple) else (out, None)
            assert set(batch.keys(True, True)) == set(other_batch.keys(True, True))
            assert (batch == other_batch).all()
            if other_info is not None:
                assert info.keys() == other_info.keys()
                assert all(torch.equal(info[k], other_info[k]) for k in info)
    direct.append_transform(Scale())
    torch.set_rng_state(state)
    scaled = direct.sample()
    assert torch.equal(scaled["observation"], batch["observation"] * 2)


@pytest.mark.parametrize("storage", [LazyTensorStorage(6), ListStorage(6)], ids=["tensor", "list"])
def test_episode_items_carry_an_index_over_their_steps(storage):
    # TorchRL writes "index" expanded over the items' own batch dims ([E] -> [E, T]).
    steps = torch.arange(4.0)
    data = TensorDict({"obs": torch.arange(3.0).unsqueeze(-1) * 10 + steps}, [3, 4])
    buffer = TensorDictReplayBuffer(storage=storage, batch_size=2)
    buffer.extend(data)
    assert data["index"].tolist() == [[0] * 4, [1] * 4, [2] * 4]
    single = TensorDict({"obs": 30 + steps}, [4])
    buffer.add(single)
    assert single["index"].tolist() == [3] * 4
    batch = buffer.sample()
    assert batch.batch_size == (2, 4)
    assert batch["index"].shape == (2, 4)
    for index, obs in zip(batch["index"][:, 0], batch["obs"]):
        assert torch.equal(obs, 10 * index.float() + steps)


def test_include_info_false_leaves_the_info_out_of_the_batch():
    # TorchRL's include_info: None/True write "index" (and the weights) into the batch
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(10), sampler=PrioritizedSampler(10, 1.0, 1.0), batch_size=4
    )
    rb.extend(td(10))
    for flag in (None, True):
        batch = rb.sample(include_info=flag)
        assert {"index", "priority_weight"} <= set(batch.keys())
    bare, info = rb.sample(include_info=False, return_info=True)
    assert "index" not in bare.keys()
    assert "priority_weight" not in bare.keys()
    assert info["index"].shape == (4,)
    assert (bare["observation"] == rb.storage.get(info["index"])["observation"]).all()
