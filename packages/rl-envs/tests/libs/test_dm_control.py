"""DMControlEnv / DMControlWrapper on real Control Suite tasks."""

import os

import numpy as np
import pytest
import torch

# tensordict (torch._dynamo) first: loaded after Mesa's EGL driver, it crashes the process.
from rl_core.envs import check_env_specs
from rl_core.testing import EnvConformanceSuite
from rl_envs import DMControlEnv, DMControlWrapper

from ._batched_checks import ParallelEnv, SerialEnv, check_batched_rollouts

# Headless rendering for the pixel tests: read by dm_control when it is first imported.
os.environ.setdefault("MUJOCO_GL", "egl")
suite = pytest.importorskip("dm_control.suite", reason='pip install "rl-envs[dm-control]"')


def _loads() -> str | None:
    try:
        suite.load("cartpole", "balance")
    except AttributeError as err:
        import mujoco

        return (
            f"dm_control cannot bind mujoco {mujoco.__version__} ({err}): "
            f'pip install "mujoco>=3.17,<4"'
        )
    return None


_BROKEN = _loads()
requires_physics = pytest.mark.skipif(_BROKEN is not None, reason=_BROKEN or "")


@requires_physics
class TestCartpoleBalance(EnvConformanceSuite):
    def make_env(self):
        return DMControlEnv("cartpole", "balance", time_limit=0.3)


@requires_physics
def test_specs_follow_the_dm_env_specs():
    env = DMControlEnv("cheetah", "run")
    raw = env.env
    assert set(env.observation_spec.keys()) == set(raw.observation_spec())
    for key, spec in raw.observation_spec().items():
        assert env.observation_spec[key].shape == spec.shape
        assert env.observation_spec[key].dtype == torch.float64
    action = raw.action_spec()
    assert env.action_spec.shape == action.shape
    assert env.action_spec.dtype == torch.float64
    np.testing.assert_array_equal(env.action_spec.low.numpy(), action.minimum)
    np.testing.assert_array_equal(env.action_spec.high.numpy(), action.maximum)
    assert env.reward_spec.shape == (1,)
    check_env_specs(env)
    wrapped = DMControlWrapper(suite.load("cheetah", "run"))
    assert wrapped.observation_spec == env.observation_spec
    check_env_specs(wrapped)


@requires_physics
def test_time_limit_truncates_and_matches_dm_control_step_for_step():
    env = DMControlEnv("cartpole", "balance", time_limit=0.05, seed=3)  # 5 control steps
    ref = suite.load("cartpole", "balance", task_kwargs={"time_limit": 0.05, "random": 3})
    actions = torch.linspace(-1, 1, 5, dtype=torch.float64).unsqueeze(-1)
    step = iter(range(5))
    traj = env.rollout(10, lambda td: td.set("action", actions[next(step)]))
    assert traj.batch_size == (5,)
    ref.reset()  # the reset that seeding does (TorchRL's set_seed resets)
    first = ref.reset()
    np.testing.assert_array_equal(traj["position"][0].numpy(), first.observation["position"])
    for t in range(5):
        ts = ref.step(actions[t].numpy())
        np.testing.assert_array_equal(
            traj["next", "velocity"][t].numpy(), ts.observation["velocity"]
        )
        assert traj["next", "reward"][t].item() == ts.reward
    assert traj["next", "truncated"].squeeze(-1).tolist() == [False] * 4 + [True]
    assert not traj["next", "terminated"].any()
    assert traj["next", "done"].squeeze(-1).tolist() == [False] * 4 + [True]


@requires_physics
def test_frame_skip_repeats_the_action_and_sums_rewards():
    env = DMControlEnv("cartpole", "swingup", frame_skip=3, seed=0)
    ref = suite.load("cartpole", "swingup", task_kwargs={"random": 0})
    ref.reset()  # the reset that seeding does
    ref.reset()
    action = torch.full((1,), 0.5, dtype=torch.float64)
    out = env.step(env.reset().set("action", action))
    total = sum(ref.step(np.array([0.5])).reward for _ in range(3))
    assert out["next", "reward"].item() == pytest.approx(total, abs=0.0)


