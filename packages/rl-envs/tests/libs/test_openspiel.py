"""OpenSpielEnv / OpenSpielWrapper on real OpenSpiel games."""

import subprocess
import sys

import pytest
import torch

from rl_core.envs import check_env_specs
from rl_core.testing import EnvConformanceSuite
from rl_envs import MarlGroupMapType, OpenSpielEnv, OpenSpielWrapper

from ._batched_checks import ParallelEnv, SerialEnv, check_batched_rollouts

pyspiel = pytest.importorskip("pyspiel", reason='pip install "rl-envs[open-spiel]"')


class TestTicTacToe(EnvConformanceSuite):
    def make_env(self):
        return OpenSpielEnv("tic_tac_toe")


class TestKuhnPokerChanceNodes(EnvConformanceSuite):
    def make_env(self):
        return OpenSpielEnv("kuhn_poker", categorical_actions=True)


class TestGoofspielSimultaneousWithChance(EnvConformanceSuite):
    def make_env(self):
        return OpenSpielEnv(
            "goofspiel(num_cards=4)", group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT
        )


def _play(env, moves, group="agents", categorical=True):
    """Steps ``env`` from a reset through ``moves`` (one index per turn); returns the steps."""
    td = env.reset()
    out = []
    for move in moves:
        n = td[group, "action_mask"].shape[0]
        player = td["current_player"].item()
        action = torch.zeros(n, dtype=torch.int64)
        action[player] = move
        td[group, "action"] = action if categorical else torch.nn.functional.one_hot(action, 9)
        td = env.step(td)
        out.append(td["next"].clone())
        td = td["next"]
    return out


def test_tic_tac_toe_masks_turns_and_rewards():
    env = OpenSpielEnv("tic_tac_toe", categorical_actions=True)
    td = env.reset()
    assert td["current_player"].item() == 0
    mask = td["agents", "action_mask"]
    assert mask[0].all()
    assert mask[1].tolist() == [True] + [False] * 8  # not its turn: only action 0
    # x plays 0, 1, 2 (top row) while o plays 3, 4: x wins on its third move.
    steps = _play(env, [0, 3, 1, 4, 2])
    assert [s["current_player"].item() for s in steps[:4]] == [1, 0, 1, 0]
    assert not steps[0]["agents", "action_mask"][1, 0]  # the cell x took is gone
    assert steps[-1]["done"].item()
    assert steps[-1]["terminated"].item()
    assert not steps[-1]["truncated"].item()
    assert steps[-1]["agents", "reward"].squeeze(-1).tolist() == [1.0, -1.0]
    assert all(s["agents", "reward"].abs().sum() == 0 for s in steps[:-1])


def test_an_illegal_move_raises_naming_the_legal_ones():
    env = OpenSpielEnv("tic_tac_toe", categorical_actions=True)
    td = env.reset()
    td = env.step(td.set(("agents", "action"), torch.tensor([4, 0])))["next"]
    with pytest.raises(ValueError, match=r"player_1 .* played 4, which is not a legal move"):
        env.step(td.set(("agents", "action"), torch.tensor([0, 4])))


def test_kuhn_poker_chance_nodes_are_dealt_by_the_sampler():
    deals = iter([2, 0])  # player 0 gets the king, player 1 the jack
    env = OpenSpielEnv(
        "kuhn_poker", categorical_actions=True, chance_sampler=lambda outcomes, p: next(deals)
    )
    td = env.reset()
    ref = pyspiel.load_game("kuhn_poker").new_initial_state()
    ref.apply_action(2)
    ref.apply_action(0)
    for p in range(2):
        assert td["agents", "observation"][p].tolist() == ref.observation_tensor(p)
        assert td["agents", "information_state"][p].tolist() == ref.information_state_tensor(p)
    # Player 0 bets (1), player 1 folds (0): each anted 1, the bettor takes the pot: +1 / -1.
    td["agents", "action"] = torch.tensor([1, 0])
    td = env.step(td)["next"]
    td["agents", "action"] = torch.tensor([0, 0])
    last = env.step(td)["next"]
    assert last["done"].item()
    assert last["agents", "reward"].squeeze(-1).tolist() == [1.0, -1.0]


