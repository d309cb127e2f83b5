"""rl-envs' replay-buffer transforms in a real rl-buffers buffer fed by a collector:
MultiStepTransform (n-step transitions at the buffer's write) and NextObservationDelta
(deltas from the env, next observations dropped in storage and rebuilt at sampling)."""

import torch

from rl_buffers import LazyTensorStorage, ReplayBuffer
from rl_collectors import SyncDataCollector
from rl_core import Compose, StepCounter, TransformedEnv
from rl_envs import PendulumEnv
from rl_envs.transforms import MultiStepTransform, NextObservationDelta


def _collector(env, frames_per_batch, total_frames):
    return SyncDataCollector(
        env,
        policy=None,
        frames_per_batch=frames_per_batch,
        total_frames=total_frames,
    )


def _reference(reward, done, gamma, n):
    """Discounted n-step sums in float64, restarted after each done, cut at the stream end."""
    out = []
    for t in range(len(reward)):
        total, k = 0.0, 0
        while k < n and t + k < len(reward):
            total += gamma**k * float(reward[t + k])
            k += 1
            if done[t + k - 1]:
                break
        out.append(total)
    return torch.tensor(out, dtype=torch.float64)


def test_multi_step_transform_in_a_buffer_is_blind_to_collector_batches():
    torch.manual_seed(0)
    env = TransformedEnv(PendulumEnv(), StepCounter(max_steps=7))
    env.set_seed(0)
    n, gamma = 3, 0.9
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(100), transform=MultiStepTransform(n_steps=n, gamma=gamma)
    )
    stream = []
    for batch in _collector(env, frames_per_batch=5, total_frames=20):
        stream.append(batch.clone())
        buffer.extend(batch)
    stream = torch.cat(stream, 0)
    assert len(buffer) == 20 - n  # the last n steps wait for the next batch
    stored = buffer[: len(buffer)]
    reward = stream["next", "reward"].squeeze(-1).double()
    done = stream["next", "done"].squeeze(-1).tolist()
    expected = _reference(reward, done, gamma, n)[: 20 - n]
    torch.testing.assert_close(
        stored["next", "reward"].squeeze(-1).double(), expected, rtol=1e-6, atol=1e-5
    )


def test_next_observation_delta_through_a_buffer():
    env = TransformedEnv(
        PendulumEnv(), Compose(StepCounter(max_steps=6), NextObservationDelta(["observation"]))
    )
    env.set_seed(1)
    # The buffer holds a copy (a transform sits in one container at a time).
    buffer = ReplayBuffer(storage=LazyTensorStorage(50), transform=env.transform[-1].clone())
    batches = []
    for batch in _collector(env, frames_per_batch=8, total_frames=16):
        batches.append(batch.clone())
        buffer.extend(batch)
    stored = buffer.storage[:16]  # what storage holds: no full next observation
    assert ("next", "observation") not in stored.keys(include_nested=True)
    assert stored["next", "delta", "observation"].dtype == torch.float16
    sample = buffer[:16]
    truth = torch.cat(batches, 0)["next", "observation"]
    torch.testing.assert_close(sample["next", "observation"], truth, rtol=0, atol=5e-3)
