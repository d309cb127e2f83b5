import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_envs import GymWrapper
from rl_envs.transforms import ActionMask, ActionScaling


class MaskedChoice(gym.Env):
    """Four choices, of which a random half is legal at each step; an illegal one terminates."""

    metadata = {"render_modes": []}  # noqa: RUF012

    def __init__(self):
        self.observation_space = gym.spaces.Dict(
            {"observation": gym.spaces.Box(0, 1, (2,)), "action_mask": gym.spaces.MultiBinary(4)}
        )
        self.action_space = gym.spaces.Discrete(4)
        self.mask = np.ones(4, dtype=np.int8)

    def _obs(self):
        self.mask = np.zeros(4, dtype=np.int8)
        self.mask[self.np_random.choice(4, 2, replace=False)] = 1
        return {
            "observation": self.np_random.random(2).astype(np.float32),
            "action_mask": self.mask,
        }

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self._obs(), {}

    def step(self, action):
        legal = bool(self.mask[int(action)])
        return self._obs(), 1.0, not legal, False, {}


def test_action_scaling_on_pendulum(pendulum):
    env = TransformedEnv(pendulum, ActionScaling())
    check_env_specs(env)
    assert (env.action_spec.low.item(), env.action_spec.high.item()) == (-1.0, 1.0)
    td = env.reset().set("action", torch.tensor([0.5]))
    assert env.transform.inv(td)["action"].item() == pytest.approx(1.0)  # [-2, 2] bounds
    td = TensorDict(action=torch.tensor([[-1.0], [1.0]]), batch_size=[2])
    assert env.transform.inv(td)["action"].squeeze(-1).tolist() == [-2.0, 2.0]


def test_action_scaling_needs_bounded_float_actions(cartpole):
    env = TransformedEnv(cartpole, ActionScaling())
    with pytest.raises(TypeError, match="ActionScaling: the action 'action' has a"):
        _ = env.action_spec


def test_action_mask_makes_random_actions_legal():
    env = TransformedEnv(GymWrapper(MaskedChoice(), categorical_action_encoding=True), ActionMask())
    env.set_seed(0)
    check_env_specs(env)
    traj = env.rollout(50)
    assert traj.batch_size == (50,)  # no illegal action terminated the episode
    chosen = traj["action_mask"].gather(-1, traj["action"].long().reshape(50, 1))
    assert chosen.bool().all()


def test_action_mask_errors(cartpole, pendulum):
    env = TransformedEnv(cartpole, ActionMask())
    with pytest.raises(KeyError, match="ActionMask: the env has no 'action_mask' observation"):
        env.reset()
    env = TransformedEnv(pendulum, ActionMask())
    with pytest.raises(TypeError, match="ActionMask: the action 'action' has a"):
        _ = env.action_spec


def test_action_scaling_to_unit_interval_forward_path_and_explicit_stats():
    from rl_envs.native.pendulum import PendulumEnv

    # torque bounds [-2, 2]: loc 0, scale 2; [0, 1] maps 0 -> -2 and 1 -> 2
    env = TransformedEnv(PendulumEnv(batch_size=[2]), ActionScaling(standard_normal=False))
    check_env_specs(env)
    assert env.action_spec.low.unique().tolist() == [0.0]
    td = TensorDict(action=torch.tensor([[0.25], [1.0]]), batch_size=[2])
    assert env.transform.inv(td.clone())["action"].squeeze(-1).tolist() == [-1.0, 2.0]
    # forward (env scale -> normalised), as on replay-buffer samples
    data = TensorDict(action=torch.tensor([[1.0], [-2.0]]), batch_size=[2])
    assert env.transform(data)["action"].squeeze(-1).tolist() == [0.75, 0.0]
    # explicit loc/scale: no env needed; in_keys_inv=[] normalises samples only
    t = ActionScaling(in_keys_inv=[], loc=torch.tensor([1.0, -1.0]), scale=torch.tensor([2.0, 4.0]))
    assert t.in_keys == ["action"]
    out = t(TensorDict(action=torch.tensor([3.0, 3.0])))["action"]
    assert out.tolist() == [1.0, 1.0]
    explicit = TransformedEnv(PendulumEnv(), ActionScaling(loc=0.0, scale=1.0))
    assert explicit.transform.inv(explicit.reset().set("action", torch.tensor([0.5])))[
        "action"
    ].tolist() == [0.5]


def test_action_scaling_arguments_are_checked():
    with pytest.raises(ValueError, match="ActionScaling: pass loc and scale together"):
        ActionScaling(loc=0.0)
    with pytest.raises(ValueError, match=r"in_keys_inv=\[\] \(forward only\) needs loc and scale"):
        ActionScaling(in_keys_inv=[])
    with pytest.raises(ValueError, match="ActionScaling: scale must be nonzero"):
        ActionScaling(loc=0.0, scale=torch.tensor([1.0, 0.0]))
    with pytest.raises(RuntimeError, match="ActionScaling: loc and scale are unknown"):
        ActionScaling().inv(TensorDict(action=torch.zeros(1)))
