"""TicTacToeEnv: TorchRL's keys and specs, and whole games checked by hand."""

import pytest
import torch

from rl_core import check_env_specs
from rl_envs.native import TicTacToeEnv


def play(moves, batch=1):
    env = TicTacToeEnv(batch_size=[batch])
    td = env.reset()
    steps = []
    for cell in moves:
        out = env.step(td.set("action", torch.full((batch,), cell)))["next"]
        steps.append(out)
        td = out.clone()
    return steps


def flags(td):
    return (
        td["player0", "reward"].item(),
        td["player1", "reward"].item(),
        td["done"].item(),
        td["terminated"].item(),
    )


@pytest.mark.parametrize(
    ("moves", "winner"),
    [
        ([0, 3, 1, 4, 2], 0),  # top row
        ([1, 0, 4, 3, 8, 6], 1),  # player 1: left column
        ([0, 1, 4, 2, 8], 0),  # diagonal
        ([0, 2, 1, 4, 8, 6], 1),  # player 1: anti-diagonal
    ],
)
def test_a_completed_line_wins(moves, winner):
    steps = play(moves)
    for td in steps[:-1]:
        assert flags(td) == (0.0, 0.0, False, False)
    rewards = [0.0, 0.0]
    rewards[winner] = 1.0
    assert flags(steps[-1]) == (*rewards, True, True)


def test_a_full_board_without_a_line_is_a_draw():
    steps = play([0, 1, 2, 4, 3, 5, 7, 6, 8])
    assert [td["done"].item() for td in steps] == [False] * 8 + [True]
    assert flags(steps[-1]) == (0.0, 0.0, True, True)
    assert not steps[-1]["mask"].any()


def test_board_is_seen_by_the_player_to_move():
    (first, second) = play([4, 0])
    # after player 0's move the board is player 1's view: player 0's stone is 0
    assert first["board"][0].flatten().tolist() == [-1, -1, -1, -1, 0, -1, -1, -1, -1]
    assert first["turn"].item() == 1
    assert second["board"][0].flatten().tolist() == [0, -1, -1, -1, 1, -1, -1, -1, -1]
    assert second["mask"][0].tolist() == [False, True, True, True, False, True, True, True, True]


def test_specs_match_torchrl_keys():
    env = TicTacToeEnv(batch_size=[3])
    check_env_specs(env)
    assert set(env.observation_spec.keys()) == {"board", "turn", "mask"}
    assert env.action_spec.n == 9
    assert set(env.reward_keys) == {("player0", "reward"), ("player1", "reward")}
    assert env.full_observation_spec["board"].dtype == torch.int32


def test_random_rollout_respects_the_mask_and_resets():
    env = TicTacToeEnv(batch_size=[16])
    env.set_seed(0)
    traj = env.rollout(30, break_when_any_done=False)
    legal = traj["mask"].gather(-1, traj["action"].unsqueeze(-1))
    assert legal.all()
    assert traj["next", "done"].any()


def test_single_player_answers_with_a_random_legal_move():
    env = TicTacToeEnv(single_player=True, batch_size=[8])
    env.set_seed(3)
    check_env_specs(env)
    td = env.reset()
    td = env.step(td.set("action", torch.full((8,), 4)))["next"]
    assert (td["turn"] == 0).all()  # player 1 has answered
    assert ((td["board"] == 0).flatten(1).sum(-1) == 1).all()  # one stone of player 0 ...
    assert ((td["board"] == 1).flatten(1).sum(-1) == 1).all()  # ... one of player 1


def test_bad_moves_are_refused():
    env = TicTacToeEnv(batch_size=[2])
    td = env.step(env.reset().set("action", torch.tensor([0, 1])))["next"]
    with pytest.raises(ValueError, match=r"occupied in sub-env\(s\) \[\[1\]\] \(actions \[1\]\)"):
        env.step(td.set("action", torch.tensor([2, 1])))
    with pytest.raises(ValueError, match=r"expected integer actions in \[0, 9\), got \[9, 2\]"):
        env.step(td.set("action", torch.tensor([9, 2])))
    with pytest.raises(KeyError, match="expected the entries 'board' and 'turn'"):
        env.step(td.exclude("board").set("action", torch.tensor([2, 3])))
    with pytest.raises(TypeError, match="single_player to be a bool, got int"):
        TicTacToeEnv(single_player=1)
