import math

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core.envs import check_env_specs
from rl_core.testing import EnvConformanceSuite
from rl_core.transforms import StepCounter, TransformedEnv
from rl_envs.native import PendulumEnv
from rl_envs.native.pendulum import angle_normalize, pendulum_step


class TestPendulumConformance(EnvConformanceSuite):
    def make_env(self):
        return PendulumEnv()


class TestBatchedPendulumConformance(EnvConformanceSuite):
    def make_env(self):
        return PendulumEnv(batch_size=[3, 2])


def _gym_pendulum(g=10.0):
    gym = pytest.importorskip("gymnasium")
    env = gym.make("Pendulum-v1", g=g).unwrapped
    env.reset(seed=0)
    return env


@pytest.mark.parametrize(
    ("dtype", "atol", "steps"), [(torch.float64, 1e-6, 200), (torch.float32, 1e-3, 60)]
)
def test_matches_gymnasium(dtype, atol, steps):
    gym_env = _gym_pendulum()
    env = PendulumEnv(batch_size=[1], dtype=dtype)
    th, thdot = 2.5, -0.7
    gym_env.state = np.array([th, thdot])
    td = env.reset()
    td["th"] = torch.tensor([[th]], dtype=dtype)
    td["thdot"] = torch.tensor([[thdot]], dtype=dtype)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        # Torques beyond the bounds exercise the clipping too.
        action = rng.uniform(-2.5, 2.5, size=(1,)).astype(np.float32)
        obs, reward, terminated, truncated, _ = gym_env.step(action)
        td["action"] = torch.from_numpy(action).reshape(1, 1)
        td = env.step(td)
        nxt = td["next"]
        np.testing.assert_allclose(nxt["observation"][0].numpy(), obs, atol=atol)
        np.testing.assert_allclose(nxt["reward"].item(), reward, atol=atol * 10)
        assert not nxt["done"].any()
        assert not terminated
        assert not truncated
        td = td["next"].exclude("reward")


def test_other_gravity_matches_gymnasium():
    gym_env = _gym_pendulum(g=9.81)
    env = PendulumEnv(9.81, dtype=torch.float64)
    gym_env.state = np.array([0.3, 0.1])
    td = env.reset().update(
        {"th": torch.tensor([0.3]).double(), "thdot": torch.tensor([0.1]).double()}
    )
    for _ in range(50):
        obs, *_ = gym_env.step(np.array([0.5], dtype=np.float32))
        td = env.step(td.set("action", torch.tensor([0.5])))["next"].exclude("reward")
    np.testing.assert_allclose(td["observation"].numpy(), obs, atol=1e-6)


def test_state_travels_in_the_tensordict():
    env = PendulumEnv(batch_size=[2])
    td = env.reset()
    td["th"] = torch.tensor([[0.0], [math.pi]])
    td["thdot"] = torch.zeros(2, 1)
    td["action"] = torch.zeros(2, 1)
    nxt = env.step(td)["next"]
    # Upright and still: nothing moves, zero cost. Hanging down: cost pi^2, still at rest.
    assert nxt["th"][0].item() == 0.0
    assert nxt["reward"][0].item() == 0.0
    assert nxt["reward"][1].item() == pytest.approx(-(math.pi**2), abs=1e-5)
    assert nxt["observation"][0].tolist() == [1.0, 0.0, 0.0]


def test_step_without_state_names_the_missing_entries():
    env = PendulumEnv()
    td = TensorDict(action=torch.zeros(1))
    with pytest.raises(KeyError, match=r"expected the state entries 'th' and 'thdot'"):
        env.step(td)


def test_state_is_declared_in_state_spec():
    env = PendulumEnv(batch_size=[5], dtype=torch.float64)
    assert set(env.state_keys) == {"th", "thdot"}
    assert env.state_spec["th"].shape == (5, 1)
    assert env.state_spec["th"].dtype == torch.float64
    assert env.observation_spec["observation"].dtype == torch.float32


def test_reset_distribution():
    env = PendulumEnv(batch_size=[4000])
    env.set_seed(3)
    td = env.reset()
    assert td["th"].abs().max().item() <= math.pi
    assert td["thdot"].abs().max().item() <= 1.0
    assert td["th"].std().item() == pytest.approx(math.pi / math.sqrt(3), rel=0.05)


def test_seeded_resets_repeat():
    a, b = PendulumEnv(batch_size=[3]), PendulumEnv(batch_size=[3])
    a.set_seed(1)
    b.set_seed(1)
    assert torch.equal(a.reset()["th"], b.reset()["th"])


def test_time_limit_through_step_counter():
    env = TransformedEnv(PendulumEnv(), StepCounter(max_steps=200))
    traj = env.rollout(1000)
    assert traj.batch_size == (200,)
    assert traj["next", "truncated"][-1].item()
    check_env_specs(env)


def test_angle_normalize_and_step_function():
    theta = torch.tensor([0.0, math.pi, -math.pi, 3 * math.pi / 2], dtype=torch.float64)
    assert angle_normalize(theta).tolist() == pytest.approx([0.0, -math.pi, -math.pi, -math.pi / 2])
    th, thdot = torch.zeros(3), torch.tensor([7.99, 0.0, -7.99])
    new_th, new_thdot, reward = pendulum_step(th, thdot, torch.tensor([5.0, 1.0, -5.0]), 10.0)
    assert new_thdot.tolist() == pytest.approx([8.0, 0.15, -8.0])
    assert new_th.tolist() == pytest.approx([0.4, 0.0075, -0.4])
    assert reward[1].item() == pytest.approx(-0.001)


def test_rejects_integer_dtype():
    with pytest.raises(TypeError, match="expected a floating dtype"):
        PendulumEnv(dtype=torch.int64)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda():
    env = PendulumEnv(batch_size=[64], device="cuda")
    check_env_specs(env)
    traj = env.rollout(20)
    assert traj["next", "observation"].device.type == "cuda"
