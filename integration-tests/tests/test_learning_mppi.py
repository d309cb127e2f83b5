"""MPPI planning through Pendulum-v1's true dynamics, wrapped as a ``ModelBasedEnvBase``,
reaches a mean return above -300 over 8 episodes of the true env (``examples/mppi.py``; a
random policy gets about -1270); through a world model fitted to random-policy data it beats
the random policy by far. About 20 s and 45 s on 2 cores."""

import pytest


@pytest.mark.learning
def test_mppi_through_the_true_pendulum_model_beats_minus_300(load_example, tmp_path):
    mppi = load_example("mppi")
    cfg = mppi.parse_config(
        ["--seed", "0", "--out-dir", str(tmp_path), "--exp-name", "run", "--no-plot"]
    )  # fmt: skip
    result = mppi.train(cfg)
    assert len(result["returns"]) == 8
    assert result["mean_return"] > -300, result
    assert (tmp_path / "run" / "config.json").is_file()


@pytest.mark.learning
def test_mppi_through_a_learned_world_model_beats_the_random_policy(load_example, tmp_path):
    mppi = load_example("mppi")
    cfg = mppi.parse_config(
        ["--model", "learned", "--seed", "0", "--num-episodes", "4", "--out-dir", str(tmp_path),
         "--exp-name", "run", "--no-plot"]
    )  # fmt: skip
    result = mppi.train(cfg)
    assert result["random_return"] < -900, result  # the baseline from the same start states
    assert result["mean_return"] > result["random_return"] + 500, result


def test_mppi_example_cem_variant_runs(load_example, tmp_path):
    mppi = load_example("mppi")
    line = "--planner cem --num-episodes 2 --max-steps 5 --num-candidates 16 --top-k 4"
    cfg = mppi.parse_config([*line.split(), "--out-dir", str(tmp_path), "--exp-name", "run"])
    result = mppi.train(cfg)
    assert result["frames"] == 10
    assert len(result["returns"]) == 2
    assert (tmp_path / "run" / "learning_curve.png").is_file()
    assert (tmp_path / "run" / "logs" / "scalars" / "eval" / "episode_return.csv").is_file()
