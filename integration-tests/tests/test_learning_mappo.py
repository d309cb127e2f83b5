"""MAPPO learns simple-spread: ``examples/mappo.py`` with a fixed seed raises the mean episode
return per agent by a fixed margin over the uniform-random policy, within a CPU-sized frame
budget (24k env steps, each moving the 3 agents)."""

import pytest

MARGIN = 3.0  # random policy: about -27 per agent and episode; seed 0 ends near -22


@pytest.mark.learning
def test_mappo_simple_spread_beats_the_random_policy(load_example, tmp_path):
    mappo = load_example("mappo")
    cfg = mappo.parse_config(
        ["--seed", "0", "--total-frames", "24000", "--out-dir", str(tmp_path),
         "--exp-name", "run", "--no-plot"]
    )  # fmt: skip
    result = mappo.train(cfg)
    assert result["frames"] == 24_000
    assert result["final_return"] >= result["random_return"] + MARGIN, result
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
