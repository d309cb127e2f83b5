"""DQN learns CartPole-v1: ``examples/dqn.py`` with a fixed seed reaches a mean return of 400
over its last 10 episodes within a CPU-sized frame budget (about 44k of the 60k frames)."""

import pytest


@pytest.mark.learning
def test_dqn_cartpole_reaches_400(load_example, tmp_path):
    dqn = load_example("dqn")
    cfg = dqn.parse_config(
        ["--seed", "0", "--total-frames", "60000", "--target-return", "400",
         "--out-dir", str(tmp_path), "--exp-name", "run", "--no-plot"]
    )  # fmt: skip
    result = dqn.train(cfg)
    assert result["mean_return_last10"] >= 400, result
    assert result["frames"] <= 60_000
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
