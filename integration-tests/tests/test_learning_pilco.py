"""PILCO (``examples/pilco_pendulum.py``: ``GPWorldModel`` + ``RBFController`` +
``ExponentialQuadraticCost``) swings the Pendulum up from hanging down and balances it within
a handful of episodes: 4 policy episodes after one random episode with seed 1 (the last 10
control steps, 1 s, within 0.3 rad of upright): 89 s on the 2-core machine of this session."""

import pytest


@pytest.mark.learning
def test_pilco_swings_up_and_balances_the_pendulum_in_a_handful_of_episodes(load_example, tmp_path):
    pilco = load_example("pilco_pendulum")
    argv = ["--seed", "1", "--max-episodes", "6", "--out-dir", str(tmp_path), "--exp-name", "run"]
    cfg = pilco.parse_config([*argv, "--no-plot"])
    result = pilco.train(cfg)
    print(f"PILCO balanced the pendulum after {result['episodes_needed']} policy episode(s)")
    assert result["solved"], result
    assert result["episodes_needed"] <= 6, result
    assert result["returns"][-1] > result["returns"][0] + 150, result  # far above random torques
