"""SAC learns Pendulum-v1: ``examples/sac.py`` with a fixed seed reaches a mean return of -250
over its last 10 episodes within a CPU-sized frame budget (about 6k of the 12k frames)."""

import pytest


@pytest.mark.learning
def test_sac_pendulum_reaches_minus_250(load_example, tmp_path):
    sac = load_example("sac")
    cfg = sac.parse_config(
        ["--seed", "0", "--total-frames", "12000", "--target-return", "-250",
         "--out-dir", str(tmp_path), "--exp-name", "run", "--no-plot"]
    )  # fmt: skip
    result = sac.train(cfg)
    assert result["mean_return_last10"] >= -250, result
    assert result["frames"] <= 12_000
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
