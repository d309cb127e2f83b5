"""GymWrapper's step plan (``rl_envs._accel.gym_plan``): the fused step-and-reset against the
reference step then reset, where every output goes into row blocks and where the observation is too
large for them."""

import numpy as np
import pytest

from rl_core.envs._plans import active_plan
from rl_core.testing import check_random_rollout, check_step_plan
from rl_envs._accel.seam import numpy_stepper
from rl_envs.libs import GymEnv, GymWrapper

gym = pytest.importorskip("gymnasium")


def _large_box_vector(echo_env):
    # 4 sub-envs x 300 floats: more than a row block holds, so steps decode the observation.
    space = gym.spaces.Box(-1.0, 1.0, (300,), np.float32)
    return GymWrapper(
        gym.vector.SyncVectorEnv(
            [lambda: echo_env(space, horizon=5)] * 4, autoreset_mode="Disabled"
        )
    )


def test_fused_path_with_observations_in_row_blocks():
    for num_envs in (0, 3):
        env = GymEnv("CartPole-v1", num_envs=num_envs)
        assert env._rows_only
        env.close()
        check_step_plan(lambda n=num_envs: GymEnv("CartPole-v1", num_envs=n), steps=80)


def test_fused_path_with_a_large_observation(echo_env):
    env = _large_box_vector(echo_env)
    assert not env._rows_only
    assert numpy_stepper(env) is not None
    env.close()
    check_step_plan(lambda: _large_box_vector(echo_env), steps=30)
    check_random_rollout(lambda: _large_box_vector(echo_env), steps=30)


@pytest.mark.parametrize("num_envs", [0, 3])
def test_reset_entries_are_what_merge_reset_rows_writes(num_envs):
    # A reset of every sub-env: the entries merge_reset_rows writes into a next root, as a
    # dict. A partial reset, or an observation outside the row blocks: None.
    env = GymEnv("CartPole-v1", num_envs=num_envs)
    td = env.reset()
    obs = np.arange(4 * max(num_envs, 1), dtype=np.float32).reshape(td["observation"].shape)
    mask = None if not num_envs else np.ones(num_envs, dtype=bool)
    plan = active_plan(env)
    found = plan.reset_entries((mask, obs))
    merged = plan.merge_reset_rows(td.clone(), (mask, obs))
    assert set(found) == {"observation", "done", "terminated", "truncated"}
    for key, value in found.items():
        assert value.dtype == merged[key].dtype, key
        assert np.array_equal(value, merged[key]), key
    assert not any(bool(found[k].any()) for k in ("done", "terminated", "truncated"))
    if num_envs:
        partial = np.array([True, False, True])
        assert plan.reset_entries((partial, obs)) is None


def test_reset_entries_leave_observations_outside_the_row_blocks_to_the_merge(echo_env):
    env = _large_box_vector(echo_env)
    env.reset()
    obs = np.zeros((4, 300), dtype=np.float32)
    assert active_plan(env).reset_entries((np.ones(4, dtype=bool), obs)) is None


class _OwnReset(GymEnv):
    def _reset(self, tensordict, **kwargs):
        return super()._reset(tensordict, **kwargs)


def test_an_overridden_reset_turns_the_plan_off():
    env = _OwnReset("CartPole-v1")
    env.reset()
    assert active_plan(env) is None


def test_the_plan_keeps_what_it_reads_once_and_the_wrapper_no_plan_cache():
    env = GymEnv("CartPole-v1", num_envs=2)
    env.set_seed(0)
    td = env.reset()
    for _ in range(3):
        _, td = env.step_and_maybe_reset(env.rand_action(td))
    env.rollout(5)
    plan = active_plan(env)
    assert plan.rows_apply is True
    assert plan.rollout_plan is not None
    # The wrapper's cache holds what EnvBase caches with the specs, not the plan's reads.
    assert "numpy_rows_apply" not in env._cache
    assert "random_rollout_plan" not in env._cache
    env.close()
