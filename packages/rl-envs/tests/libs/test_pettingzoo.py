"""PettingZooWrapper on real PettingZoo envs: layout, turns, masks, agent deaths, errors."""

import sys

import pytest
import torch
from tensordict import TensorDict
from testkit.package import modules_loaded_by

from rl_core.specs import Categorical, OneHot, Unbounded
from rl_envs.libs import MarlGroupMapType, PettingZooWrapper

pettingzoo = pytest.importorskip("pettingzoo")
simple_adversary_v3 = pytest.importorskip("mpe2.simple_adversary_v3")
simple_spread_v3 = pytest.importorskip("mpe2.simple_spread_v3")


def spread(n=3, **kwargs):
    return PettingZooWrapper(simple_spread_v3.parallel_env(N=n, max_cycles=10), **kwargs)


def tictactoe(**kwargs):
    return PettingZooWrapper(pettingzoo.make("aec", "classic/tictactoe_v3"), **kwargs)


# ---------------------------------------------------------------- layout and specs
def test_parallel_and_aec_envs_are_recognised():
    assert spread().parallel
    assert not tictactoe().parallel
    assert not PettingZooWrapper(simple_spread_v3.env(N=2)).parallel


def test_rejects_what_is_not_a_pettingzoo_env():
    with pytest.raises(TypeError, match="expected a pettingzoo ParallelEnv or AECEnv, got str"):
        PettingZooWrapper("simple_spread_v3")


def test_specs_lead_with_the_agent_dim():
    env = spread(3)
    obs = env.observation_spec["agents", "observation"]
    assert isinstance(obs, Unbounded)
    assert obs.shape == (3, 18)
    action = env.action_spec
    assert isinstance(action, Categorical)
    assert (action.shape, action.n) == ((3,), 5)
    assert env.full_reward_spec["agents", "reward"].shape == (3, 1)
    assert env.full_done_spec["agents", "done"].shape == (3, 1)
    assert env.full_done_spec["done"].shape == (1,)
    assert env.observation_spec["agents", "mask"].shape == (3,)
    assert env.action_keys == [("agents", "action")]


def test_one_hot_actions_move_agents_like_indices():
    indices, one_hot = spread(3, seed=1), spread(3, categorical_actions=False, seed=1)
    assert isinstance(one_hot.action_spec, OneHot)
    assert one_hot.action_spec.shape == (3, 5)
    chosen = torch.tensor([1, 2, 4])
    a = indices.step(indices.reset().set(("agents", "action"), chosen))
    b = one_hot.step(
        one_hot.reset().set(("agents", "action"), torch.nn.functional.one_hot(chosen, 5).bool())
    )
    assert torch.equal(a["next", "agents", "observation"], b["next", "agents", "observation"])


def test_continuous_actions_become_a_box():
    env = PettingZooWrapper(simple_spread_v3.parallel_env(N=2, continuous_actions=True))
    assert env.action_spec.shape == (2, 5)
    assert env.action_spec.dtype == torch.float32
    env.rollout(3)


def test_return_state_adds_the_global_state():
    env = spread(3, return_state=True)
    assert env.observation_spec["state"].shape == (54,)
    assert env.reset()["state"].shape == (54,)


def test_return_state_needs_a_state_space():
    with pytest.raises(ValueError, match=r"has no state_space.*return_state=False"):
        tictactoe(return_state=True)


def test_use_mask_false_drops_the_mask():
    env = spread(2, use_mask=False)
    assert ("agents", "mask") not in env.observation_keys
    assert ("agents", "mask") not in env.reset().keys(True, True)


def test_aec_needs_the_mask():
    with pytest.raises(ValueError, match="use_mask=False is not possible with the AEC API"):
        tictactoe(use_mask=False)


# ---------------------------------------------------------------- group maps
def test_agents_with_different_spaces_get_a_group_each_by_default():
    env = PettingZooWrapper(simple_adversary_v3.parallel_env())
    assert env.group_map == {a: [a] for a in ("adversary_0", "agent_0", "agent_1")}
    assert env.observation_spec["adversary_0", "observation"].shape == (1, 8)
    assert env.observation_spec["agent_1", "observation"].shape == (1, 10)


def test_group_map_by_name_prefix():
    env = PettingZooWrapper(
        simple_adversary_v3.parallel_env(), group_map=MarlGroupMapType.BY_NAME_PREFIX
    )
    assert env.group_map == {"adversary": ["adversary_0"], "agent": ["agent_0", "agent_1"]}
    td = env.rollout(4)
    assert td["next", "agent", "observation"].shape == (4, 2, 10)
    assert td["next", "adversary", "reward"].shape == (4, 1, 1)