def test_kuhn_poker_deals_follow_the_seed():
    def deal(seed):
        env = OpenSpielEnv("kuhn_poker")
        env.set_seed(seed)
        return [env.reset()["agents", "observation"].clone() for _ in range(6)]

    a, b = deal(0), deal(0)
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(torch.equal(x, y) for x, y in zip(a, deal(1), strict=True))


def test_simultaneous_game_reads_every_players_action():
    env = OpenSpielEnv("matrix_rps", categorical_actions=True)
    td = env.reset()
    assert td["current_player"].item() == pyspiel.PlayerId.SIMULTANEOUS
    assert td["agents", "action_mask"].all()
    td["agents", "action"] = torch.tensor([0, 1])  # rock against paper
    out = env.step(td)["next"]
    assert out["done"].item()
    assert out["agents", "reward"].squeeze(-1).tolist() == [-1.0, 1.0]


def test_one_hot_actions_and_groups_per_player():
    env = OpenSpielEnv("tic_tac_toe", group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT)
    assert set(env.group_map) == {"player_0", "player_1"}
    assert env.action_spec["player_0", "action"].shape == (1, 9)
    check_env_specs(env)
    traj = env.rollout(9)
    assert traj["next", "done"][-1].item()
    taken = traj["player_0", "action"].argmax(-1)[traj["current_player"] == 0]
    assert len(set(taken.flatten().tolist())) == len(taken)  # never the same cell twice


def test_return_state_restores_the_game():
    env = OpenSpielEnv("tic_tac_toe", return_state=True)
    env.set_seed(0)
    traj = env.rollout(3)
    saved = traj[-1]["next"]
    assert isinstance(saved["state"], str)
    restored = env.reset(saved.select("state"))
    assert torch.equal(restored["agents", "observation"], saved["agents", "observation"])
    assert restored["current_player"] == saved["current_player"]


def test_a_wrapped_state_and_bad_inputs():
    env = OpenSpielWrapper(pyspiel.load_game("leduc_poker").new_initial_state())
    check_env_specs(env)
    with pytest.raises(TypeError, match=r"expected a pyspiel\.State"):
        OpenSpielWrapper("tic_tac_toe")
    with pytest.raises(ValueError, match="unknown game 'tic_tac_tow'"):
        OpenSpielEnv("tic_tac_tow")
    assert "kuhn_poker" in OpenSpielEnv.available_envs()


@pytest.mark.parametrize("batched", [SerialEnv, ParallelEnv])
def test_serial_and_parallel_envs(batched):
    check_batched_rollouts(lambda: OpenSpielEnv("kuhn_poker", categorical_actions=True), batched)


@pytest.mark.slow  # a child process imports torch and OpenSpiel
def test_states_cloned_from_a_freed_state_stay_valid():
    # pyspiel's morpion_solitaire clones read the state they came from: once it was freed
    # (the first reset replaced it), applying a move crashed the process. Run in a child
    # process so a crash fails this test only.
    code = (
        "import pyspiel, torch\n"
        "from rl_envs import OpenSpielEnv\n"
        "env = OpenSpielEnv('morpion_solitaire', categorical_actions=True)\n"
        "env.set_seed(0)\n"
        "torch.manual_seed(0)\n"
        "for _ in range(2):\n"
        "    traj = env.rollout(6)\n"
        "legal = set(pyspiel.load_game('morpion_solitaire').new_initial_state().legal_actions())\n"
        "print(len(traj), int(traj[0]['agents', 'action']) in legal)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["6", "True"]


def test_lib_is_the_pyspiel_module_on_the_class_and_the_env():
    assert OpenSpielWrapper.lib is pyspiel
    state = OpenSpielWrapper.lib.load_game("tic_tac_toe").new_initial_state()
    env = OpenSpielWrapper(state, categorical_actions=True)
    assert env.lib is pyspiel
    assert OpenSpielEnv.lib is pyspiel
    # player 0 moves first on an empty 3 x 3 board; player 1 waits (only move 0 legal)
    assert env.reset()["agents", "action_mask"].sum(-1).tolist() == [9, 1]
