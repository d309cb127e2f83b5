"""MultiThreadedEnv / MultiThreadedEnvWrapper on EnvPool's CartPole and Pendulum."""

import warnings

import numpy as np
import pytest
import torch

from rl_core.envs import check_env_specs
from rl_core.testing import EnvConformanceSuite
from rl_envs import MultiThreadedEnv, MultiThreadedEnvWrapper

from ._batched_checks import ParallelEnv, SerialEnv, check_batched_rollouts

envpool = pytest.importorskip("envpool", reason='pip install "rl-envs[envpool]"')
pytestmark = pytest.mark.filterwarnings("ignore:.*precision lowered.*:UserWarning")


class TestCartPole(EnvConformanceSuite):
    def make_env(self):
        return MultiThreadedEnv(3, "CartPole-v1", create_env_kwargs={"max_episode_steps": 20})


class TestPendulumCategorical(EnvConformanceSuite):
    def make_env(self):
        return MultiThreadedEnv(2, "Pendulum-v1", categorical_action_encoding=True)


def test_steps_match_envpool_and_no_autoreset_step_leaks():
    env = MultiThreadedEnv(
        2,
        "CartPole-v1",
        categorical_action_encoding=True,
        seed=4,
        create_env_kwargs={"max_episode_steps": 6},
    )
    ref = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=2, seed=4, max_episode_steps=6)
    traj = env.rollout(
        14, lambda td: td.set("action", torch.ones(2, dtype=torch.int64)), break_when_any_done=False
    )
    obs, _ = ref.reset()
    np.testing.assert_array_equal(traj["observation"][:, 0].numpy(), obs)
    for t in range(6):
        obs, *_ = ref.step(np.ones(2, dtype=np.int64))
        np.testing.assert_array_equal(traj["next", "observation"][:, t].numpy(), obs)
    ref.close()
    env.close()
    # Every step is a real transition (reward 1): EnvPool's reset step never appears.
    assert traj["next", "reward"].eq(1).all()
    # The 6-step limit truncates each episode (or the pole falls first).
    done = traj["next", "done"].squeeze(-1)
    assert done[:, :6].any(-1).all()
    assert (traj["next", "terminated"] | traj["next", "truncated"]).eq(traj["next", "done"]).all()


def test_set_seed_gives_sub_env_i_seed_plus_i():
    env = MultiThreadedEnv(2, "CartPole-v1")
    env.set_seed(9)
    first = env.reset()["observation"]
    single = MultiThreadedEnv(1, "CartPole-v1", seed=10)
    torch.testing.assert_close(first[1:], single.reset()["observation"])
    env.set_seed(9)
    torch.testing.assert_close(env.reset()["observation"], first)
    single.close()
    env.close()


def test_wrapper_and_one_hot_actions():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=3, seed=0)
    env = MultiThreadedEnvWrapper(pool)
    assert env.action_spec.shape == (3, 2)
    check_env_specs(env)
    traj = env.rollout(5, break_when_any_done=False)
    assert traj.batch_size == (3, 5)
    assert traj["action"].sum(-1).eq(1).all()
    env.close()


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="unknown EnvPool task 'CartPole-v9'"):
        MultiThreadedEnv(2, "CartPole-v9")
    with pytest.raises(ValueError, match="expected num_workers to be an int >= 1, got 0"):
        MultiThreadedEnv(0, "CartPole-v1")
    with pytest.raises(TypeError, match="expected an EnvPool env"):
        MultiThreadedEnvWrapper(object())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=4, batch_size=2)
    try:
        with pytest.raises(ValueError, match="expected a synchronous pool"):
            MultiThreadedEnvWrapper(pool)
    finally:
        pool.close()  # its threads must not be running when a ParallelEnv forks


@pytest.mark.parametrize("batched", [SerialEnv, ParallelEnv])
def test_serial_and_parallel_envs(batched):
    check_batched_rollouts(lambda: MultiThreadedEnv(2, "CartPole-v1"), batched)


def _pong(frame_skip, **kwargs):
    return MultiThreadedEnv(
        2,
        "Pong-v5",
        categorical_action_encoding=True,
        seed=1,
        create_env_kwargs={"frame_skip": frame_skip, "stack_num": 1, "noop_max": 1, **kwargs},
    )


def test_atari_frame_skip_passes_through_to_envpool():
    # Actions 2 and 3 (up, down) move the paddle, so skipped frames change what is seen.
    actions = torch.tensor([[2, 3], [3, 2], [2, 2], [3, 3], [2, 3], [3, 2]])
    env = _pong(3)
    try:
        assert env.env.spec.config.frame_skip == 3
        env.set_seed(1)  # rebuilds the pool: the kwargs stay
        assert env.env.spec.config.frame_skip == 3
        assert env.env.spec.config.stack_num == 1
        assert env.observation_spec["observation"].shape == (2, 1, 84, 84)
        steps = iter(actions)
        traj = env.rollout(6, lambda td: td.set("action", next(steps)), break_when_any_done=False)
    finally:
        env.close()
    ref = envpool.make(
        "Pong-v5", env_type="gymnasium", num_envs=2, seed=1, frame_skip=3, stack_num=1, noop_max=1
    )
    try:
        obs, _ = ref.reset()
        np.testing.assert_array_equal(traj["observation"][:, 0].numpy(), obs)
        for t in range(6):
            obs, reward, *_ = ref.step(actions[t].numpy())
            np.testing.assert_array_equal(traj["next", "observation"][:, t].numpy(), obs)
            np.testing.assert_array_equal(traj["next", "reward"][:, t, 0].numpy(), reward)
    finally:
        ref.close()
    single = _pong(1)
    try:
        steps = iter(actions)
        unskipped = single.rollout(
            6, lambda td: td.set("action", next(steps)), break_when_any_done=False
        )
    finally:
        single.close()
    # Three emulator frames per action, not one: the same actions end elsewhere.
    assert not torch.equal(unskipped["next", "observation"], traj["next", "observation"])


def test_create_env_kwargs_the_task_does_not_take_raise():
    with pytest.raises(ValueError, match=r"'CartPole-v1' does not take create_env_kwargs"):
        MultiThreadedEnv(2, "CartPole-v1", create_env_kwargs={"frame_skip": 4})
    with pytest.raises(ValueError, match=r"may not set \['num_envs'\]"):
        MultiThreadedEnv(2, "CartPole-v1", create_env_kwargs={"num_envs": 4})
