import math

import pytest
import torch
from tensordict import TensorDict

from rl_core import Compose, EnvBase, StepCounter, TransformedEnv, check_env_specs
from rl_core.specs import Composite, Unbounded
from rl_envs.transforms import AutoResetEnv, AutoResetTransform


class SelfResettingCounter(EnvBase):
    """Counts up by the action; at ``limit`` the episode ends and, in the same step, the env
    starts the next one at 0 by itself (the step shows 0 in "next", as such envs do)."""

    def __init__(self, limits):
        limits = torch.as_tensor(limits, dtype=torch.float32)
        batch = tuple(limits.shape)
        super().__init__(batch_size=batch)
        self.limits = limits.reshape(*batch, 1)
        self.observation_spec = Composite(count=Unbounded(shape=(*batch, 1)), shape=batch)
        self.action_spec = Unbounded(shape=(*batch, 1))
        self.count = torch.zeros(*batch, 1)
        self.resets = 0

    def _reset(self, tensordict, **kwargs):
        self.resets += 1
        mask = None if tensordict is None else tensordict.get("_reset", None)
        self.count = torch.zeros_like(self.count) if mask is None else self.count * ~mask
        return TensorDict(count=self.count.clone(), batch_size=self.batch_size)

    def _step(self, tensordict):
        count = self.count + tensordict["action"]
        done = count >= self.limits
        self.count = torch.where(done, torch.zeros_like(count), count)
        return TensorDict(
            count=self.count.clone(),
            reward=torch.ones_like(count),
            terminated=done,
            batch_size=self.batch_size,
        )

    def _set_seed(self, seed):
        pass


def ones(td):
    return td.set("action", torch.ones(*td.batch_size, 1))


def nan_to(value, fill=-7.0):
    return torch.nan_to_num(value, nan=fill)


def test_single_env_serves_the_stored_reset_and_never_calls_the_base_reset_again():
    env = TransformedEnv(SelfResettingCounter(3.0), Compose(AutoResetTransform(), StepCounter()))
    check_env_specs(env)
    base = env.base_env
    before = base.resets
    traj = env.rollout(9, ones, break_when_any_done=False)
    assert base.resets == before + 1  # the rollout's first reset only
    assert nan_to(traj["next", "count"]).squeeze(-1).tolist() == [1, 2, -7] * 3
    assert traj["count"].squeeze(-1).tolist() == [0, 1, 2] * 3
    assert traj["next", "step_count"].squeeze(-1).tolist() == [1, 2, 3] * 3
    assert traj["next", "done"].squeeze(-1).tolist() == [False, False, True] * 3


def test_batched_env_partial_resets():
    env = TransformedEnv(SelfResettingCounter([2.0, 3.0]), AutoResetTransform())
    traj = env.rollout(6, ones, break_when_any_done=False)
    assert env.base_env.resets == 1
    assert nan_to(traj["next", "count"][0]).squeeze(-1).tolist() == [1, -7] * 3
    assert nan_to(traj["next", "count"][1]).squeeze(-1).tolist() == [1, 2, -7] * 2
    assert traj["count"][0].squeeze(-1).tolist() == [0, 1] * 3
    assert traj["count"][1].squeeze(-1).tolist() == [0, 1, 2] * 2


def test_replace_false_and_other_fills():
    env = TransformedEnv(SelfResettingCounter(2.0), AutoResetTransform(replace=False))
    traj = env.rollout(4, ones, break_when_any_done=False)
    assert traj["next", "count"].squeeze(-1).tolist() == [1, 0, 1, 0]
    env = TransformedEnv(SelfResettingCounter(2.0), AutoResetTransform(fill_float=-1.0))
    traj = env.rollout(2, ones, break_when_any_done=False)
    assert traj["next", "count"].squeeze(-1).tolist() == [1, -1]


def test_reset_calls_serve_or_reset_the_base_env():
    env = TransformedEnv(SelfResettingCounter(2.0), AutoResetTransform())
    td = env.reset()
    assert env.base_env.resets == 1
    td = env.step(ones(td))
    env.reset()  # mid-episode: nothing stored, the env below resets
    assert env.base_env.resets == 2
    td = env.reset()
    td = env.step(ones(td))
    td = env.step(ones(env.step_mdp_plan()(td)))
    assert math.isnan(td["next", "count"].item())
    out = env.reset()  # served from the step that ended the episode
    assert env.base_env.resets == 3
    assert out["count"].item() == 0.0
    assert not out["done"].item()


def test_plain_tensordict_is_left_as_is(buffer_batch):
    out = AutoResetTransform()(buffer_batch.clone())
    torch.testing.assert_close(out["next", "observation"], buffer_batch["next", "observation"])


def test_errors():
    with pytest.raises(TypeError, match="AutoResetTransform: expected fill_int as int"):
        AutoResetTransform(fill_int=0.5)
    env = TransformedEnv(SelfResettingCounter(2.0), Compose(StepCounter(), AutoResetTransform()))
    with pytest.raises(ValueError, match="AutoResetTransform: expected to be the first"):
        env.reset()
    inner = TransformedEnv(SelfResettingCounter(2.0), StepCounter())
    with pytest.raises(ValueError, match="AutoResetTransform: expected to be the first"):
        TransformedEnv(inner, AutoResetTransform()).reset()


def test_auto_reset_env_puts_the_transform_first_and_keeps_it_there():
    env = AutoResetEnv(SelfResettingCounter([2.0, 3.0]), StepCounter())
    assert [type(t).__name__ for t in env.transform] == ["AutoResetTransform", "StepCounter"]
    check_env_specs(env)
    traj = env.rollout(6, ones, break_when_any_done=False)
    assert env.base_env.resets == 2  # check_env_specs' reset and the rollout's first
    assert traj["next", "step_count"][1].squeeze(-1).tolist() == [1, 2, 3] * 2
    kept = AutoResetTransform(fill_float=-1.0)
    env = AutoResetEnv(SelfResettingCounter(2.0), kept)
    assert env.transform[0] is kept
    with pytest.raises(ValueError, match=r"AutoResetEnv\.insert_transform: the AutoResetTransform"):
        env.insert_transform(0, StepCounter())
    env.insert_transform(1, StepCounter())
    assert env.rollout(2, ones, break_when_any_done=False)["next", "count"].squeeze(
        -1
    ).tolist() == [
        1,
        -1,
    ]
