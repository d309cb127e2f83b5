"""CEMPlanner and MPPIPlanner: one refit against float64 references of the definitions, plus
planning quality, batching and the errors."""

import math
import re

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_core.envs import EnvBase
from rl_core.specs import Bounded, Composite, Unbounded
from rl_envs.model_based import CEMPlanner, MPCPlannerBase, MPPIPlanner
from rl_envs.transforms import RewardSum


class Drift(EnvBase):
    """x' = x + a, reward -sum(x'^2); steps any batch (like a model-based env)."""

    def __init__(self, dim: int = 2, low: float = -1.0, high: float = 1.0) -> None:
        super().__init__()
        self.observation_spec = Composite(observation=Unbounded(shape=(dim,)))
        self.action_spec = Bounded(low, high, shape=(dim,))
        self.dim = dim

    def _reset(self, tensordict):
        return TensorDict(observation=torch.ones(self.dim))

    def _step(self, tensordict):
        x = tensordict["observation"] + tensordict["action"]
        return TensorDict(
            observation=x,
            reward=-x.square().sum(-1, keepdim=True),
            terminated=torch.zeros(*x.shape[:-1], 1, dtype=torch.bool),
            batch_size=tensordict.batch_size,
        )

    def _set_seed(self, seed):
        torch.manual_seed(seed)


def reward_to_go(traj):
    r = traj["next", "reward"]
    return traj.set("advantage", r.flip(-2).cumsum(-2).flip(-2))


def ref_scores(x0, actions, low, high):
    """Float64 returns of each candidate: a list over candidates of the summed rewards (each
    action clamped to [low, high] first)."""
    out = []
    for seq in actions:
        x, total = list(x0), 0.0
        for a in seq:
            x = [xi + min(max(ai, low), high) for xi, ai in zip(x, a, strict=True)]
            total += -sum(v * v for v in x)
        out.append(total)
    return out


