"""rl_envs.helpers: TorchRL's env builders of torchrl.trainers.helpers, on real gymnasium envs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from rl_core import InitTracker, StepCounter, TransformedEnv
from rl_envs import (
    CatFrames,
    CatTensors,
    DoubleToFloat,
    EnvCreator,
    GymEnv,
    NoopResetEnv,
    ObservationNorm,
    ParallelEnv,
    RewardScaling,
    VecNorm,
)
from rl_envs.helpers import (
    get_stats_random_rollout,
    parallel_env_constructor,
    transformed_env_constructor,
)

pytest.importorskip("gymnasium", reason='pip install "rl-envs[gymnasium]"')


def _kinds(env: TransformedEnv) -> list[type]:
    return [type(t) for t in env.transform]


def test_state_env_gets_torchrl_transforms_in_order():
    cfg = {"env_name": "Pendulum-v1", "reward_scaling": 0.5, "reward_loc": 1.0, "catframes": 2}
    make = transformed_env_constructor(cfg, stats={"loc": 1.0, "scale": 2.0})
    env = make()
    try:
        assert isinstance(env.base_env, GymEnv)
        assert _kinds(env) == [RewardScaling, CatTensors, ObservationNorm, DoubleToFloat,
                               CatFrames, StepCounter, InitTracker]  # fmt: skip
        env.set_seed(0)
        td = env.rollout(3)
        assert td["observation_vector"].shape == (3, 6)  # 2 frames of Pendulum's 3 features
        # the reward is scaled as r * 0.5 + 1, the observation normalised as (x - 1) / 2
        raw = GymEnv("Pendulum-v1")
        raw.set_seed(0)
        first = raw.reset()
        assert torch.allclose(td[0]["observation_vector"][3:], (first["observation"] - 1) / 2)
        out = raw.step(first.set("action", td[0]["action"]))
        assert torch.allclose(td[0]["next", "reward"], out["next", "reward"] * 0.5 + 1.0)
        raw.close()
    finally:
        env.close()


def test_vecnorm_normalises_reward_unless_obs_only():
    cfg = SimpleNamespace(env_name="Pendulum-v1", vecnorm=True, norm_rewards=True)
    env = transformed_env_constructor(cfg)()
    vecnorm = next(t for t in env.transform if isinstance(t, VecNorm))
    assert list(vecnorm.in_keys) == ["observation_vector", "reward"]
    scaling = next(t for t in env.transform if isinstance(t, RewardScaling))
    assert (float(scaling.loc), float(scaling.scale)) == (0.0, 1.0)  # TorchRL's identity
    env.close()
    env = transformed_env_constructor(cfg, norm_obs_only=True)()
    vecnorm = next(t for t in env.transform if isinstance(t, VecNorm))
    assert list(vecnorm.in_keys) == ["observation_vector"]
    env.close()


def test_options_build_the_env_and_noops():
    cfg = {"env_name": "CartPole-v1", "categorical_action_encoding": True, "noops": 3,
           "frame_skip": 2}  # fmt: skip
    env = transformed_env_constructor(cfg, return_transformed_envs=False)()
    assert isinstance(env.transform, NoopResetEnv)
    assert env.action_spec.shape == ()  # categorical, not one-hot
    env.close()
    created = transformed_env_constructor(cfg, use_env_creator=True)
    assert isinstance(created, EnvCreator)
    env = created()
    assert "observation_vector" in env.observation_spec.keys()
    env.close()


def test_custom_env_and_maker():
    base = GymEnv("CartPole-v1")
    env = transformed_env_constructor({"env_name": "x", "noops": 5}, custom_env=base)()
    assert env.base_env is base
    assert NoopResetEnv not in _kinds(env)
    env.close()
    seen = {}

    def maker(**kwargs):
        seen.update(kwargs)
        return GymEnv("CartPole-v1")

    env = transformed_env_constructor({"env_name": "CartPole-v1"}, custom_env_maker=maker)(a=1)
    assert seen == {"a": 1}
    env.close()
    with pytest.raises(ValueError, match="pass custom_env or custom_env_maker, not both"):
        transformed_env_constructor({}, custom_env=base, custom_env_maker=maker)


@pytest.mark.parametrize(
    ("cfg", "error", "match"),
    [
        ({}, KeyError, "cfg has no 'env_name' setting"),
        ({"env_name": "CartPole-v1", "env_library": "atari"}, ValueError,
         r"cfg.env_library must be one of \['dm_control', 'gym'\], got 'atari'"),
        ({"env_name": "CartPole-v1", "frame_skip": "2"}, TypeError,
         r"cfg.frame_skip must be int, got str \('2'\)"),
        ({"env_name": "CartPole-v1", "vecnorm": 1}, TypeError, "cfg.vecnorm must be bool"),
        ({"env_name": "CartPole-v1", "gSDE": True}, ValueError, "cfg.gSDE is not supported"),
        ({"env_name": "cheetah", "env_library": "dm_control",
          "categorical_action_encoding": True}, ValueError, "works with env_library='gym' only"),
    ],
)  # fmt: skip
def test_bad_settings_are_refused_by_name(cfg, error, match):
    with pytest.raises(error, match=match):
        transformed_env_constructor(cfg)()


def test_parallel_env_constructor_transforms_the_batched_env():
    cfg = {"env_name": "CartPole-v1", "env_per_collector": 2, "batch_transform": True}
    env = parallel_env_constructor(cfg, stats={"loc": 0.0, "scale": 1.0})
    try:
        assert isinstance(env, TransformedEnv)
        assert isinstance(env.base_env, ParallelEnv)
        assert env.batch_size == (2,)
        assert env.rollout(3)["observation_vector"].shape == (2, 3, 4)
    finally:
        env.close()
    one = parallel_env_constructor({**cfg, "env_per_collector": 1})
    assert isinstance(one, EnvCreator)
    with pytest.raises(ValueError, match=r"cfg\.batch_transform must be True"):
        parallel_env_constructor({**cfg, "batch_transform": False})


def test_stats_of_a_random_rollout_match_a_hand_computed_reference():
    env = transformed_env_constructor({"env_name": "Pendulum-v1"}, return_transformed_envs=False)()
    env.set_seed(3)
    torch.manual_seed(3)
    stats = get_stats_random_rollout({"init_env_steps": 40}, env, key="observation")
    # reference: the same seeded rollout, mean and unbiased std per feature by hand
    env.set_seed(3)
    torch.manual_seed(3)
    obs = env.rollout(max_steps=40)["observation"].double()
    n = obs.shape[0]
    mean = obs.sum(0) / n
    std = ((obs - mean).pow(2).sum(0) / (n - 1)).sqrt()
    assert n == 40
    assert torch.allclose(stats["loc"].double(), mean, atol=1e-5)
    assert torch.allclose(stats["scale"].double(), std, atol=1e-5)
    env.close()


def test_stats_of_a_constant_feature_are_identity_and_key_is_inferred():
    stats_cfg = {"env_name": "CartPole-v1"}
    env = transformed_env_constructor(stats_cfg, stats={"loc": 0.0, "scale": 1.0})()
    env.set_seed(0)
    # the step counter over a 3-step rollout is 0, 1, 2: mean 1, unbiased std 1
    stats = get_stats_random_rollout({"init_env_steps": 3}, env, key="step_count")
    assert stats["loc"].tolist() == [1.0]
    assert stats["scale"].tolist() == [1.0]
    # no episode of CartPole terminates in 3 steps: a constant 0, so loc 0 and scale 1
    stats = get_stats_random_rollout({"init_env_steps": 3}, env, key=("next", "terminated"))
    assert stats["loc"].tolist() == [0.0]
    assert stats["scale"].tolist() == [1.0]
    env.close()
    with pytest.raises(ValueError, match="the env has 3 observation entries"):
        get_stats_random_rollout({"env_name": "CartPole-v1", "init_env_steps": 3})
    raw = GymEnv("CartPole-v1")
    assert set(get_stats_random_rollout({"init_env_steps": 3}, raw)) == {"loc", "scale"}
    raw.close()
