"""SerialEnv's stepping strategies: chosen once, and the same outputs either way."""

import pytest
import torch

from rl_core.testing import CountingEnv
from rl_envs._accel.gym_group import GymGroupSteps
from rl_envs.batched import SerialEnv
from rl_envs.batched._serial_steps import SubEnvSteps


def _gym_env():
    pytest.importorskip("gymnasium")
    from rl_envs.libs import GymEnv

    return GymEnv("CartPole-v1", categorical_action_encoding=True)


def test_the_strategy_is_chosen_when_the_env_is_built():
    assert isinstance(SerialEnv(2, _gym_env)._steps, GymGroupSteps)
    assert isinstance(SerialEnv(2, _gym_env, vectorize=False)._steps, SubEnvSteps)
    assert isinstance(SerialEnv(2, CountingEnv)._steps, SubEnvSteps)


def test_step_and_maybe_reset_is_the_same_with_either_strategy():
    # A policy-driven loop (step_and_maybe_reset each step, sub-envs finishing at different
    # steps): the vector group's fused path against the sub-env by sub-env path.
    runs = []
    for vectorize in (True, False):
        env = SerialEnv(3, _gym_env, vectorize=vectorize)
        env.set_seed(3)
        root = env.reset()
        steps, roots = [], []
        for t in range(80):
            root.set("action", torch.full((3,), t % 2 if t < 40 else 1, dtype=torch.int64))
            td, root = env.step_and_maybe_reset(root)
            steps.append(td.clone())
            roots.append(root.clone())
        env.close()
        runs.append((torch.stack(steps), torch.stack(roots)))
    (fast_steps, fast_roots), (slow_steps, slow_roots) = runs
    assert fast_steps["next", "done"].sum() >= 3
    assert (fast_steps == slow_steps).all()
    assert (fast_roots == slow_roots).all()


def test_sub_env_steps_reset_only_the_masked_sub_envs():
    env = SerialEnv(3, CountingEnv, create_env_kwargs={"max_count": 50})
    root = env.reset()
    for _ in range(3):
        root.set("action", torch.ones(3, 1, dtype=torch.int64))
        root = env.step_mdp_plan()(env.step(root))
    before = root["observation"].clone()
    assert (before == 3).all()
    root.set("_reset", torch.tensor([[False], [True], [False]]))
    after = env.reset(root)
    assert torch.equal(after["observation"][[0, 2]], before[[0, 2]])
    assert (after["observation"][1] == 0).all()
