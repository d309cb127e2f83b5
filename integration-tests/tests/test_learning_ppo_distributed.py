"""Distributed PPO learns CartPole-v1: ``examples/ppo_distributed.py`` (2 collector nodes on
torch.distributed, gloo, local processes) reaches a mean return of 475 over its last 10
episodes within 100k frames (44k in the README's run), and its nodes are gone afterwards."""

import multiprocessing

import pytest


@pytest.mark.learning
def test_distributed_ppo_cartpole_reaches_475(load_example, tmp_path):
    example = load_example("ppo_distributed")
    cfg = example.parse_config(
        ["--seed", "0", "--total-frames", "100000", "--target-return", "475",
         "--out-dir", str(tmp_path), "--exp-name", "run", "--no-plot"]
    )  # fmt: skip
    result = example.train(cfg)
    assert result["mean_return_last10"] >= 475, result
    assert result["frames"] <= 100_000
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    assert multiprocessing.active_children() == []  # the collector nodes were shut down
