"""Transforms composed as training scripts use them, on batched envs."""

import pytest
import torch

from rl_core import Compose, RewardSum, StepCounter, TransformedEnv, check_env_specs
from rl_envs import GymEnv, ParallelEnv
from rl_envs.transforms import (
    CatFrames,
    GrayScale,
    NoopResetEnv,
    Resize,
    RewardClipping,
    ToTensorImage,
)

OBS = ["observation"]


def _atari_pipeline(*, noops: bool) -> Compose:
    transforms = [NoopResetEnv(3)] if noops else []
    transforms += [
        ToTensorImage(in_keys=OBS),
        GrayScale(in_keys=OBS),
        Resize(84, 84, in_keys=OBS),
        CatFrames(4, -3, in_keys=OBS),
        RewardClipping(-1.0, 1.0),
        StepCounter(max_steps=8),
        RewardSum(),
    ]
    return Compose(*transforms)


def _make_pong():
    return TransformedEnv(
        GymEnv("ALE/Pong-v5", frameskip=4, repeat_action_probability=0.0),
        _atari_pipeline(noops=True),
    )


def test_atari_pipeline_in_parallel_env_workers(pong):
    env = ParallelEnv(2, _make_pong)
    try:
        env.set_seed(0)
        check_env_specs(env)
        assert env.observation_spec["observation"].shape == (2, 4, 84, 84)
        traj = env.rollout(10, break_when_any_done=False)
        assert traj["next", "step_count"][:, -1].squeeze(-1).tolist() == [2, 2]
        first = traj["observation"][:, 0]
        assert torch.equal(first, first[:, :1].expand_as(first))  # 4 copies at the start
    finally:
        env.close()


@pytest.mark.slow
def test_atari_pipeline_on_the_parent_of_a_parallel_env(pong):
    base = ParallelEnv(2, lambda: GymEnv("ALE/Pong-v5", frameskip=4, repeat_action_probability=0.0))
    env = TransformedEnv(base, _atari_pipeline(noops=False))
    try:
        env.set_seed(0)
        check_env_specs(env)
        traj = env.rollout(10, break_when_any_done=False)  # StepCounter resets at 8 (partial)
        assert traj["observation"].shape == (2, 10, 4, 84, 84)
        restart = traj["observation"][:, 8]
        assert torch.equal(restart, restart[:, :1].expand_as(restart))
    finally:
        env.close()


def test_generic_transforms_on_a_pixel_env(pong):
    from rl_core import Unbounded
    from rl_envs.transforms import (
        CatTensors,
        ClipTransform,
        DTypeCastTransform,
        FlattenObservation,
        FrameSkipTransform,
        RewardScaling,
        SignTransform,
        TensorDictPrimer,
        TrajCounter,
        VecNorm,
    )

    env = TransformedEnv(
        pong,
        Compose(
            FrameSkipTransform(2),
            DTypeCastTransform(torch.float32, torch.float64, in_keys=["reward"]),
            ToTensorImage(in_keys=OBS),
            Resize(21, 21, in_keys=OBS),
            VecNorm(in_keys=OBS),
            ClipTransform(OBS, low=-3.0, high=3.0),
            FlattenObservation(-3, -1, in_keys=OBS),
            CatTensors(OBS, "vector"),
            RewardScaling(0.0, 0.5),
            SignTransform(["reward"]),
            TensorDictPrimer(hidden=Unbounded(shape=(4,))),
            TrajCounter(),
        ),
    )
    check_env_specs(env)
    traj = env.rollout(4)
    assert traj["vector"].shape == (4, 3 * 21 * 21)
    assert traj["next", "reward"].dtype == torch.float64
    assert traj["vector"].abs().max() <= 3.0