def test_cem_one_refit_matches_reference():
    env = Drift()
    planner = CEMPlanner(env, planning_horizon=3, optim_steps=1, num_candidates=10, top_k=3)
    x0 = [0.8, -0.4]
    torch.manual_seed(5)
    action = planner(TensorDict(observation=torch.tensor(x0)))["action"]
    torch.manual_seed(5)
    samples = torch.randn(10, 3, 2).double().tolist()  # mean 0, std 1 at first
    scores = ref_scores(x0, samples, -1.0, 1.0)
    elite = sorted(range(10), key=lambda i: scores[i], reverse=True)[:3]
    expected = [sum(min(max(samples[i][0][d], -1.0), 1.0) for i in elite) / 3 for d in range(2)]
    torch.testing.assert_close(action.double(), torch.tensor(expected, dtype=torch.float64),
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def test_mppi_one_refit_matches_reference():
    env = Drift()
    temperature = 0.7
    planner = MPPIPlanner(env, reward_to_go, temperature, planning_horizon=3, optim_steps=1,
                          num_candidates=10, top_k=4)  # fmt: skip
    x0 = [0.3, 0.9]
    torch.manual_seed(11)
    action = planner(TensorDict(observation=torch.tensor(x0)))["action"]
    torch.manual_seed(11)
    samples = torch.randn(10, 3, 2).double().tolist()
    scores = ref_scores(x0, samples, -1.0, 1.0)  # the advantage at the first step
    elite = sorted(range(10), key=lambda i: scores[i], reverse=True)[:4]
    weights = [math.exp(temperature * scores[i]) for i in elite]
    expected = [
        sum(w * min(max(samples[i][0][d], -1.0), 1.0) for w, i in zip(weights, elite, strict=True))
        / sum(weights)
        for d in range(2)
    ]
    torch.testing.assert_close(action.double(), torch.tensor(expected, dtype=torch.float64),
                               rtol=1e-5, atol=1e-6)  # fmt: skip


@pytest.mark.parametrize("kind", ["cem", "mppi"])
def test_planners_are_batched_and_find_the_best_first_action(kind):
    env = Drift()
    torch.manual_seed(0)
    if kind == "cem":
        planner = CEMPlanner(env, 3, 5, 128, 12)
    else:
        planner = MPPIPlanner(env, reward_to_go, 5.0, 3, 5, 128, 12)
    x = torch.tensor([[0.5, -0.5], [0.2, 0.7], [-0.9, 0.1]])
    td = planner(TensorDict(observation=x, batch_size=[3]))
    assert td["action"].shape == (3, 2)
    assert td["action"].dtype == torch.float32
    torch.testing.assert_close(td["action"], -x, atol=0.15, rtol=0)  # back to 0 in one step


def test_action_is_clamped_into_the_spec():
    env = Drift(dim=1, low=-0.2, high=0.2)
    torch.manual_seed(0)
    planner = CEMPlanner(env, 2, 3, 64, 8)
    action = planner(TensorDict(observation=torch.tensor([[3.0], [-3.0]]), batch_size=[2]))
    assert torch.equal(action["action"], torch.tensor([[-0.2], [0.2]]))


def test_planner_drives_a_rollout_of_a_transformed_env():
    env = TransformedEnv(Drift(), RewardSum())
    torch.manual_seed(0)
    planner = CEMPlanner(env, 2, 3, 64, 8)
    traj = env.rollout(5, planner)
    assert traj.batch_size == (5,)
    assert traj["next", "episode_reward"][-1].item() > -0.5  # random actions: about -5


def test_constructor_errors():
    env = Drift()
    with pytest.raises(ValueError, match=r"expected top_k <= num_candidates \(4\), got top_k=5"):
        CEMPlanner(env, 3, 2, 4, 5)
    with pytest.raises(ValueError, match="expected planning_horizon as a positive int, got 0"):
        CEMPlanner(env, 0, 2, 4, 2)
    with pytest.raises(
        ValueError, match=r"expected temperature as a positive finite number, got 0\.0"
    ):
        MPPIPlanner(env, reward_to_go, 0.0, 3, 2, 4, 2)
    with pytest.raises(KeyError, match="expected action_key to be one of the env's action keys"):
        CEMPlanner(env, 3, 2, 4, 2, action_key="torque")
    with pytest.raises(TypeError, match="abstract"):
        MPCPlannerBase(env)


def test_mppi_refuses_an_advantage_module_that_writes_no_advantage():
    planner = MPPIPlanner(Drift(), lambda td: td, 1.0, 2, 1, 4, 2)
    with pytest.raises(KeyError, match="expected advantage_module to write 'advantage'"):
        planner(TensorDict(observation=torch.zeros(2)))


# Issue 49: sizes and arguments that used to pass the checks (a bool, NaN, inf) or fail with an
# error naming nothing; each is refused at construction, naming the argument.
@pytest.mark.parametrize("name", ["planning_horizon", "optim_steps", "num_candidates", "top_k"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), True, -2, 0.5])
def test_every_size_is_refused_unless_a_positive_int(name, value):
    sizes = {"planning_horizon": 3, "optim_steps": 2, "num_candidates": 4, "top_k": 2}
    sizes[name] = value
    message = re.escape(f"expected {name} as a positive int, got {value!r}")
    with pytest.raises(ValueError, match=message):
        CEMPlanner(Drift(), **sizes)
    with pytest.raises(ValueError, match=message):
        MPPIPlanner(Drift(), reward_to_go, 1.0, **sizes)


@pytest.mark.parametrize("temperature", [float("inf"), float("nan"), -1.0, "1.0", True])
def test_mppi_refuses_a_temperature_that_is_not_a_positive_finite_number(temperature):
    with pytest.raises(ValueError, match="MPPIPlanner: expected temperature as a positive finite"):
        MPPIPlanner(Drift(), reward_to_go, temperature, 3, 2, 4, 2)


def test_planners_refuse_a_non_env_and_a_missing_advantage_module_at_construction():
    with pytest.raises(TypeError, match=r"CEMPlanner: expected env as an EnvBase .*, got str"):
        CEMPlanner("Pendulum-v1", 3, 2, 4, 2)
    with pytest.raises(TypeError, match=r"MPPIPlanner: expected advantage_module .* got NoneType"):
        MPPIPlanner(Drift(), None, 1.0, 3, 2, 4, 2)


