"""AlphaZero learns tic-tac-toe: ``examples/mcts_tictactoe.py`` (MCTS with PUCT over a small
policy-value net, trained by self-play on ``TicTacToeEnv``) with a fixed seed beats a uniformly
random player in at least 95 of 100 games as first player and loses none of them."""

import pytest


@pytest.mark.learning
def test_alphazero_tictactoe_beats_a_random_player(load_example, tmp_path):
    example = load_example("mcts_tictactoe")
    cfg = example.parse_config(
        ["--seed", "0", "--out-dir", str(tmp_path), "--exp-name", "run", "--no-plot"]
    )
    result = example.train(cfg)
    first = result["first"]
    assert first["losses"] == 0, result
    assert first["wins"] >= 95, result
    assert sum(first.values()) == 100
    assert (tmp_path / "run" / "policy_value.pt").is_file()
