"""Smoke runs of ``examples/sac_mujoco.py``: SAC on gymnasium's InvertedPendulum-v5 and on
DeepMind Control's cartpole-balance, a few hundred frames each."""

import math

import pytest

pytest.importorskip("mujoco", reason='pip install "rl-envs[mujoco]"')


def _flags(line, tmp_path):
    return [*line.split(), "--out-dir", str(tmp_path), "--exp-name", "run", "--no-plot"]


def _check(result, tmp_path):
    assert result["frames"] == 256
    for key in ("random_return", "eval_return_before", "eval_return"):
        assert math.isfinite(result[key]), result
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    assert (tmp_path / "run" / "config.json").is_file()
    assert (tmp_path / "run" / "logs" / "scalars" / "eval" / "return.csv").is_file()


def test_sac_mujoco_example_runs_on_inverted_pendulum(load_example, tmp_path):
    sac = load_example("sac_mujoco")
    line = (
        "--suite gym --env-name InvertedPendulum-v5 --frame-skip 1 --total-frames 256 "
        "--init-random-frames 128 --updates-per-batch 2 --eval-episodes 2"
    )
    result = sac.train(sac.parse_config(_flags(line, tmp_path)))
    _check(result, tmp_path)


def test_sac_mujoco_example_runs_on_dm_control(load_example, tmp_path):
    pytest.importorskip("dm_control", reason='pip install "rl-envs[dm-control]"')
    sac = load_example("sac_mujoco")
    line = (
        "--frame-skip 8 --num-envs 2 "
        "--total-frames 256 --init-random-frames 128 --updates-per-batch 2 --eval-episodes 1"
    )
    result = sac.train(sac.parse_config(_flags(line, tmp_path)))
    _check(result, tmp_path)
    # 1000 control steps of 0 to 1 reward each: a return in [0, 1000].
    assert 0 <= result["random_return"] <= 1000


def test_sac_mujoco_example_rejects_a_dm_control_name_without_a_task(
    load_example, tmp_path, capsys
):
    sac = load_example("sac_mujoco")
    # Refused while the command line is read, before anything is built.
    with pytest.raises(SystemExit) as exit_info:
        sac.parse_config(_flags("--env-name cartpole", tmp_path))
    assert exit_info.value.code == 2
    assert "<domain>-<task> with suite dm_control" in capsys.readouterr().err
