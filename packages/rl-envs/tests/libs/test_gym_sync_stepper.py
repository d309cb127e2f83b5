"""Oracle tests of SyncVectorStepper: a wrapper stepping its SyncVectorEnv's sub-envs directly
against one stepping through ``SyncVectorEnv.step``/``reset`` (same seed, same actions)."""

from typing import Any, ClassVar

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core.envs import set_spec_checks
from rl_envs.libs import GymEnv, GymWrapper, default_info_dict_reader
from rl_envs.libs._gym_stepper import GymNumpyStepper
from rl_envs.libs._gym_sync_stepper import SyncVectorStepper, sub_env_steps_apply

gym = pytest.importorskip("gymnasium")
DISABLED = gym.vector.AutoresetMode.DISABLED


class ThroughStep(gym.vector.SyncVectorEnv):
    """A SyncVectorEnv subclass: the rule leaves it to ``SyncVectorEnv.step`` (the oracle)."""


def _pair(make, num_envs=3, **wrapper_kwargs):
    """(direct, oracle): wrappers over a SyncVectorEnv and over a ThroughStep of the same envs."""
    direct = GymWrapper(
        gym.vector.SyncVectorEnv([make] * num_envs, autoreset_mode=DISABLED), **wrapper_kwargs
    )
    oracle = GymWrapper(ThroughStep([make] * num_envs, autoreset_mode=DISABLED), **wrapper_kwargs)
    assert type(direct._stepper) is SyncVectorStepper
    assert type(oracle._stepper) is GymNumpyStepper
    return direct, oracle


def assert_tensordict_equal(a, b):
    keys = sorted(a.keys(True, True), key=str)
    assert keys == sorted(b.keys(True, True), key=str)
    assert a.batch_size == b.batch_size
    for key in keys:
        x, y = a.get(key), b.get(key)
        assert x.dtype == y.dtype, key
        assert x.shape == y.shape, key
        assert torch.equal(x, y), key