class NaNReward(Drift):
    """Drift whose rewards are NaN: a learned model that diverged."""

    def _step(self, tensordict):
        out = super()._step(tensordict)
        return out.set("reward", out["reward"] * float("nan"))


@pytest.mark.parametrize("kind", ["cem", "mppi"])
def test_a_nan_state_is_refused_naming_its_key(kind):
    planner = (
        CEMPlanner(Drift(), 3, 2, 8, 2)
        if kind == "cem"
        else MPPIPlanner(Drift(), reward_to_go, 1.0, 3, 2, 8, 2)
    )
    state = TensorDict(observation=torch.tensor([0.5, float("nan")]))
    with pytest.raises(ValueError, match=r"the state entry 'observation': 1 NaN or infinite value"):
        planner(state)
    assert "action" not in state.keys()


def test_cem_refuses_nan_rewards_instead_of_planning_on_them():
    # before: topk over NaN returns picked arbitrary elites and a finite, meaningless action
    planner = CEMPlanner(NaNReward(), 3, 2, 8, 2)
    with pytest.raises(ValueError, match=r"CEMPlanner: the rewards at \('next', 'reward'\)"):
        planner(TensorDict(observation=torch.zeros(2)))


def test_mppi_refuses_nan_advantages_instead_of_returning_a_nan_action():
    planner = MPPIPlanner(NaNReward(), reward_to_go, 1.0, 3, 2, 8, 2)
    with pytest.raises(ValueError, match="MPPIPlanner: the 'advantage' that advantage_module"):
        planner(TensorDict(observation=torch.zeros(2)))


def test_cem_names_a_reward_key_the_env_does_not_write():
    planner = CEMPlanner(Drift(), 3, 2, 8, 2, reward_key="cost")
    with pytest.raises(KeyError, match=r"no reward at \('next', 'cost'\) \(reward_key='cost'\)"):
        planner(TensorDict(observation=torch.zeros(2)))


def clamp(v, low=-1.0, high=1.0):
    return min(max(v, low), high)


def test_cem_refits_its_spread_with_the_unbiased_std():
    # TorchRL: std = torch.std(elites) (Bessel's correction, k - 1), not the biased k.
    x0, k = [0.8, -0.4], 3
    planner = CEMPlanner(Drift(), planning_horizon=3, optim_steps=2, num_candidates=10, top_k=k)
    torch.manual_seed(5)
    action = planner(TensorDict(observation=torch.tensor(x0)))["action"]

    def reference(ddof):
        torch.manual_seed(5)
        first = [
            [[clamp(a) for a in step] for step in seq]
            for seq in torch.randn(10, 3, 2).double().tolist()
        ]
        scores = ref_scores(x0, first, -1.0, 1.0)
        elite = sorted(range(10), key=lambda i: scores[i], reverse=True)[:k]
        mean = [[sum(first[i][t][d] for i in elite) / k for d in range(2)] for t in range(3)]
        std = [
            [math.sqrt(sum((first[i][t][d] - mean[t][d]) ** 2 for i in elite) / (k - ddof))
             for d in range(2)]
            for t in range(3)
        ]  # fmt: skip
        noise = torch.randn(10, 3, 2).double().tolist()
        second = [
            [[clamp(mean[t][d] + std[t][d] * noise[i][t][d]) for d in range(2)] for t in range(3)]
            for i in range(10)
        ]
        scores = ref_scores(x0, second, -1.0, 1.0)
        elite = sorted(range(10), key=lambda i: scores[i], reverse=True)[:k]
        return torch.tensor([sum(second[i][0][d] for i in elite) / k for d in range(2)])

    expected, biased = reference(ddof=1), reference(ddof=0)
    assert (expected - biased).abs().max() > 1e-3  # the two refits lead to different plans
    torch.testing.assert_close(action.double(), expected.double(), rtol=1e-5, atol=1e-5)


