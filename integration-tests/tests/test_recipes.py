"""The examples' typed configs: every field settable from the command line (flags and
``key=value``), listed by ``--help`` with its default, saved with the run and reloadable."""

import dataclasses
import json
import subprocess
import sys
import time
import typing
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TRAINING_EXAMPLES = sorted(
    p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_") and p.stem != "smoke"
)


@pytest.mark.parametrize("name", TRAINING_EXAMPLES)
def test_help_lists_every_field_with_its_default(name, load_example, capsys):
    example = load_example(name)
    with pytest.raises(SystemExit) as exit_info:
        example.parse_config(["--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for field in dataclasses.fields(example.Config):
        flag = "--" + field.name.replace("_", "-")
        assert flag in text, flag
        assert f"(default: {field.default})" in text, field.name
    assert "--config" in text
    assert "key=value" in text


def test_flags_and_overrides_set_typed_values(load_example):
    ppo = load_example("ppo")
    cfg = ppo.parse_config(
        ["--num-envs", "4", "--no-plot", "lr=0.01", "target_return=null", "anneal_lr=false"]
    )
    assert (cfg.num_envs, cfg.plot, cfg.lr, cfg.target_return, cfg.anneal_lr) == (
        4,
        False,
        0.01,
        None,
        False,
    )
    assert type(cfg.lr) is float
    cfg = ppo.parse_config(["target_return=475", "exp_name=run1"])
    assert (cfg.target_return, cfg.exp_name) == (475.0, "run1")


def test_saved_config_reproduces_the_run(load_example, tmp_path):
    ppo = load_example("ppo")
    recipe = __import__("_recipe")
    cfg = ppo.parse_config(["--num-envs", "2", "lr=0.5", "exp_name=saved"])
    path = recipe.save_config(cfg, tmp_path / "run")
    assert json.loads(path.read_text())["num_envs"] == 2
    assert ppo.parse_config(["--config", str(path)]) == cfg
    # flags and overrides still apply on top of the file
    again = ppo.parse_config(["--config", str(path), "seed=3"])
    assert again == dataclasses.replace(cfg, seed=3)


def test_bad_arguments_name_the_field(load_example, capsys):
    dqn = load_example("dqn")
    for argv, expected in [
        (["bogus=1"], "got key 'bogus'"),
        (["num_envs=many"], "num_envs: expected INT, got 'many'"),
        (["target_update=sometimes"], "target_update: expected one of ['hard', 'soft']"),
        (["--logger", "stdout"], "logger: expected one of ['csv', 'tensorboard'"),
        (["plot=maybe"], "plot: expected true or false, got 'maybe'"),
        (["seed"], "expected key=value"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            dqn.parse_config(argv)
        assert exit_info.value.code == 2
        assert expected in capsys.readouterr().err, argv


def test_a_config_file_that_does_not_fit_is_refused(load_example, tmp_path):
    dqn = load_example("dqn")
    recipe = __import__("_recipe")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"num_envs": 2, "learning_rate": 0.1}))
    with pytest.raises(ValueError, match=r"names fields \['learning_rate'\]"):
        recipe.load_config(dqn.Config, path)
    path.write_text(json.dumps({"num_envs": "two"}))
    with pytest.raises(ValueError, match="num_envs must be INT, got 'two'"):
        recipe.load_config(dqn.Config, path)


def run_example(name: str, *args: str, cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    """Runs ``examples/<name>.py`` as a user does, in ``cwd``; returns the result and seconds."""
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result, time.perf_counter() - start


def test_help_answers_within_two_seconds(tmp_path):
    result, seconds = run_example("ppo", "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "--total-frames" in result.stdout
    assert seconds < 2.0, f"--help took {seconds:.1f} s"


@pytest.mark.parametrize("name", TRAINING_EXAMPLES)
def test_every_example_reads_its_command_line_before_importing_torch(name, tmp_path):
    """``--help`` (and so any refused value) exits before torch is imported, whatever the
    machine's speed."""
    script = str(EXAMPLES / f"{name}.py")
    probe = (
        "import runpy, sys\n"
        f"sys.argv = [{script!r}, '--help']\n"
        f"sys.path.insert(0, {str(EXAMPLES)!r})\n"
        "try:\n"
        f"    runpy.run_path({script!r}, run_name='__main__')\n"
        "except SystemExit as exit_:\n"
        "    print('exit', exit_.code, 'torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip().endswith("exit 0 False"), out.stdout[-500:]


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("totl_frames=5", "got key 'totl_frames'. Did you mean 'total_frames'?"),
        ("total_frames=-5", "total_frames: expected an integer >= 1, got -5"),
        ("num_envs=0", "num_envs: expected an integer >= 1, got 0"),
        (
            "env_name=Foo-v9",
            "env_name: expected one of ['CartPole-v1', 'Acrobot-v1', 'MountainCar-v0', "
            "'Pendulum-v1', 'MountainCarContinuous-v0'], got 'Foo-v9'",
        ),
        ("num_envs=3", "frames_per_batch: expected a positive multiple of num_envs (3), got 1024"),
        ("minibatch_size=2048", "minibatch_size: expected an integer from 1 to frames_per_batch"),
        ("gamma=1.5", "gamma: expected a number in (0, 1], got 1.5"),
        ("lr=nan", "lr: expected a number > 0, got nan"),
    ],
)
def test_a_refused_setting_is_named_at_once_and_leaves_nothing(override, expected, tmp_path):
    result, seconds = run_example("ppo", override, "--out-dir", "runs", cwd=tmp_path)
    assert result.returncode == 2
    assert expected in " ".join(result.stderr.split()), result.stderr
    assert "Traceback" not in result.stderr
    assert seconds < 2.0, f"refusing {override} took {seconds:.1f} s"
    assert list(tmp_path.iterdir()) == []


def test_a_saved_config_with_a_refused_value_is_refused(load_example, tmp_path):
    ppo = load_example("ppo")
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"num_envs": 0}))
    with pytest.raises(SystemExit) as exit_info:
        ppo.parse_config(["--config", str(path)])
    assert exit_info.value.code == 2


