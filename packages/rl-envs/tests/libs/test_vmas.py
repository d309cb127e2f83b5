"""VmasEnv/VmasWrapper on real VMAS scenarios: layout, specs, seeding, partial resets, errors."""

import pytest
import torch
from tensordict import TensorDict

from rl_core.envs.checks import check_env_specs
from rl_core.specs import Bounded, Categorical, OneHot
from rl_core.testing import EnvConformanceSuite
from rl_envs.batched import SerialEnv
from rl_envs.libs import MarlGroupMapType, VmasEnv, VmasWrapper

vmas = pytest.importorskip("vmas", reason='pip install "rl-envs[vmas]"')

N_ENVS = 3


def balance(**kwargs):
    """Continuous actions: 3 agents carry a package on a line."""
    return VmasEnv("balance", N_ENVS, max_steps=kwargs.pop("max_steps", 4), **kwargs)


def navigation(**kwargs):
    """Discrete actions (9 per agent): 4 agents reach their goals."""
    kwargs.setdefault("max_steps", 4)
    return VmasEnv("navigation", N_ENVS, continuous_actions=False, **kwargs)


class TestBalanceContinuous(EnvConformanceSuite):
    def make_env(self):
        return VmasEnv("balance", 2, max_steps=5)


class TestBalanceDiscreteOneHot(EnvConformanceSuite):
    def make_env(self):
        return VmasEnv(
            "balance", 2, continuous_actions=False, categorical_actions=False, max_steps=5
        )


# ---------------------------------------------------------------- layout and specs
def test_continuous_scenario_specs_and_check_env_specs():
    env = balance(seed=0)
    assert env.group_map == {"agents": ["agent_0", "agent_1", "agent_2"]}
    assert env.batch_size == (N_ENVS,)
    action = env.action_spec
    assert isinstance(action, Bounded)
    assert action.shape == (N_ENVS, 3, 2)
    # VMAS's u_range for balance agents is 1.
    assert torch.equal(action.low, -torch.ones(N_ENVS, 3, 2))
    assert torch.equal(action.high, torch.ones(N_ENVS, 3, 2))
    assert env.observation_spec["agents", "observation"].shape == (N_ENVS, 3, 16)
    assert env.full_reward_spec["agents", "reward"].shape == (N_ENVS, 3, 1)
    assert env.full_done_spec["agents", "done"].shape == (N_ENVS, 3, 1)
    assert env.full_done_spec["done"].shape == (N_ENVS, 1)
    assert set(env.observation_spec["agents", "info"].keys()) == {"pos_rew", "ground_rew"}
    assert env.action_keys == [("agents", "action")]
    check_env_specs(env)


@pytest.mark.parametrize("categorical", [True, False])
def test_discrete_scenario_specs_and_check_env_specs(categorical):
    env = navigation(categorical_actions=categorical, seed=0)
    action = env.action_spec
    if categorical:
        assert isinstance(action, Categorical)
        assert (action.shape, action.n) == ((N_ENVS, 4), 9)
    else:
        assert isinstance(action, OneHot)
        assert action.shape == (N_ENVS, 4, 9)
    check_env_specs(env)


def test_default_groups_follow_name_prefixes_and_group_map_is_honoured():
    env = VmasEnv("simple_adversary", 2, max_steps=3)
    assert env.group_map == {"adversary": ["adversary_0"], "agents": ["agent_0", "agent_1"]}
    td = env.rand_step(env.reset())
    assert td["next", "adversary", "observation"].shape == (2, 1, 8)
    assert td["next", "agents", "observation"].shape == (2, 2, 10)
    per_agent = VmasEnv(
        "balance", 2, group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT, max_steps=3, seed=0
    )
    assert list(per_agent.group_map) == ["agent_0", "agent_1", "agent_2"]
    check_env_specs(per_agent)
    with pytest.raises(ValueError, match="expected the same spec for every agent"):
        VmasEnv("simple_adversary", 2, group_map=MarlGroupMapType.ALL_IN_ONE_GROUP)


# ---------------------------------------------------------------- against VMAS itself
def test_steps_match_the_raw_vmas_env_agent_by_agent():
    """Same seed, same actions: the wrapper's group rows are VMAS's agents, in order."""
    actions = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8], [0, 8, 4, 2]])  # [env, agent]
    raw = vmas.make_env("navigation", N_ENVS, continuous_actions=False, seed=7)
    raw_obs = raw.reset(seed=7)
    obs, rewards, dones, _ = raw.step([actions[:, i] for i in range(4)])

    env = navigation(max_steps=None)
    env.set_seed(7)
    td = env.reset()
    torch.testing.assert_close(td["agents", "observation"], torch.stack(raw_obs, dim=1))
    td = env.step(td.set(("agents", "action"), actions))
    torch.testing.assert_close(td["next", "agents", "observation"], torch.stack(obs, dim=1))
    torch.testing.assert_close(
        td["next", "agents", "reward"], torch.stack(rewards, dim=1).unsqueeze(-1)
    )
    assert torch.equal(td["next", "done"].squeeze(-1), dones)