@requires_physics
def test_seeds_reproduce_and_differ():
    def first_obs(seed):
        env = DMControlEnv("cartpole", "swingup")
        env.set_seed(seed)
        return env.reset()["position"]

    torch.testing.assert_close(first_obs(5), first_obs(5))
    assert not torch.equal(first_obs(5), first_obs(6))


@requires_physics
def test_set_seed_reseeds_the_task_and_resets_as_torchrl():
    env = DMControlEnv("cartpole", "swingup")
    ref = suite.load("cartpole", "swingup")
    ref.task._random = np.random.RandomState(7)
    first = ref.reset()  # TorchRL's set_seed resets: the env now holds this state
    env.set_seed(7)
    np.testing.assert_array_equal(env.env.physics.data.qpos, ref.physics.data.qpos)
    second = ref.reset()
    td = env.reset()
    np.testing.assert_array_equal(td["position"].numpy(), second.observation["position"])
    assert not np.array_equal(first.observation["position"], second.observation["position"])
    # seeding at construction does the same
    seeded = DMControlEnv("cartpole", "swingup", seed=7)
    np.testing.assert_array_equal(
        seeded.reset()["position"].numpy(), second.observation["position"]
    )


@requires_physics
def test_from_pixels_renders_uint8_frames():
    env = DMControlEnv(
        "cartpole", "balance", from_pixels=True, render_kwargs={"height": 24, "width": 32}
    )
    assert set(env.observation_spec.keys()) == {"pixels"}
    check_env_specs(env)
    traj = env.rollout(3)
    assert traj["next", "pixels"].shape == (3, 24, 32, 3)
    assert traj["next", "pixels"].dtype == torch.uint8
    assert traj["next", "pixels"].float().std() > 0


@requires_physics
def test_from_pixels_keeps_the_states_with_pixels_only_false():
    env = DMControlEnv(
        "cartpole",
        "balance",
        from_pixels=True,
        pixels_only=False,
        render_kwargs={"height": 8, "width": 8},
    )
    assert set(env.observation_spec.keys()) == {"pixels", "position", "velocity"}


@requires_physics
def test_random_policy_rollout_stays_in_the_action_bounds():
    env = DMControlEnv("walker", "walk", time_limit=0.5)
    env.set_seed(0)
    traj = env.rollout(20)
    assert traj.batch_size == (20,)
    assert (traj["action"].abs() <= 1).all()
    assert torch.isfinite(traj["next", "reward"]).all()


@requires_physics
@pytest.mark.parametrize("batched", [SerialEnv, ParallelEnv])
def test_serial_and_parallel_envs(batched):
    check_batched_rollouts(lambda: DMControlEnv("cartpole", "balance"), batched)


@requires_physics
def test_bad_arguments_raise():
    with pytest.raises(ValueError, match=r"unknown task \('cartpole', 'run'\); tasks of"):
        DMControlEnv("cartpole", "run")
    with pytest.raises(ValueError, match="domains"):
        DMControlEnv("nope", "run")
    with pytest.raises(TypeError, match=r"expected a dm_control\.rl\.control\.Environment"):
        DMControlWrapper(object())
    assert ("cheetah", "run") in DMControlEnv.available_envs()


@pytest.mark.skipif(_BROKEN is None, reason="dm_control runs on this mujoco")
def test_a_mujoco_that_dm_control_cannot_bind_raises_naming_the_fix():
    with pytest.raises(RuntimeError, match=r"could not bind the physics of the installed mujoco"):
        DMControlEnv("cartpole", "balance")


def test_num_workers_is_refused_with_the_parallel_env_to_write():
    with pytest.raises(
        TypeError, match=r"DMControlEnv: num_workers=3 is not taken.*ParallelEnv\(n, lambda"
    ):
        DMControlEnv("cartpole", "balance", num_workers=3)
