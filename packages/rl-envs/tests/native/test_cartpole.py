import numpy as np
import pytest
import torch

from rl_core.envs import check_env_specs
from rl_core.testing import EnvConformanceSuite
from rl_envs.native import CartPoleEnv
from rl_envs.native.cartpole import cartpole_step, cartpole_terminated


class TestCartPoleConformance(EnvConformanceSuite):
    def make_env(self):
        return CartPoleEnv()


class TestBatchedCartPoleConformance(EnvConformanceSuite):
    def make_env(self):
        return CartPoleEnv(batch_size=[4, 2], categorical_action_encoding=True)


def _gym_cartpole(**kwargs):
    gym = pytest.importorskip("gymnasium")
    return gym.make("CartPole-v1", **kwargs)


@pytest.mark.parametrize(("dtype", "atol"), [(torch.float64, 1e-6), (torch.float32, 1e-4)])
def test_episodes_match_gymnasium(dtype, atol):
    gym_env = _gym_cartpole()
    env = CartPoleEnv(batch_size=[1], dtype=dtype, categorical_action_encoding=True)
    rng = np.random.default_rng(0)
    for episode in range(20):
        obs, _ = gym_env.reset(seed=episode)
        td = env.reset()
        env.set_state(torch.from_numpy(gym_env.unwrapped.state).reshape(1, 4))
        np.testing.assert_allclose(env.state[0].numpy(), obs, atol=1e-7)
        # A biased policy gives long and short episodes.
        p_right = rng.uniform(0.2, 0.8)
        while True:
            action = int(rng.random() < p_right)
            obs, reward, terminated, truncated, _ = gym_env.step(action)
            td["action"] = torch.tensor([action])
            nxt = env.step(td)["next"]
            np.testing.assert_allclose(nxt["observation"][0].numpy(), obs, atol=atol)
            assert nxt["reward"].item() == reward
            assert nxt["terminated"].item() == terminated
            assert nxt["truncated"].item() == truncated
            assert nxt["done"].item() == (terminated or truncated)
            if terminated or truncated:
                break
            td = nxt.exclude("reward")


def test_truncation_matches_gymnasium_time_limit():
    gym_env = _gym_cartpole(max_episode_steps=7)
    env = CartPoleEnv(max_episode_steps=7, dtype=torch.float64)
    gym_env.reset(seed=0)
    flags = []
    td = env.reset()
    env.set_state(torch.from_numpy(gym_env.unwrapped.state))
    for t in range(7):
        action = t % 2
        _, _, terminated, truncated, _ = gym_env.step(action)
        td["action"] = torch.nn.functional.one_hot(torch.tensor(action), 2).bool()
        nxt = env.step(td)["next"]
        flags.append((nxt["terminated"].item(), nxt["truncated"].item()))
        assert flags[-1] == (terminated, truncated)
        td = nxt.exclude("reward")
    assert flags[-1] == (False, True)


def test_default_time_limit_is_500():
    env = CartPoleEnv(batch_size=[2])
    td = env.reset()
    # Hold the pole upright by hand: the episode must end on the time limit.
    for _ in range(500):
        env.set_state(torch.zeros(2, 4))
        td = env.rand_step(td)["next"].exclude("reward")
    assert td["truncated"].all()
    assert not td["terminated"].any()


def test_no_time_limit():
    env = CartPoleEnv(max_episode_steps=None)
    td = env.reset()
    for _ in range(600):
        env.set_state(torch.zeros(4))
        td = env.rand_step(td)["next"].exclude("reward")
    assert not td["done"].any()


def test_partial_reset_keeps_other_states_and_counts():
    env = CartPoleEnv(batch_size=[3], max_episode_steps=5)
    td = env.reset()
    for _ in range(3):
        td = env.rand_step(td)["next"].exclude("reward")
    before = env.state
    td["_reset"] = torch.tensor([[False], [True], [False]])
    td = env.reset(td)
    after = env.state
    assert torch.equal(after[[0, 2]], before[[0, 2]])
    assert not torch.equal(after[1], before[1])
    assert torch.equal(td["observation"], after.float())
    for _ in range(2):
        td = env.rand_step(td)["next"].exclude("reward")
    # Sub-envs 0 and 2 reach 5 steps; sub-env 1, reset after 3, is at 2.
    assert td["truncated"].squeeze(-1).tolist() == [True, False, True]


def test_one_hot_and_categorical_actions_agree():
    one_hot = CartPoleEnv(batch_size=[2])
    categorical = CartPoleEnv(batch_size=[2], categorical_action_encoding=True)
    assert one_hot.action_spec.shape == (2, 2)
    assert categorical.action_spec.shape == (2,)
    start = torch.tensor([[0.01, 0.02, -0.03, 0.04], [0.0, 0.1, 0.02, -0.1]])
    for env in (one_hot, categorical):
        env.reset()
        env.set_state(start)
    a = one_hot.step(one_hot.reset().set("action", torch.tensor([[True, False], [False, True]])))
    b = categorical.step(categorical.reset().set("action", torch.tensor([0, 1])))
    assert torch.equal(a["next", "observation"], b["next", "observation"])


def test_observation_is_a_copy_of_the_state():
    env = CartPoleEnv()
    td = env.reset()
    td["observation"].add_(100.0)
    assert env.state.abs().max().item() <= 0.05


def test_dynamics_functions():
    state = torch.zeros(2, 4, dtype=torch.float64)
    nxt = cartpole_step(state, torch.tensor([True, False]))
    # From rest, the force only changes the velocities: x_acc = 10/1.1 - ml * theta_acc / M.
    assert nxt[:, 0].tolist() == [0.0, 0.0]
    assert nxt[0, 1].item() == pytest.approx(-nxt[1, 1].item())
    assert nxt[0, 1].item() > 0
    assert nxt[0, 3].item() < 0
    flags = cartpole_terminated(torch.tensor([[2.41, 0, 0, 0], [0, 0, 0.2, 0], [0, 0, -0.21, 0]]))
    assert flags.squeeze(-1).tolist() == [True, False, True]


def test_validation_errors():
    with pytest.raises(ValueError, match="expected max_episode_steps >= 1 or None, got 0"):
        CartPoleEnv(max_episode_steps=0)
    with pytest.raises(TypeError, match="expected a floating dtype"):
        CartPoleEnv(dtype=torch.int32)
    with pytest.raises(ValueError, match=r"set_state: expected shape \(3, 4\), got \(4,\)"):
        CartPoleEnv(batch_size=[3]).set_state(torch.zeros(4))


def test_large_batch_rollout():
    env = CartPoleEnv(batch_size=[1024])
    env.set_seed(0)
    traj = env.rollout(50, break_when_any_done=False)
    assert traj.batch_size == (1024, 50)
    # Random pushes end some episodes within 50 steps, and finished sub-envs restart.
    assert traj["next", "terminated"].any()
    assert (traj["observation"][..., 0].abs() <= 2.4 + 0.1).all()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda():
    env = CartPoleEnv(batch_size=[256], device="cuda")
    check_env_specs(env)
    traj = env.rollout(100, break_when_any_done=False)
    assert traj["next", "observation"].device.type == "cuda"
    assert traj["next", "done"].any()
