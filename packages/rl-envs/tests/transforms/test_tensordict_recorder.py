"""TensorDictRecorder on the torch-native CartPole (batched): which outputs are kept, the file
dump writes, and a new recording after it."""

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_envs import CartPoleEnv
from rl_envs.transforms import TensorDictRecorder


def test_keeps_every_skip_th_output_and_dumps_them_stacked(tmp_path):
    torch.manual_seed(0)
    rec = TensorDictRecorder(tmp_path / "run", skip_reset=False, skip=2, in_keys=["observation"])
    env = TransformedEnv(CartPoleEnv(batch_size=[3]), rec)
    check_env_specs(env)
    rec.td, rec.count = [], 0  # check_env_specs stepped the env: start a clean recording
    traj = env.rollout(5, break_when_any_done=False)
    # outputs counted 1 (reset), 2..6 (steps 1..5): kept 2, 4, 6 = steps 1, 3, 5
    path = rec.dump("a")
    assert path == str(tmp_path / "run_a_tensordict.t")
    saved = torch.load(path, weights_only=False)
    assert saved.batch_size == (3, 3)
    assert set(saved.keys()) == {"observation"}
    assert torch.equal(
        saved["observation"], traj["next", "observation"][:, [0, 2, 4]].transpose(0, 1)
    )
    assert rec.td == []
    assert rec.iter == 1


def test_skip_reset_drops_the_reset_output(tmp_path):
    rec = TensorDictRecorder(tmp_path / "run", skip=1)
    env = TransformedEnv(CartPoleEnv(), rec)
    traj = env.rollout(4, break_when_any_done=False)
    assert len(rec.td) == 5  # the reset and 4 steps
    assert torch.equal(rec.td[0]["observation"], traj[0]["observation"])
    saved = torch.load(rec.dump(), weights_only=False)
    assert torch.equal(saved["observation"], traj["next", "observation"])
    assert torch.equal(saved["reward"], traj["next", "reward"])


def test_kept_outputs_are_copies_and_bad_input_is_named(tmp_path):
    rec = TensorDictRecorder(tmp_path / "run", skip=1)
    td = TensorDict(x=torch.zeros(2))
    rec(td)
    td["x"] += 1
    assert rec.td[0]["x"].tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="skip must be an integer >= 1, got 0"):
        TensorDictRecorder(tmp_path / "run", skip=0)
    with pytest.raises(ValueError, match=r"nothing to write \(1 output\(s\) kept"):
        rec.dump()
