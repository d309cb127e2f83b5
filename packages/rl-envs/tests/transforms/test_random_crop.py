"""RandomCropTensorDict: uniform windows of each trajectory, inside the valid steps."""

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_core.testing import CountingEnv
from rl_envs.transforms import RandomCropTensorDict


def _counting(batch, steps):
    env = CountingEnv(max_count=1000, batch_size=[batch])
    return env.rollout(steps, lambda td: td.set("action", torch.ones(batch, 1, dtype=torch.int64)))


def test_windows_are_contiguous_and_every_start_is_drawn():
    traj = _counting(3, 8)  # observation = step index
    t = RandomCropTensorDict(3)
    starts = set()
    for _ in range(60):
        out = t(traj)
        assert out.batch_size == (3, 3)
        obs = out["observation"].squeeze(-1)
        assert torch.equal(obs.diff(dim=-1), torch.ones(3, 2))
        assert torch.equal(out["next", "observation"].squeeze(-1), obs + 1)
        starts.update(obs[:, 0].long().tolist())
    assert starts == set(range(6))  # 8 - 3 + 1 possible starts


def test_mask_and_sample_dim():
    traj = _counting(2, 6)
    mask = torch.tensor([[True] * 6, [True, True, True, False, False, False]])
    traj["mask"] = mask
    t = RandomCropTensorDict(2, mask_key="mask")
    for _ in range(30):
        out = t(traj)
        assert out["observation"][1, -1].item() <= 2  # inside the 3 valid steps
        assert out["mask"].all()
    time_first = traj.transpose(0, 1)  # [T, B]
    out = RandomCropTensorDict(4, sample_dim=0)(time_first)
    assert out.batch_size == (4, 2)
    assert torch.equal(out["observation"].squeeze(-1).diff(dim=0), torch.ones(3, 2))


def test_errors():
    with pytest.raises(ValueError, match="expected sub_seq_len as an int >= 1"):
        RandomCropTensorDict(0)
    with pytest.raises(ValueError, match="fewer than sub_seq_len=9"):
        RandomCropTensorDict(9)(TensorDict(x=torch.zeros(2, 8), batch_size=[2, 8]))
    with pytest.raises(RuntimeError, match="cannot be put in an env"):
        TransformedEnv(CountingEnv(), RandomCropTensorDict(2)).observation_spec  # noqa: B018
