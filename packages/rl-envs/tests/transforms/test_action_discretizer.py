import gymnasium as gym
import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_envs import GymWrapper
from rl_envs.transforms import ActionDiscretizer, FlattenAction


class GridAction(gym.Env):
    """Observes the sum of its (2, 3) action; episodes last 5 steps."""

    metadata = {"render_modes": []}  # noqa: RUF012

    def __init__(self):
        self.observation_space = gym.spaces.Box(-6, 6, (1,))
        self.action_space = gym.spaces.Box(-1, 1, (2, 3))
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        self.steps += 1
        obs = np.array([action.sum()], dtype=np.float32)
        return obs, 0.0, False, self.steps >= 5, {}


def test_discretized_pendulum(pendulum):
    env = TransformedEnv(pendulum, ActionDiscretizer(5))
    check_env_specs(env)
    assert env.action_spec.n == 5
    td = env.reset().set("action", torch.tensor([4]))
    assert env.transform.inv(td)["action"].item() == pytest.approx(1.6)
    traj = env.rollout(4)
    assert traj["action"].dtype == torch.int64


def test_flatten_action_of_a_2d_box():
    env = TransformedEnv(GymWrapper(GridAction()), FlattenAction())
    check_env_specs(env)
    assert env.action_spec.shape == (6,)
    traj = env.rollout(3, lambda td: td.set("action", torch.arange(6.0) / 10))
    assert traj["next", "observation"][-1].item() == pytest.approx(1.5)


def test_on_buffer_batches_and_errors(cartpole):
    t = ActionDiscretizer(2)
    t.low, t.high = torch.zeros(1), torch.ones(1)
    out = t.inv(TensorDict(action=torch.tensor([[0], [1]]), batch_size=[2]))
    assert out["action"].squeeze(-1).tolist() == [0.25, 0.75]
    with pytest.raises(ValueError, match="ActionDiscretizer: expected num_intervals >= 2"):
        ActionDiscretizer(1)
    env = TransformedEnv(cartpole, ActionDiscretizer(3))
    with pytest.raises(TypeError, match="ActionDiscretizer: the action 'action' has a"):
        _ = env.action_spec
    env = TransformedEnv(cartpole, FlattenAction(-3, -1))
    with pytest.raises(ValueError, match="FlattenAction: the action 'action' of shape"):
        _ = env.action_spec


class EchoAction(gym.Env):
    """Observes the action it was given; its Box has a different range per dim."""

    metadata = {"render_modes": []}  # noqa: RUF012

    def __init__(self):
        low, high = np.array([-1.0, 0.0, -2.0]), np.array([1.0, 4.0, 2.0])
        self.observation_space = gym.spaces.Box(low, high, dtype=np.float64)
        self.action_space = gym.spaces.Box(low, high, dtype=np.float64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3), {}

    def step(self, action):
        return np.asarray(action, dtype=np.float64), 0.0, False, False, {}


# widths: dim 0 (2 intervals of [-1, 1]) 1.0, dim 1 (4 of [0, 4]) 1.0, dim 2 (8 of [-2, 2]) 0.5;
# the chosen intervals [1, 3, 0] land at low + (i + offset) * width
CHOSEN = [1, 3, 0]
EXPECTED = {
    "MEDIAN": [0.5, 3.5, -1.75],
    "LOW": [0.0, 3.0, -2.0],
    "HIGH": [1.0, 4.0, -1.5],
}


@pytest.mark.parametrize("sampling", ["MEDIAN", "LOW", "HIGH"])
def test_per_dim_counts_and_sampling_strategies_as_torchrl(sampling):
    strategy = ActionDiscretizer.SamplingStrategy[sampling]
    env = TransformedEnv(GymWrapper(EchoAction()), ActionDiscretizer([2, 4, 8], sampling=strategy))
    check_env_specs(env)
    assert env.action_spec.nvec.tolist() == [2, 4, 8]
    traj = env.rollout(2, lambda td: td.set("action", torch.tensor(CHOSEN)))
    assert traj["next", "observation"][-1].tolist() == EXPECTED[sampling]


def test_one_hot_blocks_and_random_sampling():
    t = ActionDiscretizer([2, 4, 8], categorical=False)
    env = TransformedEnv(GymWrapper(EchoAction()), t)
    check_env_specs(env)
    assert env.action_spec.shape == (14,)
    one_hot = torch.zeros(14, dtype=torch.bool)
    one_hot[[1, 2 + 3, 6 + 0]] = True  # blocks of 2, 4 and 8
    traj = env.rollout(1, lambda td: td.set("action", one_hot))
    assert traj["next", "observation"][0].tolist() == EXPECTED["MEDIAN"]
    random = ActionDiscretizer([2, 4, 8], sampling=ActionDiscretizer.SamplingStrategy.RANDOM)
    env = TransformedEnv(GymWrapper(EchoAction()), random)
    torch.manual_seed(0)
    obs = env.rollout(50, lambda td: td.set("action", torch.tensor(CHOSEN)))["next", "observation"]
    low, high = torch.tensor(EXPECTED["LOW"]), torch.tensor(EXPECTED["HIGH"])
    assert bool(((obs >= low) & (obs < high)).all())
    assert obs.std(0).min() > 0  # it does move inside the interval


