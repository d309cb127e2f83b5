"""rl-objectives' ReplayBufferTrainer with rl-buffers' buffers: priorities go back to a
prioritized sampler only; a uniform buffer trains without a priority update (it refuses one)."""

import torch
from tensordict import TensorDict

from rl_buffers import LazyTensorStorage, PrioritizedSampler, TensorDictReplayBuffer
from rl_objectives.trainers import ReplayBufferTrainer


def data(n=8):
    return TensorDict(x=torch.arange(n, dtype=torch.float32), batch_size=[n])


def test_uniform_buffer_gets_no_priority_update():
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(8))
    hook = ReplayBufferTrainer(buffer, 4)
    hook.extend(data())
    sample = hook.sample(None)
    hook.update_priority(sample.set("td_error", torch.ones(4)))  # raised before the fix


def test_prioritized_buffer_gets_the_loss_priorities():
    torch.manual_seed(0)
    sampler = PrioritizedSampler(8, alpha=1.0, beta=1.0)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(8), sampler=sampler)
    hook = ReplayBufferTrainer(buffer, 8)
    hook.extend(data())
    sample = hook.sample(None)
    # Item 3 gets all the priority: with alpha = 1 it is then drawn (almost) every time.
    priority = torch.where(sample["index"] == 3, 1e6, 0.0)
    hook.update_priority(sample.set("td_error", priority))
    drawn = hook.sample(None)["x"]
    assert (drawn == 3).float().mean() > 0.9
