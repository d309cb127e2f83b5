import pytest
import torch
from tensordict import TensorDict

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
