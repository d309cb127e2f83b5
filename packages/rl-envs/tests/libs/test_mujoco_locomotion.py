"""TorchRL's locomotion tasks (AntEnv, HopperEnv, HumanoidEnv, Walker2dEnv) against gymnasium's
-v4 envs stepped by hand from the same states, with hand-computed rewards."""

import warnings

import numpy as np
import pytest
import torch

from rl_core.envs import check_env_specs
from rl_envs import AntEnv, HopperEnv, HumanoidEnv, Walker2dEnv

from ._batched_checks import ParallelEnv, check_batched_rollouts

mujoco = pytest.importorskip("mujoco", reason='pip install "rl-envs[mujoco]"')
gym = pytest.importorskip("gymnasium", reason='pip install "rl-envs[mujoco]"')

# (task, gymnasium id, observation size, actions, skipped qpos, qvel clamp, healthy reward,
#  control cost weight, whether gymnasium's reward is the same formula)
TASKS = {
    "ant": (AntEnv, "Ant-v4", 27, 8, 2, None, 1.0, 0.5, False),
    "hopper": (HopperEnv, "Hopper-v4", 11, 3, 1, 10.0, 1.0, 1e-3, True),
    "walker": (Walker2dEnv, "Walker2d-v4", 17, 6, 1, 10.0, 1.0, 1e-3, True),
    "humanoid": (HumanoidEnv, "Humanoid-v4", 45, 17, 2, 10.0, 5.0, 0.1, False),
}


def _gym_env(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the -v4 tasks are deprecated in favour of -v5
        return gym.make(name).unwrapped


@pytest.mark.parametrize("task", list(TASKS))
def test_steps_match_gymnasium_driven_by_hand(task):
    cls, gym_id, n_obs, n_act, skip, clamp, healthy_reward, ctrl_w, same_reward = TASKS[task]
    env = cls(num_envs=2, seed=7, dtype=torch.float64)
    assert env.observation_spec["observation"].shape == (2, n_obs)
    assert env.action_spec.shape == (2, n_act)
    gen = torch.Generator().manual_seed(0)
    low, high = env.action_spec.low, env.action_spec.high
    actions = [low + (high - low) * torch.rand(2, n_act, generator=gen, dtype=torch.float64)]
    actions = [a * 0.3 for a in actions * 4]  # small pushes: 4 steps, nobody falls
    td = env.reset()
    start = env.get_state()
    steps = []
    for action in actions:
        td["action"] = action
        td = env.step(td)
        steps.append(td["next"].clone())
        td = td["next"].clone()
    for b in range(2):
        ref = _gym_env(gym_id)
        ref.reset(seed=0)
        ref.set_state(start["qpos"][b].numpy(), start["qvel"][b].numpy())
        assert env.dt == pytest.approx(ref.dt)
        for t, action in enumerate(actions):
            x_before = ref.data.qpos[0]
            obs, reward, terminated, _, _ = ref.step(action[b].numpy())
            qpos, qvel = ref.data.qpos.copy(), ref.data.qvel.copy()
            if clamp is not None:
                qvel = np.clip(qvel, -clamp, clamp)
            expected_obs = np.concatenate([qpos[skip:], qvel])
            got = steps[t]
            np.testing.assert_allclose(got["observation"][b].numpy(), expected_obs, rtol=1e-12)
            if task != "humanoid":  # gymnasium's humanoid observes more (inertias, forces)
                np.testing.assert_allclose(got["observation"][b].numpy(), obs, rtol=1e-12)
            assert got["terminated"][b].item() == terminated
            a = action[b].numpy()
            hand = (qpos[0] - x_before) / ref.dt + healthy_reward - ctrl_w * float(a @ a)
            assert got["reward"][b].item() == pytest.approx(hand, rel=1e-9)
            if same_reward:
                assert got["reward"][b].item() == pytest.approx(reward, rel=1e-9)
        ref.close()


def test_hopper_terminates_where_its_healthy_range_ends():
    env = HopperEnv(num_envs=1, seed=0, dtype=torch.float64)
    traj = env.rollout(500, lambda td: td.set("action", torch.ones(1, 3, dtype=torch.float64)))
    assert traj["next", "terminated"][0, -1].item()
    assert not traj["next", "terminated"][0, :-1].any()
    # the last observation is qpos[1:]: height qpos[1] < 0.7 or |angle qpos[2]| > 0.2
    z, angle = traj["next", "observation"][0, -1, :2].tolist()
    assert z < 0.7 or abs(angle) > 0.2
    # the unhealthy step earns no healthy reward: velocity - 0.001 * 3
    assert traj["next", "reward"][0, -1].item() < traj["next", "reward"][0, :-1].min().item()


@pytest.mark.parametrize("task", list(TASKS))
def test_specs_seeds_and_truncation(task):
    cls = TASKS[task][0]
    env = cls(num_envs=2, max_episode_steps=3)
    check_env_specs(env)
    traj = env.rollout(10, break_when_any_done=False)
    assert traj["next", "truncated"][:, 2].all()

    def start(seed):
        return cls(seed=seed).reset()["observation"]

    torch.testing.assert_close(start(3), start(3))
    assert not torch.equal(start(3), start(4))


@pytest.mark.parametrize("task", list(TASKS))
def test_parallel_env_matches_each_env_alone(task):
    check_batched_rollouts(TASKS[task][0], ParallelEnv)


def test_bad_constructor_arguments_are_named(tmp_path):
    with pytest.raises(ValueError, match="AntEnv: expected num_envs to be an int >= 1, got 0"):
        AntEnv(num_envs=0)
    with pytest.raises(ValueError, match="HopperEnv: expected frame_skip to be an int >= 1"):
        HopperEnv(frame_skip=-1)
    with pytest.raises(ValueError, match="HumanoidEnv: expected backend='mujoco', got 'mjx'"):
        HumanoidEnv(backend="mjx")
    with pytest.raises(ValueError, match="Walker2dEnv: the MJCF model does not compile"):
        Walker2dEnv(xml_path=tmp_path / "missing.xml")
