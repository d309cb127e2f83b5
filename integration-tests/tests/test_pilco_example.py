"""``examples/pilco_pendulum.py`` (PILCO: ``GPWorldModel`` + ``RBFController`` +
``ExponentialQuadraticCost`` on the Pendulum swing-up) runs end to end and refuses bad settings.
That it balances the pendulum is ``test_learning_pilco.py``'s."""

import pytest


def test_pilco_example_runs_to_completion(load_example, tmp_path):
    pilco = load_example("pilco_pendulum")
    line = "--max-episodes 1 --episode-steps 6 --hold-steps 2 --horizon 3 --n-basis 4 --policy-steps 2 --fit-steps 3"
    cfg = pilco.parse_config([*line.split(), "--out-dir", str(tmp_path), "--exp-name", "run"])
    result = pilco.train(cfg)
    assert len(result["returns"]) == 2  # the random episode and one policy episode
    assert (tmp_path / "run" / "config.json").is_file()
    assert (tmp_path / "run" / "learning_curve.png").is_file()


def test_pilco_example_refuses_a_bad_setting(load_example, tmp_path):
    pilco = load_example("pilco_pendulum")
    cfg = pilco.Config(hold_steps=50, out_dir=str(tmp_path / "runs"))
    with pytest.raises(
        ValueError, match=r"hold_steps: expected an integer from 1 to episode_steps"
    ):
        pilco.train(cfg)
    assert not (tmp_path / "runs").exists()