def test_discretizer_arguments_are_checked():
    with pytest.raises(ValueError, match="ActionDiscretizer: sampling must be one of"):
        ActionDiscretizer(3, sampling=7)
    with pytest.raises(ValueError, match="ActionDiscretizer: expected num_intervals >= 2"):
        ActionDiscretizer([3, 1])
    env = TransformedEnv(GymWrapper(EchoAction()), ActionDiscretizer([3, 3]))
    with pytest.raises(ValueError, match=r"expected 3 counts \(the action's last dim\)"):
        _ = env.action_spec


def test_flatten_action_takes_torchrl_dims_keys_and_action_shape():
    # TorchRL's FlattenAction(first_dim=-2, last_dim=-1, ...): here on a (2, 3) Box
    env = TransformedEnv(GymWrapper(GridAction()), FlattenAction(first_dim=-2, last_dim=-1))
    assert env.action_spec.shape == (6,)
    only_last = TransformedEnv(GymWrapper(GridAction()), FlattenAction(-1, -1))
    assert only_last.action_spec.shape == (2, 3)
    # outside an env: the span comes from action_shape; forward flattens, inverse unflattens
    t = FlattenAction(-2, -1, in_keys_inv=["a"], out_keys_inv=["flat"], action_shape=(2, 3))
    data = TensorDict(flat=torch.arange(12.0).view(2, 6), batch_size=[2])
    out = t.inv(data)
    assert out["a"].shape == (2, 2, 3)
    assert out["a"][1, 1].tolist() == [9.0, 10.0, 11.0]
    assert t(TensorDict(a=out["a"], batch_size=[2]))["a"].shape == (2, 6)
    # dims counted after the batch dims (TorchRL's allow_positive_dim)
    positive = FlattenAction(0, 1, allow_positive_dim=True)
    env = TransformedEnv(GymWrapper(GridAction()), positive)
    assert env.action_spec.shape == (6,)
    check_env_specs(env)
    with pytest.raises(ValueError, match="FlattenAction: expected a negative first_dim"):
        FlattenAction(0, 1)
    with pytest.raises(RuntimeError, match="the span of the action 'action' is unknown"):
        FlattenAction().inv(TensorDict(action=torch.zeros(6)))


class EchoPair(gym.Env):
    """Observes the (2,) action it was given."""

    metadata = {"render_modes": []}  # noqa: RUF012

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1, 1, (2,))
        self.action_space = gym.spaces.Box(-1, 1, (2,))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        return np.asarray(action, dtype=np.float32), 0.0, False, False, {}


@pytest.mark.parametrize("categorical", [True, False])
def test_own_out_action_key_keeps_the_env_action_in_the_rollout(categorical):
    # [-1, 1] in 4 intervals of width 0.5; LOW sends -1 + 0.5 * i.
    low = ActionDiscretizer.SamplingStrategy.LOW
    t = ActionDiscretizer(4, out_action_key="action_disc", sampling=low, categorical=categorical)
    env = TransformedEnv(GymWrapper(EchoPair()), t)
    assert set(env.full_action_spec.keys()) == {"action_disc"}
    assert env.full_state_spec["action"].dtype == torch.float32  # the env's action
    check_env_specs(env)
    traj = env.rollout(5)
    assert traj["action"].dtype == torch.float32
    assert traj["action_disc"].dtype == (torch.int64 if categorical else torch.bool)
    index = (
        traj["action_disc"] if categorical else traj["action_disc"].view(5, 2, 4).float().argmax(-1)
    )
    expected = -1.0 + 0.5 * index.float()
    torch.testing.assert_close(traj["action"], expected)
    torch.testing.assert_close(traj["next", "observation"], expected)  # what the env got


def test_own_out_action_key_records_the_random_point_the_env_got():
    rand = ActionDiscretizer.SamplingStrategy.RANDOM
    env = TransformedEnv(
        GymWrapper(EchoPair()), ActionDiscretizer(4, out_action_key="a_disc", sampling=rand)
    )
    traj = env.rollout(6)
    torch.testing.assert_close(traj["action"], traj["next", "observation"])
    lower = -1.0 + 0.5 * traj["a_disc"].float()
    assert bool(((traj["action"] >= lower) & (traj["action"] <= lower + 0.5)).all())
