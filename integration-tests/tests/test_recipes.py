"""The examples' typed configs: every field settable from the command line (flags and
``key=value``), listed by ``--help`` with its default, saved with the run and reloadable."""

import dataclasses
import json
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
