"""ChessEnv: TorchRL's keys, and game endings checked by hand."""

import pytest
import torch
from tensordict import TensorDict

pytest.importorskip("chess", reason='ChessEnv needs python-chess: pip install "rl-envs[chess]"')

from rl_core import check_env_specs
from rl_envs.native import ChessEnv
from rl_envs.native.chess_env import uci_moves


def play(env, td, *moves):
    for move in moves:
        td = env.step(td.set("action", torch.tensor(uci_moves().index(move))))["next"]
    return td


def test_the_action_space_counts_every_move():
    moves = uci_moves()
    # 1456 queen-line + 336 knight moves, 2 x 22 promotion squares x 4 pieces
    assert len(moves) == 1456 + 336 + 176 == len(set(moves))


def test_fools_mate_is_a_win_for_black():
    env = ChessEnv(include_san=True, include_fen=True)
    td = play(env, env.reset(), "f2f3", "e7e5", "g2g4")
    assert td["reward"].item() == 0.0
    assert not td["done"].item()
    td = play(env, td, "d8h4")
    assert td["san"] == "Qh4#"
    assert td["reward"].item() == 1.0  # the mover's (Black's) win
    assert td["done"].item()
    assert td["terminated"].item()
    assert bool(td["turn"])  # White to move, and mated
    assert not td["action_mask"].any()


def test_stalemate_is_a_draw():
    # White: Ka1, Qg6; Black: Kh8. Qf7 leaves the king no move and no check.
    env = ChessEnv(include_fen=True)
    start = env.reset(TensorDict(fen="7k/8/6Q1/8/8/8/8/K7 w - - 0 1"))
    assert start["fen"].startswith("7k/8/6Q1")
    td = play(env, start, "g6f7")
    assert td["reward"].item() == 0.5
    assert td["done"].item()


def test_specs_and_a_random_game():
    env = ChessEnv(include_san=True, include_fen=True, include_pgn=True, include_legal_moves=True)
    env.set_seed(0)
    check_env_specs(env)
    td = env.reset()
    assert int(td["action_mask"].sum()) == 20
    assert int((td["legal_moves"] < len(uci_moves())).sum()) == 20
    traj = env.rollout(30)
    legal = traj["action_mask"].gather(-1, traj["action"].unsqueeze(-1))
    assert legal.all()
    assert traj["next", "pgn"][-1].count(".") >= 1


def test_stateless_steps_read_the_board_from_the_fen():
    env = ChessEnv(stateful=False, include_fen=True)
    td = env.reset()
    a = play(env, td.clone(), "e2e4")
    b = play(env, td.clone(), "d2d4")  # the same start position, another branch
    assert a["fen"].split()[0] == "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR"
    assert b["fen"].split()[0] == "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR"
    assert env.get_legal_moves(a, uci=True)[:1] != []


def test_bad_input_is_refused():
    env = ChessEnv()
    td = env.reset()
    with pytest.raises(ValueError, match=r"the move e2e5 \(action \d+\) is illegal"):
        play(env, td, "e2e5")
    with pytest.raises(ValueError, match="stateful=False reads the board from the TensorDict"):
        ChessEnv(stateful=False)
    with pytest.raises(ValueError, match="include_hash is not supported"):
        ChessEnv(include_hash=True)
