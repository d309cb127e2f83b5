"""GymWrapper's random-action rollout loop against the generic loop replaying its actions."""

from __future__ import annotations

import math
from contextlib import nullcontext
from typing import Any, ClassVar

import numpy as np
import pytest
import torch

from rl_core.envs import reference_only
from rl_core.testing import check_random_rollout
from rl_envs._accel import gym_plan as gym_module
from rl_envs.batched import SerialEnv
from rl_envs.libs import GymEnv, GymWrapper, default_info_dict_reader

gym = pytest.importorskip("gymnasium")


class MultiDiscreteEcho(gym.Env):
    """Observes its MultiDiscrete action (with non-zero starts) as floats; ends after 3 steps."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self) -> None:
        self.action_space = gym.spaces.MultiDiscrete([3, 4], start=[1, -1])
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (2,), dtype=np.float64)
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(2), {}

    def step(self, action: Any):
        assert self.action_space.contains(action), action
        self.steps += 1
        return np.asarray(action, dtype=np.float64), 1.0, self.steps >= 3, False, {}


@pytest.fixture
def loops(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Records, per rollout without a policy, whether the gymnasium loop ran it."""
    calls: list[bool] = []
    original = gym_module.random_rollout

    def spy(*args: Any, **kwargs: Any):
        out = original(*args, **kwargs)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(gym_module, "random_rollout", spy)
    return calls


@pytest.mark.parametrize("num_envs", [0, 3])
@pytest.mark.parametrize("categorical", [False, True])
def test_cartpole_loop_matches_the_generic_loop(loops, num_envs, categorical):
    check_random_rollout(
        lambda: GymEnv("CartPole-v1", num_envs=num_envs, categorical_action_encoding=categorical),
        steps=300,
    )
    assert loops
    assert all(loops)


@pytest.mark.parametrize("name", ["Pendulum-v1", "MountainCarContinuous-v0"])
def test_continuous_actions_match_the_generic_loop(loops, name):
    check_random_rollout(lambda: GymEnv(name, num_envs=2), steps=60)
    assert loops
    assert all(loops)


def test_multi_discrete_and_multi_binary_actions_match(loops, echo_env):
    check_random_rollout(lambda: GymWrapper(MultiDiscreteEcho()), steps=20)
    check_random_rollout(
        lambda: GymWrapper(gym.vector.SyncVectorEnv([MultiDiscreteEcho] * 2)), steps=20
    )
    check_random_rollout(lambda: GymWrapper(echo_env(gym.spaces.MultiBinary(3))), steps=20)
    assert loops
    assert all(loops)


def test_next_step_autoreset_vector_env_matches(loops):
    # A vector env made by the user keeps gymnasium's default NEXT_STEP autoreset.
    check_random_rollout(
        lambda: GymWrapper(gym.make_vec("CartPole-v1", num_envs=3)),
        steps=200,
    )
    assert loops
    assert all(loops)


def test_break_when_all_done_matches_the_generic_loop():
    env = GymEnv("CartPole-v1", num_envs=3)
    env.set_seed(1)
    fast = env.rollout(500, break_when_any_done=False, break_when_all_done=True)
    env.set_seed(1)
    actions = iter(fast["action"].unbind(1))
    slow = env.rollout(
        500,
        lambda td: td.set("action", next(actions)),
        break_when_any_done=False,
        break_when_all_done=True,
    )
    assert fast.batch_size == slow.batch_size
    assert fast.batch_size[1] < 500
    assert (fast == slow).all()
    assert fast["next", "done"].any(1).all()


def test_final_observations_are_kept_and_resets_start_new_episodes():
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    torch.manual_seed(0)
    traj = env.rollout(400, break_when_any_done=False)
    done = traj["next", "done"].squeeze(-1)
    ends = done.nonzero().squeeze(-1)
    assert len(ends) > 2
    for t in ends[:-1].tolist():
        # The next root after an episode is a reset state, not the final observation.
        assert not torch.equal(traj["observation"][t + 1], traj["next", "observation"][t])
        assert traj["observation"][t + 1].abs().max() <= 0.05
        # The final observation left the CartPole bounds (or the episode was truncated).
        final = traj["next", "observation"][t]
        assert final[0].abs() > 2.4 or final[2].abs() > 12 * 2 * math.pi / 360
    steps_between = (~done).nonzero().squeeze(-1)
    for t in steps_between[:50].tolist():
        assert torch.equal(traj["observation"][t + 1], traj["next", "observation"][t])


def _cartpole_states(env: Any) -> list[np.ndarray]:
    """The gymnasium CartPole state of each sub-env of a GymEnv or SerialEnv."""
    if isinstance(env, SerialEnv):
        return [np.asarray(sub._env.unwrapped.state) for sub in env._envs]
    return [np.asarray(sub.unwrapped.state) for sub in env._env.envs]


@pytest.mark.parametrize("batched", ["num_envs", "serial"])
@pytest.mark.parametrize("fast", [True, False])
def test_a_sub_env_finishing_on_the_last_step_is_not_reset(loops, batched, fast):
    # As TorchRL: the last step of a rollout without break is a plain step; a sub-env that
    # finishes there keeps its final state (the gymnasium loop, the vector group of a
    # SerialEnv and the generic loop alike).
    if batched == "serial":
        env = SerialEnv(2, lambda: GymEnv("CartPole-v1"))
    else:
        env = GymEnv("CartPole-v1", num_envs=2)
    with nullcontext() if fast else reference_only():
        env.set_seed(0)
        torch.manual_seed(0)
        done = env.rollout(200, break_when_any_done=False)["next", "done"].squeeze(-1)
        t = int(done.any(0).nonzero()[0])
        env.set_seed(0)
        torch.manual_seed(0)
        traj = env.rollout(t + 1, break_when_any_done=False)
    assert loops == ([True, True] if fast else [])
    assert traj["next", "done"].squeeze(-1)[:, -1].tolist() == done[:, t].tolist()
    for k, state in enumerate(_cartpole_states(env)):
        final = traj["next", "observation"][k, -1].numpy()
        np.testing.assert_allclose(state, final, rtol=1e-6)
    env.close()


def test_env_steps_on_after_a_random_rollout():
    env = GymEnv("CartPole-v1", num_envs=2)
    env.set_seed(0)
    traj = env.rollout(30, break_when_any_done=False)
    td = env.rand_step(traj[:, -1].exclude("next").clone())
    assert td["next", "observation"].shape == (2, 4)


def test_the_generic_loop_runs_where_the_gymnasium_loop_does_not_apply(loops, echo_env):
    # Dict observations, info readers and pixels keep the generic loop.
    box = gym.spaces.Box(-1.0, 1.0, (2,))
    GymWrapper(echo_env(gym.spaces.Dict({"a": box}))).rollout(5)
    env = GymWrapper(echo_env(box)).set_info_dict_reader(default_info_dict_reader(["steps"]))
    traj = env.rollout(5)
    assert "steps" in traj["next"].keys()
    GymEnv("CartPole-v1", from_pixels=True).rollout(2)
    assert loops == []  # none of them reached the gymnasium loop
