"""Issue 39's transforms inside ParallelEnv workers, and the trajectory-side ones on the
collected data."""

import torch

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs import ParallelEnv
from rl_envs.transforms import (
    BatchSizeTransform,
    BinarizeReward,
    ConditionalSkip,
    FiniteTensorDictCheck,
    MultiAction,
    MultiStepTransform,
    NextObservationDelta,
    RandomCropTensorDict,
    RemoveEmptySpecs,
    Stack,
    TargetReturn,
)


def _make_env():
    return TransformedEnv(
        CountingEnv(max_count=6),
        Compose(
            TargetReturn(10.0),
            BinarizeReward(),
            FiniteTensorDictCheck(),
            Stack(["observation", "target_return"], "stacked", del_keys=False),
            RemoveEmptySpecs(),
        ),
    )


def test_transforms_run_in_parallel_env_workers():
    # MultiAction goes outside the workers (their buffers follow the specs, whose chunks have
    # length 1): the workers run at each inner step, NextObservationDelta once per chunk.
    env = TransformedEnv(
        ParallelEnv(2, _make_env),
        Compose(MultiAction(), NextObservationDelta(in_keys=["observation"])),
    )
    try:
        check_env_specs(env)
        assert env.observation_spec["stacked"].shape == (2, 1, 2)
        assert env.base_env.observation_spec["target_return"].shape == (2, 1)
        chunks = torch.ones(2, 2, 1, dtype=torch.int64)  # two actions per step
        traj = env.rollout(4, lambda td: td.set("action", chunks), break_when_any_done=False)
    finally:
        env.close()
    # Counts 2, 4, 6 (episode end), then 2 again after the reset.
    assert traj["next", "observation"][0].squeeze(-1).tolist() == [2.0, 4.0, 6.0, 2.0]
    # Stacked binarized rewards (1 per inner step), target 10 minus the chunk's rewards.
    assert traj["next", "reward"].dtype == torch.int8
    assert traj["next", "reward"].shape == (2, 4, 2, 1)
    assert traj["next", "target_return"][0].squeeze(-1).tolist() == [8.0, 6.0, 4.0, 8.0]
    assert traj["next", "delta", "observation"][0].squeeze(-1).tolist() == [2.0, 2.0, 2.0, 2.0]
    assert torch.equal(traj["next", "stacked"][..., 0], traj["next", "observation"])
    # The buffer side on the collected data: 2-step transitions, then random windows of 2.
    data = traj.exclude(("next", "reward")).set(
        ("next", "reward"), traj["next", "reward"].sum(-2).float()
    )
    out = MultiStepTransform(n_steps=2, gamma=0.5).inv(data)
    assert out["next", "reward"][0].squeeze(-1).tolist() == [3.0, 3.0]  # 2 + 0.5 * 2; 2 (end)
    assert RandomCropTensorDict(2)(traj).batch_size == (2, 2)


def _make_skipping_env():
    skipping = TransformedEnv(
        CountingEnv(max_count=100), ConditionalSkip(lambda td: td["step_count"] % 2 == 1)
    )
    return TransformedEnv(skipping, StepCounter())


def test_conditional_skip_in_workers_and_batch_size_on_the_parent():
    env = TransformedEnv(
        ParallelEnv(2, _make_skipping_env),
        BatchSizeTransform(reshape_fn=lambda x: x.unsqueeze(-1)),
    )
    try:
        check_env_specs(env)
        assert env.batch_size == (2, 1)
        traj = env.rollout(4, lambda td: td.set("action", torch.ones(2, 1, 1, dtype=torch.int64)))
    finally:
        env.close()
    assert traj.batch_size == (2, 1, 4)
    assert traj["next", "observation"][:, 0].squeeze(-1).tolist() == [[1.0, 1.0, 2.0, 2.0]] * 2
