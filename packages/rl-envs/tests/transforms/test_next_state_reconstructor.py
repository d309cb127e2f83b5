"""NextStateReconstructor: ("next", obs) rebuilt from the next row where the trajectory goes on."""

import math

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs import SerialEnv
from rl_envs.transforms import NextStateReconstructor


def _batch(traj, done, obs=None):
    n = len(traj)
    obs = torch.arange(float(n)).unsqueeze(-1) if obs is None else obs
    return TensorDict(
        {
            "observation": obs,
            ("collector", "traj_ids"): torch.tensor(traj),
            ("next", "done"): torch.tensor(done).unsqueeze(-1),
        },
        [n],
    )


def test_hand_written_boundaries():
    # rows 0-2 trajectory 0, rows 3-4 trajectory 1 (ends at row 4), row 5 a second slice of 1
    td = _batch([0, 0, 0, 1, 1, 1], [False, False, False, False, True, False])
    out = NextStateReconstructor()(td)["next", "observation"].squeeze(-1)
    got = out.tolist()
    assert got[:2] == [1.0, 2.0]
    assert math.isnan(got[2])  # trajectory changes
    assert got[3] == 4.0
    assert math.isnan(got[4])  # done at row 4: row 5 is not its next step
    assert math.isnan(got[5])  # the last row


def test_step_counts_catch_a_splice_and_integer_fill():
    td = _batch([0, 0, 0, 0], [False] * 4, obs=torch.tensor([[10], [11], [12], [13]]))
    td["step_count"] = torch.tensor([[3], [4], [1], [2]])  # two slices of one trajectory
    t = NextStateReconstructor(step_count_key="step_count", fill_value=-1)
    assert t(td)["next", "observation"].squeeze(-1).tolist() == [11, -1, 13, -1]


def test_nested_keys_and_no_markers():
    td = TensorDict({("agents", "pos"): torch.arange(6.0).reshape(3, 2)}, [3])
    t = NextStateReconstructor([("agents", "pos")], traj_key=None, done_key=None)
    out = t(td)["next", "agents", "pos"]
    assert out[:2].tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert out[2].isnan().all()


def test_on_a_rollout_of_a_batched_env_it_gives_back_the_next_observations():
    env = SerialEnv(2, lambda: CountingEnv(max_count=3))
    try:
        traj = env.rollout(
            7,
            lambda td: td.set("action", torch.ones(2, 1, dtype=torch.int64)),
            break_when_any_done=False,
        )
    finally:
        env.close()
    row = traj[0].clone()  # one sub-env's trajectory: 3 steps per episode
    row["collector", "traj_ids"] = torch.tensor([0, 0, 0, 1, 1, 1, 2])
    expected = row["next", "observation"].clone()
    del row["next", "observation"]
    out = NextStateReconstructor()(row)["next", "observation"]
    kept = torch.tensor([True, True, False, True, True, False, False])
    assert out[kept].equal(expected[kept])
    assert out[~kept].isnan().all()


def test_passes_env_steps_through_and_missing_entries_are_named():
    env = TransformedEnv(CountingEnv(batch_size=[2]), NextStateReconstructor())
    check_env_specs(env)
    with pytest.raises(KeyError, match=r"the traj key \('collector', 'traj_ids'\) is not in"):
        NextStateReconstructor()(TensorDict({"observation": torch.zeros(3, 1)}, [3]))
    td = TensorDict({"observation": torch.zeros(3, 1)}, [3])
    assert NextStateReconstructor(strict=False)(td)["next", "observation"][:2].eq(0).all()
    with pytest.raises(KeyError, match="no entry 'pixels' in the batch"):
        NextStateReconstructor(["pixels"], strict=False)(td)
    with pytest.raises(ValueError, match="expected a batch with at least one dim"):
        NextStateReconstructor(strict=False)(TensorDict({"observation": torch.zeros(1)}, []))