class Cliff(EnvBase):
    """x' = x + a, reward 2 + a, terminated once x' >= 1.5; steps any batch."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_spec = Composite(observation=Unbounded(shape=(1,)))
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))

    def _reset(self, tensordict):
        return TensorDict(observation=torch.zeros(1))

    def _step(self, tensordict):
        a = tensordict["action"]
        x = tensordict["observation"] + a
        return TensorDict(
            observation=x, reward=2.0 + a, terminated=x >= 1.5, batch_size=tensordict.batch_size
        )

    def _set_seed(self, seed):
        torch.manual_seed(seed)


def cliff_rewards(samples, stop_after=None):
    """Per candidate, the rewards of each step (0 after its first done step, whose reward
    counts), and the index of that step (None if it stays alive); ``stop_after`` cuts every
    candidate after that step (the former behaviour: all stop at the first done)."""
    rewards, done_at = [], []
    for seq in samples:
        x, row, first = 0.0, [], None
        for t, step in enumerate(seq):
            if stop_after is not None and t > stop_after:
                break
            a = clamp(step[0])
            x += a
            row.append(2.0 + a if first is None else 0.0)
            if first is None and x >= 1.5:
                first = t
        rewards.append(row)
        done_at.append(first)
    return rewards, done_at


def test_cem_zeroes_rewards_after_each_candidates_own_done_only():
    planner = CEMPlanner(Cliff(), planning_horizon=3, optim_steps=1, num_candidates=10, top_k=1)
    torch.manual_seed(9)
    action = planner(TensorDict(observation=torch.zeros(1)))["action"]
    torch.manual_seed(9)
    samples = torch.randn(10, 3, 1).double().tolist()
    rewards, done_at = cliff_rewards(samples)
    returns = [sum(row) for row in rewards]
    best = max(range(10), key=lambda i: returns[i])
    # the scenario: one candidate ends at step 1, inside the horizon; cutting every candidate
    # there (as before) would pick another one
    first_done = min(t for t in done_at if t is not None)
    assert first_done < 2
    assert done_at[best] is None
    cut, _ = cliff_rewards(samples, stop_after=first_done)
    assert max(range(10), key=lambda i: sum(cut[i])) != best
    torch.testing.assert_close(action.double(), torch.tensor([clamp(samples[best][0][0])]).double())


def test_mppi_scores_full_horizon_rewards_masked_after_each_done():
    seen = []

    def record(traj):
        seen.append(traj["next", "reward"].clone())
        return reward_to_go(traj)

    planner = MPPIPlanner(Cliff(), record, 1.0, planning_horizon=3, optim_steps=1,
                          num_candidates=10, top_k=3)  # fmt: skip
    torch.manual_seed(9)
    planner(TensorDict(observation=torch.zeros(1)))
    torch.manual_seed(9)
    rewards, done_at = cliff_rewards(torch.randn(10, 3, 1).double().tolist())
    assert any(t is not None and t < 2 for t in done_at)
    assert seen[0].shape == (10, 3, 1)  # every candidate ran the whole horizon
    torch.testing.assert_close(seen[0].squeeze(-1).double(), torch.tensor(rewards).double())


@pytest.mark.parametrize("kind", ["cem", "mppi"])
def test_reward_key_spelled_as_torchrl_reads_the_same_reward(kind):
    def make(**kwargs):
        if kind == "cem":
            return CEMPlanner(Drift(), 3, 2, 16, 4, **kwargs)
        return MPPIPlanner(Drift(), reward_to_go, 1.0, 3, 2, 16, 4, **kwargs)

    state = TensorDict(observation=torch.tensor([0.5, -0.2]))
    actions = []
    for kwargs in ({}, {"reward_key": ("next", "reward")}, {"reward_key": "reward"}):
        torch.manual_seed(3)
        actions.append(make(**kwargs)(state.clone())["action"])
    torch.testing.assert_close(actions[1], actions[0])
    torch.testing.assert_close(actions[2], actions[0])
    with pytest.raises(TypeError, match=r"CEMPlanner: expected reward_key as a str or a tuple"):
        CEMPlanner(Drift(), 3, 2, 16, 4, reward_key=3)