def test_train_refuses_a_bad_config_before_building_anything(load_example, tmp_path):
    ppo = load_example("ppo")
    cfg = ppo.Config(total_frames=-5, out_dir=str(tmp_path / "runs"))
    with pytest.raises(ValueError, match=r"total_frames: expected an integer >= 1, got -5"):
        ppo.train(cfg)
    assert not (tmp_path / "runs").exists()


def test_a_run_that_fails_to_start_removes_its_folder(load_example, tmp_path):
    load_example("ppo")
    recipe = __import__("_recipe")

    def start(out_dir: Path, exp_name: str) -> None:
        with recipe.new_run_dir(out_dir, exp_name) as run_dir:
            (run_dir / "config.json").write_text("{}")
            raise RuntimeError("the logger failed")

    with pytest.raises(RuntimeError, match="the logger failed"):
        start(tmp_path / "runs", "exp")
    assert list(tmp_path.iterdir()) == []
    kept = tmp_path / "kept"
    kept.mkdir()
    with pytest.raises(RuntimeError, match="the logger failed"):
        start(tmp_path, "kept")
    assert kept.is_dir()


@pytest.mark.parametrize("name", TRAINING_EXAMPLES)
def test_every_numeric_setting_has_a_named_rule(name, load_example):
    """An integer field with no rule is a count (at least 1); every float field is named by a
    shared rule or the example's own, and every default passes its rule."""
    example = load_example(name)
    recipe = __import__("_recipe")
    own = getattr(example, "RULES", {})
    hints = typing.get_type_hints(example.Config)
    for field in dataclasses.fields(example.Config):
        kind = hints[field.name]
        if kind in (float, float | None):
            assert field.name in own or field.name in recipe.FIELD_RULES, field.name
    recipe.check_config(example.Config(), own)
