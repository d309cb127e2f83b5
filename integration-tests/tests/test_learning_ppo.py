"""PPO learns CartPole-v1: ``examples/ppo.py`` with a fixed seed reaches a mean return of 475
over its last 10 episodes within a CPU-sized frame budget (about 40k of the 100k frames)."""

import pytest


@pytest.mark.learning
def test_ppo_cartpole_reaches_475(load_example, tmp_path):
    ppo = load_example("ppo")
    cfg = ppo.parse_config(
        ["--seed", "0", "--total-frames", "100000", "--target-return", "475",
         "--out-dir", str(tmp_path), "--exp-name", "run", "--no-plot"]
    )  # fmt: skip
    result = ppo.train(cfg)
    assert result["mean_return_last10"] >= 475, result
    assert result["frames"] <= 100_000
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
