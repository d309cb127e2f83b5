"""Replay buffers: a storage, a sampler and a writer behind one object."""

from rl_buffers.replay_buffers.ensemble import ReplayBufferEnsemble
from rl_buffers.replay_buffers.her import HERReplayBuffer, HindsightStrategy
from rl_buffers.replay_buffers.offline_to_online import OfflineToOnlineReplayBuffer
from rl_buffers.replay_buffers.prefill import prefill_replay_buffer
from rl_buffers.replay_buffers.prioritized import PrioritizedReplayBuffer
from rl_buffers.replay_buffers.ray_buffer import RayReplayBuffer
from rl_buffers.replay_buffers.remote import RemoteTensorDictReplayBuffer
from rl_buffers.replay_buffers.replay_buffer import ReplayBuffer
from rl_buffers.replay_buffers.tensordict_buffer import TensorDictReplayBuffer
from rl_buffers.replay_buffers.tensordict_prioritized import TensorDictPrioritizedReplayBuffer

__all__ = [
    "OfflineToOnlineReplayBuffer",
    "ReplayBufferEnsemble",
    "HERReplayBuffer",
    "HindsightStrategy",
    "PrioritizedReplayBuffer",
    "RayReplayBuffer",
    "RemoteTensorDictReplayBuffer",
    "ReplayBuffer",
    "TensorDictPrioritizedReplayBuffer",
    "TensorDictReplayBuffer",
    "prefill_replay_buffer",
]
