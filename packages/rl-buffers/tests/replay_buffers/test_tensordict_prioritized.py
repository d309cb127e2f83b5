import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from rl_buffers import LazyTensorStorage, RandomSampler, TensorDictPrioritizedReplayBuffer


def test_priority_key_and_weights():
    buffer = TensorDictPrioritizedReplayBuffer(
        alpha=1.0, beta=1.0, priority_key="err", storage=LazyTensorStorage(16), batch_size=32
    )
    data = TensorDict({"obs": torch.arange(4.0), "err": torch.tensor([1.0, 1.0, 1.0, 3.0])}, [4])
    buffer.extend(data)
    batch = buffer.sample()
    p = data["err"][batch["index"]] + 1e-8
    torch.testing.assert_close(
        batch["priority_weight"], (p / p.min().clamp(max=1.0 + 1e-8)) ** -1.0
    )
    batch["err"] = torch.full((32,), 2.0)
    buffer.update_tensordict_priority(batch)
    with pytest.raises(TypeError, match="the sampler is built from alpha and beta"):
        TensorDictPrioritizedReplayBuffer(alpha=1.0, beta=1.0, sampler=RandomSampler())


def test_extend_with_update_priority_false_keeps_the_default_priority():
    buffer = TensorDictPrioritizedReplayBuffer(
        alpha=1.0, beta=1.0, priority_key="err", storage=LazyTensorStorage(8)
    )
    data = TensorDict({"obs": torch.arange(2.0), "err": torch.tensor([1.0, 9.0])}, [2])
    buffer.extend(data, update_priority=False)
    # both items at the default priority (1.0): an even draw
    counts = torch.bincount(buffer.sample(4000)["index"], minlength=2)
    assert abs(int(counts[0]) - 2000) < 200
    buffer.extend(data, update_priority=True)
    # items 2 and 3 at 1.0 and 9.0: item 3 drawn 9 / 12 of the time
    counts = torch.bincount(buffer.sample(12000)["index"], minlength=4)
    assert abs(int(counts[3]) - 9000) < 400


def _buffer():
    buffer = TensorDictPrioritizedReplayBuffer(
        alpha=1.0, beta=1.0, storage=LazyTensorStorage(8), batch_size=4
    )
    buffer.extend(TensorDict({"obs": torch.arange(8.0)}, [8]))
    return buffer


def test_update_tensordict_priority_reads_nested_keys_and_lazy_stacks():
    # plain TensorDicts are read through their entry dicts, anything else through get():
    # both must write the same priorities
    plain, lazy = _buffer(), _buffer()
    index = torch.tensor([1, 5, 6])
    priority = torch.tensor([4.0, 0.5, 2.0])
    plain.priority_key = lazy.priority_key = ("extra", "err")
    batch = TensorDict({"index": index, "extra": {"err": priority}}, [3])
    plain.update_tensordict_priority(batch)
    lazy.update_tensordict_priority(LazyStackedTensorDict.lazy_stack(list(batch.unbind(0))))
    expected = [1.0, 4.0, 1.0, 1.0, 1.0, 0.5, 2.0, 1.0]
    assert plain.sampler._leaves(8).tolist() == pytest.approx(expected)
    assert lazy.sampler._leaves(8).tolist() == pytest.approx(expected)


def test_update_tensordict_priority_missing_entries():
    buffer = _buffer()
    with pytest.raises(KeyError, match="the TensorDict has no 'td_error' entry"):
        buffer.update_tensordict_priority(TensorDict({"index": torch.tensor([0])}, [1]))
    with pytest.raises(KeyError, match="the TensorDict has no 'index' entry"):
        buffer.update_tensordict_priority(TensorDict({"td_error": torch.ones(1)}, [1]))


class _OwnUpdate(TensorDictPrioritizedReplayBuffer):
    def update_priority(self, index, priority):
        super().update_priority(index, priority)


def test_update_tensordict_priority_straight_to_the_sampler_as_through_update_priority():
    # a batch's flat indices go straight to the sampler; a subclass's update_priority takes
    # ReplayBuffer's: the same trees, and the same error for an index out of range
    direct = _buffer()
    generic = _OwnUpdate(alpha=1.0, beta=1.0, storage=LazyTensorStorage(8), batch_size=4)
    generic.extend(TensorDict({"obs": torch.arange(8.0)}, [8]))
    assert direct._direct_update
    assert not generic._direct_update
    torch.manual_seed(0)
    for _ in range(5):
        batch = direct.sample()
        batch["td_error"] = torch.rand(4) * 3
        direct.update_tensordict_priority(batch)
        generic.update_tensordict_priority(batch.clone())
        assert torch.equal(direct.sampler._tree, generic.sampler._tree)
        assert torch.equal(direct.sampler._min_tree, generic.sampler._min_tree)
    bad = TensorDict({"index": torch.tensor([3, 9]), "td_error": torch.ones(2)}, [2])
    for buffer in (direct, generic):
        with pytest.raises(IndexError, match=r"expected indices in \[0, 8\)"):
            buffer.update_tensordict_priority(bad)
