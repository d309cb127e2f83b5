"""GRPO raises the toy-task reward: ``examples/grpo.py`` with a fixed seed takes the tiny local
model's mean reward (the digit fraction of its replies) from about 0.15 over its first 4 batches
to above 0.9 over its last 4, in 24 updates (a few seconds of training on CPU)."""

import pytest


@pytest.mark.learning
def test_grpo_tiny_model_raises_the_digit_reward(load_example, tmp_path):
    grpo = load_example("grpo")
    cfg = grpo.parse_config(
        ["--seed", "0", "--num-updates", "24", "--out-dir", str(tmp_path), "--exp-name", "run",
         "--no-plot"]
    )  # fmt: skip
    result = grpo.train(cfg)
    assert result["updates"] == 24
    assert result["start_reward"] < 0.3, result  # an untrained model rarely writes digits
    assert result["end_reward"] > result["start_reward"] + 0.5, result
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
