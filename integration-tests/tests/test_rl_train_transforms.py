"""rl-train with a transform added from the command line: the env group's ``transformed_env``
(rl-envs' config of rl-core's TransformedEnv) wraps the gym env in a StepCounter, and every
episode of the run is cut at its ``max_steps``."""

import csv
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-objectives[hydra]"')

RL_TRAIN = Path(sys.executable).with_name("rl-train")


def test_an_override_adds_a_step_counter_to_the_env(tmp_path):
    out = subprocess.run(
        [
            str(RL_TRAIN), "algo=ppo", "env=transformed_env", "+env@env.base_env=gym",
            "env.base_env.env_name=CartPole-v1",
            "env.transform={_target_:rl_core.StepCounter,max_steps:6}",
            f"hydra.run.dir={tmp_path}", "total_frames=256", "collector.frames_per_batch=128",
            "algo.trainer.num_epochs=1", "target_return=null", "progress_bar=false",
            "plot=false", "checkpoint_interval=256",
        ],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    with open(tmp_path / "learning_curve.csv") as f:
        returns = [float(row["episode_return"]) for row in csv.DictReader(f)]
    # CartPole pays 1 per step; without the StepCounter most episodes last longer than 6 steps.
    assert len(returns) >= 256 // 6 - 1
    assert max(returns) == 6.0
    config = (tmp_path / ".hydra" / "config.yaml").read_text()
    assert "_target_: rl_core.StepCounter" in config
    assert "max_steps: 6" in config


@pytest.mark.slow
def test_an_override_adds_a_trainer_hook_from_the_hook_group(tmp_path):
    # +hook@hooks.frames=count_frames_log: rl-objectives' CountFramesLogConfig, registered with
    # the trainer by rl-train; its n_frames scalar reaches the run's CSV logs.
    out = subprocess.run(
        [
            str(RL_TRAIN), "algo=ppo", "env=gym", "env.env_name=CartPole-v1",
            "+hook@hooks.frames=count_frames_log", f"hydra.run.dir={tmp_path}",
            "total_frames=256", "collector.frames_per_batch=128", "algo.trainer.num_epochs=1",
            "target_return=null", "progress_bar=false", "plot=false", "checkpoint_interval=256",
        ],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    logged = "".join(p.read_text() for p in (tmp_path / "logs").rglob("*n_frames*"))
    assert logged, sorted(str(p) for p in (tmp_path / "logs").rglob("*"))
    assert "256" in logged
    assert (
        "_target_: rl_objectives.trainers.CountFramesLog"
        in (tmp_path / ".hydra" / "config.yaml").read_text()
    )


@pytest.mark.slow
def test_a_transform_goes_on_top_of_a_recipes_env(tmp_path):
    # The recipe's env keeps its settings (CartPole-v1, 8 vectorised envs); the transform
    # group's step_counter wraps it, so every episode is cut at 5 steps (return 5).
    out = subprocess.run(
        [
            str(RL_TRAIN), "--config-name", "ppo_cartpole",
            "+transform@transforms.steps=step_counter", "transforms.steps.max_steps=5",
            f"hydra.run.dir={tmp_path}", "total_frames=512", "collector.frames_per_batch=256",
            "algo.trainer.num_epochs=1", "target_return=null", "progress_bar=false",
            "plot=false", "checkpoint_interval=512",
        ],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    with open(tmp_path / "learning_curve.csv") as f:
        returns = [float(row["episode_return"]) for row in csv.DictReader(f)]
    assert len(returns) >= 512 // 5 - 8
    assert set(returns) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert 5.0 in returns
    config = (tmp_path / ".hydra" / "config.yaml").read_text()
    assert "max_steps: 5" in config
    assert "num_envs: 8" in config  # the recipe's env settings stay


@pytest.mark.slow
def test_a_transforms_entry_that_is_not_a_transform_is_refused_naming_it(tmp_path):
    out = subprocess.run(
        [
            str(RL_TRAIN), "algo=ppo", "env=gym", "+transforms.bad={_target_:builtins.dict}",
            f"hydra.run.dir={tmp_path}", "total_frames=64", "progress_bar=false",
        ],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode != 0
    assert "transforms.bad built a dict, not a Transform" in out.stderr