def test_group_map_as_a_dict():
    env = spread(3, group_map={"left": ["agent_0"], "right": ["agent_2", "agent_1"]})
    td = env.reset()
    assert td["right", "observation"].shape == (2, 18)
    assert env.action_keys == [("left", "action"), ("right", "action")]


def test_one_group_of_agents_with_different_shapes_is_refused():
    with pytest.raises(ValueError, match=r"different shapes \(\[\(8,\), \(10,\)\]\)"):
        PettingZooWrapper(
            simple_adversary_v3.parallel_env(), group_map=MarlGroupMapType.ALL_IN_ONE_GROUP
        )


def test_bad_group_maps():
    with pytest.raises(ValueError, match=r"agents \['agent_2'\] are in no group"):
        spread(3, group_map={"team": ["agent_0", "agent_1"]})
    with pytest.raises(TypeError, match="expected group_map to be None, a MarlGroupMapType"):
        spread(3, group_map=["agent_0"])


# ---------------------------------------------------------------- turn-based (AEC) games
def board(td, group="agents"):
    """Cells taken by player_1 and player_2 (from player_1's observation)."""
    obs = td[group, "observation"][0]
    return obs[..., 0].flatten().nonzero().flatten().tolist(), obs[
        ..., 1
    ].flatten().nonzero().flatten().tolist()


def test_aec_reset_shows_whose_turn_it_is():
    td = tictactoe().reset()
    assert td["agents", "mask"].tolist() == [True, False]
    assert td["agents", "action_mask"].tolist() == [[True] * 9, [False] * 9]


def test_aec_step_uses_only_the_acting_agents_action():
    env = tictactoe()
    td = env.reset()
    td = env.step(td.set(("agents", "action"), torch.tensor([4, 8])))["next"]
    assert board(td) == ([4], [])
    assert td["agents", "mask"].tolist() == [False, True]
    assert td["agents", "action_mask"][1].tolist() == [i != 4 for i in range(9)]
    # player_1's action (4, taken) is ignored: it is player_2's turn.
    td = env.step(td.set(("agents", "action"), torch.tensor([4, 0])))["next"]
    assert board(td) == ([4], [0])
    assert td["agents", "reward"].squeeze(-1).tolist() == [0.0, 0.0]


def test_aec_game_end_rewards_and_flags():
    env = tictactoe()
    td = env.reset()
    # player_1 takes the top row (0, 1, 2) while player_2 plays 3 and 4.
    for move in [0, 3, 1, 4, 2]:
        td = env.step(td.set(("agents", "action"), torch.tensor([move, move])))["next"]
    assert td["agents", "reward"].squeeze(-1).tolist() == [1.0, -1.0]
    assert td["agents", "terminated"].all()
    assert not td["agents", "truncated"].any()
    assert [td[k].item() for k in ("done", "terminated", "truncated")] == [True, True, False]
    assert not td["agents", "mask"].any()


def test_rand_action_plays_legal_moves_only():
    env = tictactoe()
    env.set_seed(0)
    torch.manual_seed(0)
    traj = env.rollout(300, break_when_any_done=False)
    acting = traj["agents", "mask"]
    assert torch.equal(acting.sum(-1), torch.ones(300, dtype=torch.long))
    legal = traj["agents", "action_mask"].gather(-1, traj["agents", "action"].unsqueeze(-1))
    assert legal.squeeze(-1)[acting].all()
    # Every finished game has a winner and a loser, or a draw.
    ends = traj["next", "done"].squeeze(-1)
    rewards = traj["next", "agents", "reward"].squeeze(-1)[ends]
    assert ends.sum() > 10
    assert torch.equal(rewards.sum(-1), torch.zeros(int(ends.sum())))


def test_rand_action_without_a_tensordict_uses_the_last_mask():
    env = tictactoe()
    td = env.reset()
    env.step(td.set(("agents", "action"), torch.tensor([4, 0])))
    for _ in range(20):
        assert env.rand_action()["agents", "action"][1].item() != 4