def test_one_hot_actions_move_agents_like_indices():
    chosen = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8], [0, 8, 4, 2]])
    indices, one_hot = navigation(), navigation(categorical_actions=False)
    indices.set_seed(3)
    a = indices.step(indices.reset().set(("agents", "action"), chosen))
    one_hot.set_seed(3)
    b = one_hot.step(
        one_hot.reset().set(("agents", "action"), torch.nn.functional.one_hot(chosen, 9).bool())
    )
    torch.testing.assert_close(
        a["next", "agents", "observation"], b["next", "agents", "observation"]
    )


# ---------------------------------------------------------------- rollouts, seeding, resets
def test_random_rollout_ends_at_max_steps_with_terminated():
    env = balance(max_steps=4, seed=0)
    td = env.rollout(10)
    assert td.batch_size == (N_ENVS, 4)
    assert td["next", "agents", "reward"].isfinite().all()
    done = td["next", "done"].squeeze(-1)
    assert done[:, -1].all()
    assert not done[:, :-1].any()
    assert torch.equal(td["next", "terminated"], td["next", "done"])
    assert not td["next", "truncated"].any()
    # Every agent of a finished sub-env is done.
    assert torch.equal(
        td["next", "agents", "done"], td["next", "done"].unsqueeze(-2).expand(-1, -1, 3, 1)
    )


def test_seeding_reproduces_rollouts_and_other_seeds_differ():
    env = balance()

    def run(seed):
        env.set_seed(seed)
        td = env.reset()
        for _ in range(3):
            td = env.rand_action(td)  # global torch RNG: fixed below
            td = env.step(td)["next"]
        return td["agents", "observation"]

    torch.manual_seed(0)
    first = run(1)
    torch.manual_seed(0)
    again = run(1)
    torch.manual_seed(0)
    other = run(2)
    torch.testing.assert_close(first, again)
    assert not torch.allclose(first, other)


@pytest.mark.parametrize("level", ["root", "group"])
def test_partial_reset_resets_only_masked_sub_envs(level):
    env = balance(max_steps=None, seed=0)
    td = env.reset()
    for _ in range(2):
        td = env.step(env.rand_action(td))["next"]
    before = td["agents", "observation"].clone()
    mask = torch.tensor([False, True, False])
    if level == "root":
        td.set("_reset", mask.unsqueeze(-1))
    else:
        td.set(("agents", "_reset"), mask.view(N_ENVS, 1, 1).expand(N_ENVS, 3, 1))
    out = env.reset(td)
    after = out["agents", "observation"]
    assert torch.equal(env._env.steps, torch.tensor([2.0, 0.0, 2.0]))
    torch.testing.assert_close(after[~mask], before[~mask])
    assert not torch.allclose(after[mask], before[mask])
    assert not out["done"].any()


def test_step_and_maybe_reset_restarts_finished_sub_envs():
    env = balance(max_steps=2, seed=0)
    td = env.reset()
    for _ in range(2):
        td, root = env.step_and_maybe_reset(env.rand_action(td))
        td = root
    assert not root["done"].any()
    assert torch.equal(env._env.steps, torch.zeros(N_ENVS))


def test_serial_env_of_vmas_envs():
    env = SerialEnv(2, lambda: VmasEnv("balance", 2, max_steps=3))
    env.set_seed(0)
    td = env.rollout(3)
    assert td.batch_size == (2, 2, 3)
    assert td["next", "agents", "observation"].shape == (2, 2, 3, 3, 16)
    assert td["next", "done"][..., -1, :].all()
    env.close()


# ---------------------------------------------------------------- errors
def test_errors_name_what_was_expected():
    with pytest.raises(ValueError, match="unknown scenario 'balanse'"):
        VmasEnv("balanse", 2)
    with pytest.raises(ValueError, match="num_envs must be an int >= 1, got 0"):
        VmasEnv("balance", 0)
    with pytest.raises(TypeError, match="expected a vmas Environment"):
        VmasWrapper(TensorDict())
    with pytest.raises(TypeError, match="unexpected arguments"):
        balance().reset(seed=3)


def test_wrapper_reads_the_env_settings():
    raw = vmas.make_env("navigation", 2, continuous_actions=False, max_steps=6)
    env = VmasWrapper(raw, categorical_actions=False)
    assert (env.num_envs, env.max_steps, env.continuous_actions) == (2, 6, False)
    assert env.n_agents == 4
    assert env.agent_names[0] == "agent_0"
    assert isinstance(env.action_spec, OneHot)
