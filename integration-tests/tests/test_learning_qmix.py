"""Value decomposition learns simple-spread: ``examples/qmix.py`` (VDN mixer, fixed seed) raises
the mean episode return per agent by a fixed margin over the uniform-random policy within
12k env steps (each moving the 3 agents)."""

import pytest

MARGIN = 3.0  # random policy: about -27 per agent and episode; seed 0 ends near -21


@pytest.mark.slow
@pytest.mark.learning
def test_vdn_simple_spread_beats_the_random_policy(load_example, tmp_path):
    qmix = load_example("qmix")
    cfg = qmix.parse_config(
        ["--seed", "0", "--total-frames", "12000", "--eps-frames", "6000", "--eval-episodes", "32",
         "--out-dir", str(tmp_path), "--exp-name", "run", "--no-plot"]
    )  # fmt: skip
    assert cfg.mixer == "vdn"
    result = qmix.train(cfg)
    assert result["frames"] == 12_000
    assert result["final_return"] >= result["random_return"] + MARGIN, result
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