# ---------------------------------------------------------------- agents that finish early
def test_dead_agents_are_masked_and_the_episode_goes_on():
    env = PettingZooWrapper(
        pettingzoo.make(
            "parallel", "butterfly/knights_archers_zombies_v11", spawn_delay=2, max_zombies=20
        ),
        seed=0,
    )
    torch.manual_seed(0)
    traj = env.rollout(300, break_when_any_done=False)
    done = traj["next", "agents", "done"].squeeze(-1)
    root_done = traj["next", "done"].squeeze(-1)
    partly = done.any(-1) & ~done.all(-1)
    assert partly.any(), "no agent died alone in 300 steps: pick another seed"
    first = int(partly.nonzero()[0])
    episode_end = int(root_done.nonzero()[0])
    dead = done[first]
    assert not root_done[first:episode_end].any()
    # Dead agents stay done, do not act, see zeros and get no reward until the episode ends.
    assert done[first : episode_end + 1][:, dead].all()
    assert not traj["agents", "mask"][first + 1 : episode_end + 1][:, dead].any()
    assert (traj["next", "agents", "observation"][first + 1 : episode_end + 1][:, dead] == 0).all()
    assert (traj["next", "agents", "reward"][first + 1 : episode_end + 1][:, dead] == 0).all()
    # A new episode starts with everybody alive.
    assert traj["agents", "mask"][episode_end + 1].all()


def test_episode_end_by_time_limit_is_a_truncation():
    env = PettingZooWrapper(simple_spread_v3.parallel_env(N=2, max_cycles=4))
    traj = env.rollout(10)
    assert traj.batch_size == (4,)
    last = traj[-1]["next"]
    assert [last[k].item() for k in ("done", "terminated", "truncated")] == [True, False, True]
    assert last["agents", "truncated"].all()
    assert not last["agents", "terminated"].any()


def test_step_and_maybe_reset_starts_a_new_episode():
    env = PettingZooWrapper(simple_spread_v3.parallel_env(N=2, max_cycles=2), seed=0)
    td = env.reset()
    for _ in range(2):
        td = env.rand_action(td)
        transition, td = env.step_and_maybe_reset(td)
    assert transition["next", "done"].item()
    assert not td["done"].item()
    assert td["agents", "mask"].all()
    env.rand_step(td)


def test_agent_level_reset_during_an_episode_changes_nothing():
    env, twin = spread(3, seed=2), spread(3, seed=2)
    torch.manual_seed(0)
    actions = env.full_action_spec.rand()
    td = env.step(env.reset().update(actions))["next"]
    twin_td = twin.step(twin.reset().update(actions))["next"]
    td.set(("agents", "_reset"), torch.tensor([[True], [False], [False]]))
    out = env.reset(td)
    assert torch.equal(out["agents", "observation"], twin_td["agents", "observation"])
    assert ("agents", "_reset") not in out.keys(True, True)
    a = env.step(out.update(actions))["next", "agents", "observation"]
    b = twin.step(twin_td.update(actions))["next", "agents", "observation"]
    assert torch.equal(a, b)


# ---------------------------------------------------------------- seeding and reset arguments
def test_set_seed_and_reset_seed_repeat_the_episode():
    env = spread(3)
    env.set_seed(11)
    first = env.reset()["agents", "observation"]
    assert torch.equal(env.reset(seed=11)["agents", "observation"], first)
    assert not torch.equal(env.reset()["agents", "observation"], first)


def test_reset_refuses_unknown_arguments():
    with pytest.raises(TypeError, match=r"unexpected arguments \['options'\]"):
        spread(2).reset(options={})


def test_rand_action_fills_a_given_tensordict():
    env = spread(2)
    td = env.rand_action(TensorDict())
    assert td["agents", "action"].shape == (2,)


def test_stepping_a_finished_episode_asks_for_a_reset():
    env = PettingZooWrapper(simple_spread_v3.parallel_env(N=2, max_cycles=1))
    td = env.rand_step(env.reset())
    assert td["next", "done"].item()
    with pytest.raises(RuntimeError, match=r"the episode is over .* call reset\(\) first"):
        env.rand_step(td["next"])


def test_missing_pettingzoo_names_the_extra(monkeypatch):
    env = simple_spread_v3.parallel_env(N=2)
    monkeypatch.setitem(sys.modules, "pettingzoo", None)
    with pytest.raises(ImportError, match=r'PettingZooWrapper needs pettingzoo: pip install "rl-'):
        PettingZooWrapper(env)


def test_importing_the_wrappers_loads_no_optional_library():
    loaded = modules_loaded_by("import rl_envs")  # which imports rl_envs.libs (checked)
    assert "rl_envs.libs" in loaded
    assert not {"pettingzoo", "mpe2", "gymnasium", "pygame"} & {m.split(".")[0] for m in loaded}
