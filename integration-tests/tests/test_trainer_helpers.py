"""TorchRL's torchrl.trainers.helpers builders, each in the package of what it builds, put
together on real gymnasium envs: envs (rl_envs.helpers) -> collector (rl_collectors.helpers)
-> replay buffer (rl_buffers.helpers)."""

from __future__ import annotations

import functools

import pytest
import torch

from rl_buffers.helpers import make_replay_buffer
from rl_collectors import Collector, MultiSyncCollector
from rl_collectors.helpers import make_collector_offpolicy, sync_sync_collector
from rl_envs import GymEnv, ParallelEnv, SerialEnv
from rl_envs.helpers import (
    get_stats_random_rollout,
    parallel_env_constructor,
    transformed_env_constructor,
)

pytest.importorskip("gymnasium", reason='pip install "rl-envs[gymnasium]"')


def test_pendulum_envs_collector_and_buffer_from_one_config(tmp_path):
    cfg = {
        "env_name": "Pendulum-v1", "env_per_collector": 2, "batch_transform": True,
        "num_workers": 2, "frames_per_batch": 20, "total_frames": 40, "init_random_frames": 20,
        "max_frames_per_traj": 50, "seed": 0, "init_env_steps": 30,
        "buffer_size": 100, "batch_size": 8, "buffer_prefetch": 0,
        "buffer_scratch_dir": str(tmp_path),
    }  # fmt: skip
    stats = get_stats_random_rollout(
        cfg, transformed_env_constructor(cfg, return_transformed_envs=False)(), key="observation"
    )
    assert stats["loc"].shape == (3,)
    make_env = functools.partial(parallel_env_constructor, cfg, stats=stats)
    collector = make_collector_offpolicy(make_env, None, cfg)
    buffer = make_replay_buffer("cpu", cfg)
    try:
        assert type(collector) is Collector  # ceil(num_workers / env_per_collector) = 1
        # the collector's StepCounter (max_frames_per_traj) over the transformed ParallelEnv
        assert isinstance(collector.env.base_env.base_env, ParallelEnv)
        frames = 0
        for batch in collector:
            frames += batch.numel()
            # split into trajectories: [n_trajs, T] with a validity mask
            buffer.extend(batch[batch["collector", "mask"]])
        assert frames == 40
        assert len(buffer) == 40
        sample = buffer.sample()
        assert sample["observation_vector"].shape == (8, 3)
        # normalised by the random-rollout statistics: roughly standard
        assert sample["observation_vector"].abs().max() < 10
    finally:
        collector.shutdown()


def test_cartpole_factories_in_batched_envs_per_collector():
    fns = [functools.partial(GymEnv, "CartPole-v1")] * 4
    collector = sync_sync_collector(
        fns, None, num_env_per_collector=2, batched_env=SerialEnv, frames_per_batch=8,
        total_frames=16,
    )  # fmt: skip
    try:
        assert type(collector) is MultiSyncCollector
        assert collector.num_workers == 2
        batches = list(collector)
        assert sum(b.numel() for b in batches) == 16
        assert batches[0]["observation"].shape[-1] == 4
        assert torch.isin(batches[0]["action"].argmax(-1), torch.tensor([0, 1])).all()
    finally:
        collector.shutdown()
