"""RandomTruncationTransform: horizons spread at the first reset, then max_horizon or random."""

import pytest
import torch

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs import SerialEnv
from rl_envs.transforms import RandomTruncationTransform


def _ones(td):
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


def _env(batch, *args, **kwargs):
    return TransformedEnv(
        CountingEnv(max_count=1000, batch_size=batch),
        Compose(StepCounter(), RandomTruncationTransform(*args, **kwargs)),
    )


def _episode_lengths(traj):
    """Per sub-env, the step counts at which its episodes ended."""
    out = []
    for row_done, row_count in zip(traj["next", "done"], traj["next", "step_count"]):
        out.append(row_count[row_done].tolist())
    return out


def test_first_horizons_spread_then_max_horizon():
    check_env_specs(_env([4], 2, 6))
    env = _env([64], 2, 6)  # prob 0: after the spread every episode runs 6 steps
    torch.manual_seed(0)
    traj = env.rollout(20, _ones, break_when_any_done=False, auto_reset=True)
    lengths = _episode_lengths(traj)
    firsts = torch.tensor([row[0] for row in lengths])
    assert firsts.min() >= 1
    assert firsts.max() <= 6
    assert len(set(firsts.tolist())) == 6  # 64 draws from {1..6}: all six horizons show up
    assert all(all(n == 6 for n in row[1:]) for row in lengths)
    assert traj["next", "truncated"].equal(traj["next", "done"])
    assert not traj["next", "terminated"].any()


def test_prob_one_draws_every_horizon_in_the_range():
    env = _env([64], 3, 5, prob=1.0)
    torch.manual_seed(1)
    traj = env.rollout(40, _ones, break_when_any_done=False, auto_reset=True)
    later = [n for row in _episode_lengths(traj) for n in row[1:]]
    assert set(later) == {3, 4, 5}


def test_first_episode_prob_applies_once():
    # first_episode_prob=1, prob=0: the episode after the spread gets a random horizon in
    # {1..8}, every later one runs max_horizon
    env = _env([64], 1, 8, prob=0.0, first_episode_prob=1.0)
    torch.manual_seed(2)
    traj = env.rollout(30, _ones, break_when_any_done=False, auto_reset=True)
    lengths = _episode_lengths(traj)
    seconds = {row[1] for row in lengths}
    assert len(seconds) > 1
    assert seconds <= set(range(1, 9))
    assert all(all(n == 8 for n in row[2:-1]) for row in lengths)


def test_in_serial_env_and_seeded_runs_repeat():
    def run():
        env = SerialEnv(2, lambda: _env([], 2, 5, prob=0.5))
        try:
            torch.manual_seed(3)
            return env.rollout(25, _ones, break_when_any_done=False, auto_reset=True)
        finally:
            env.close()

    a, b = run(), run()
    assert a["next", "step_count"].max() <= 5
    assert a["next", "done"].equal(b["next", "done"])


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="expected min_horizon to be an int >= 1, got 0"):
        RandomTruncationTransform(0, 5)
    with pytest.raises(ValueError, match="min_horizon <= max_horizon, got min_horizon=6"):
        RandomTruncationTransform(6, 5)
    with pytest.raises(ValueError, match=r"expected prob to be a probability in \[0, 1\]"):
        RandomTruncationTransform(1, 5, prob=1.5)
    with pytest.raises(ValueError, match="first_episode_prob to be a probability"):
        RandomTruncationTransform(1, 5, first_episode_prob=-0.1)
    env = TransformedEnv(CountingEnv(), RandomTruncationTransform(1, 5))
    with pytest.raises(ValueError, match="put a StepCounter before it"):
        _ = env.observation_spec