def _same_vector_state(direct, oracle):
    a, b = direct.env, oracle.env
    for name in ("_rewards", "_terminations", "_truncations", "_autoreset_envs"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for x, y in zip(a._env_obs, b._env_obs, strict=True):
        assert str(x) == str(y)


def _actions(env, steps, seed):
    torch.manual_seed(seed)
    return [env.full_action_spec.rand() for _ in range(steps)]


def _steps_and_resets(env, actions):
    """Every output of step_and_maybe_reset (transitions and next roots)."""
    out = []
    td = env.reset()
    for action in actions:
        td, root = env.step_and_maybe_reset(td.update(action))
        out += [td.clone(), root.clone()]
        td = root
    return out


@pytest.mark.parametrize(
    ("make", "categorical"),
    [
        (lambda: gym.make("CartPole-v1"), False),
        (lambda: gym.make("Pendulum-v1", max_episode_steps=7), False),
        (lambda: gym.make("Blackjack-v1"), True),
    ],
    ids=["cartpole", "pendulum", "blackjack-tuple-obs"],
)
def test_step_and_maybe_reset_matches_sync_vector_env(make, categorical):
    direct, oracle = _pair(make, categorical_action_encoding=categorical)
    actions = _actions(direct, 60, seed=1)
    outputs = []
    for env in (direct, oracle):
        env.set_seed(3)
        outputs.append(_steps_and_resets(env, actions))
    finished = sum(bool(td["next", "done"].any()) for td in outputs[1][::2])
    assert finished > 0  # resets of some sub-envs were compared
    for mine, theirs in zip(*outputs, strict=True):
        assert_tensordict_equal(mine, theirs)
    _same_vector_state(direct, oracle)


class Loose(gym.Env):
    """A float32 Box env whose observations are not always float32 arrays of the row shape:
    float64 arrays (``kind="float64"``), lists (``"list"``), or a wrong shape at step 5
    (``"shape"``). Gymnasium's concatenate casts, converts or raises; so must the direct path.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, kind):
        self.kind = kind
        self.observation_space = gym.spaces.Box(-10, 10, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.steps = 0
        self.horizon = 8 if kind == "shape" else 3

    def _obs(self):
        value = self.np_random.normal(size=2)
        if self.kind == "list":
            return value.tolist()
        if self.kind == "shape" and self.steps == 5:
            return value[:1]
        return value if self.kind in ("float64", "shape") else value.astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return self._obs(), {}

    def step(self, action):
        self.steps += 1
        return self._obs(), float(action), self.steps >= self.horizon + int(action), False, {}


@pytest.mark.parametrize("kind", ["float64", "list"])
def test_observations_gymnasium_casts_or_converts_match(kind):
    # The direct path concatenates float32 arrays of the row shape itself; the others go
    # through gymnasium's concatenate: both give SyncVectorEnv's observations.
    direct, oracle = _pair(lambda: Loose(kind), num_envs=3)
    actions = _actions(direct, 20, seed=3)
    outputs = []
    for env in (direct, oracle):
        env.set_seed(2)
        outputs.append(_steps_and_resets(env, actions))
    for mine, theirs in zip(*outputs, strict=True):
        assert_tensordict_equal(mine, theirs)
    _same_vector_state(direct, oracle)
    assert np.array_equal(direct.env._observations, oracle.env._observations)


def test_observation_of_a_wrong_shape_raises_gymnasium_error():
    direct, oracle = _pair(lambda: Loose("shape"), num_envs=2)
    action = TensorDict(action=torch.tensor([[0, 1], [0, 1]]), batch_size=[2])
    errors = []
    for env in (direct, oracle):
        env.set_seed(0)
        td = env.reset()
        for _ in range(4):
            td = env.step_mdp_plan()(env.step(td.update(action)))
        with pytest.raises(ValueError, match="shape") as info:
            env.step(td.update(action))  # the 5th step returns an observation of shape (1,)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_discrete_observations_match(echo_env):
    # 0-d observations (a Discrete space): gymnasium's concatenate, not the flat one.
    space = gym.spaces.Discrete(5)
    direct, oracle = _pair(lambda: echo_env(space, horizon=3), num_envs=3)
    actions = _actions(direct, 12, seed=4)
    outputs = []
    for env in (direct, oracle):
        env.set_seed(1)
        outputs.append(_steps_and_resets(env, actions))
    for mine, theirs in zip(*outputs, strict=True):
        assert_tensordict_equal(mine, theirs)
    _same_vector_state(direct, oracle)


def test_step_then_partial_reset_and_rollouts_match(echo_env):
    space = gym.spaces.Dict(
        pos=gym.spaces.Box(-1, 1, (2,), np.float32), k=gym.spaces.MultiDiscrete([3, 2])
    )
    direct, oracle = _pair(lambda: echo_env(space, horizon=3), num_envs=4)
    actions = _actions(direct, 12, seed=2)
    for env in (direct, oracle):
        env.set_seed(5)
    # step then reset with a "_reset" mask (what step_and_maybe_reset does without fusing)
    tds = [env.reset() for env in (direct, oracle)]
    for action in actions:
        outs = []
        for env, td in zip((direct, oracle), tds, strict=True):
            td = env.step(td.update(action))
            root = env.step_mdp_plan()(td)
            mask = root["done"].clone()
            mask[0] = True  # one sub-env is reset without having finished
            root.set("_reset", mask)
            outs.append((td, env.reset(root)))
        assert_tensordict_equal(outs[0][0], outs[1][0])
        assert_tensordict_equal(outs[0][1], outs[1][1])
        tds = [reset for _, reset in outs]
    _same_vector_state(direct, oracle)
    # rollouts with and without a policy
    for kwargs in ({}, {"policy": lambda td: td.update(actions[0])}):
        trajs = []
        for env in (direct, oracle):
            env.set_seed(9)
            torch.manual_seed(0)
            trajs.append(env.rollout(15, break_when_any_done=False, **kwargs))
        assert_tensordict_equal(*trajs)


def test_random_rollout_rows_match_sync_vector_env():
    # The env's own loop without a policy: step_at and reset_finished_at on numpy blocks.
    direct, oracle = _pair(lambda: gym.make("CartPole-v1"), num_envs=5)
    trajs = []
    for env in (direct, oracle):
        env.set_seed(11)
        torch.manual_seed(4)
        trajs.append(env.rollout(80, break_when_any_done=False))
    assert bool(trajs[1]["next", "done"].any())
    assert_tensordict_equal(*trajs)
    _same_vector_state(direct, oracle)


def test_stepping_a_finished_sub_env_raises_gymnasium_error():
    direct, oracle = _pair(lambda: gym.make("CartPole-v1"), num_envs=2)
    action = TensorDict(action=torch.tensor([[0, 1], [0, 1]]), batch_size=[2])
    errors = []
    for env in (direct, oracle):
        env.set_seed(0)
        td = env.reset()
        while not td["done"].any():  # steps to the end of an episode, with no reset
            td = env.step_mdp_plan()(env.step(td.update(action)))
        with pytest.raises(AssertionError, match="_autoreset_envs") as info:
            env.step(td.update(action))
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_rule_applies_only_to_exact_disabled_sync_vector_envs_without_infos():
    make = [lambda: gym.make("CartPole-v1")] * 2
    assert sub_env_steps_apply(gym.vector.SyncVectorEnv(make, autoreset_mode=DISABLED), infos=False)
    assert not sub_env_steps_apply(
        gym.vector.SyncVectorEnv(make, autoreset_mode=DISABLED), infos=True
    )
    assert not sub_env_steps_apply(gym.vector.SyncVectorEnv(make), infos=False)  # NEXT_STEP
    assert not sub_env_steps_apply(ThroughStep(make, autoreset_mode=DISABLED), infos=False)
    assert type(GymEnv("CartPole-v1", num_envs=2)._stepper) is SyncVectorStepper
    assert type(GymEnv("CartPole-v1")._stepper) is GymNumpyStepper
    env = GymEnv("CartPole-v1", num_envs=2)
    stepper = env._stepper
    env.set_info_dict_reader(default_info_dict_reader())
    assert stepper.retired
    assert type(env._stepper) is GymNumpyStepper  # infos are read: gymnasium's own step


def test_spec_checks_pass_on_the_direct_path():
    env = GymEnv("CartPole-v1", num_envs=3)
    env.set_seed(0)
    with set_spec_checks(True):
        traj = env.rollout(40, break_when_any_done=False)
    assert traj.batch_size == (3, 40)
