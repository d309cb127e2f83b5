"""RenameTransform, SelectTransform and ExcludeTransform (moved from rl-core): keys renamed both
ways, entries kept or dropped, done flags and rewards protected."""

import pytest
import torch
from tensordict import TensorDict

from rl_core.envs import EnvBase, check_env_specs
from rl_core.specs import Bounded, Composite, Unbounded
from rl_core.testing import CountingEnv
from rl_core.transforms import TransformedEnv
from rl_envs.transforms import ExcludeTransform, RenameTransform, SelectTransform


class _DoubleEnv(EnvBase):
    """float64 observations and actions; the count is kept inside the env."""

    def __init__(self):
        super().__init__()
        self.observation_spec = Composite(
            observation=Unbounded(shape=(2,), dtype=torch.float64),
            count=Unbounded(shape=(1,), dtype=torch.int64),
        )
        self.action_spec = Bounded(-1.0, 1.0, shape=(2,), dtype=torch.float64)
        self.seen = None
        self.count = torch.zeros(1, dtype=torch.int64)

    def _reset(self, td, **kwargs):
        self.count = torch.zeros(1, dtype=torch.int64)
        return TensorDict(observation=torch.zeros(2, dtype=torch.float64), count=self.count)

    def _step(self, td):
        self.seen = td["action"]
        self.count = self.count + 1
        return TensorDict(
            observation=self.seen.clone(),
            count=self.count,
            reward=torch.zeros(1),
            terminated=torch.zeros(1, dtype=torch.bool),
        )

    def _set_seed(self, seed):
        pass


def test_rename_transform_forward_and_inverse():
    base = CountingEnv(max_count=100)
    # CountingEnv reads the count back from the root, so it is renamed on the way in too.
    env = TransformedEnv(
        base,
        RenameTransform(
            ["observation"],
            ["count"],
            in_keys_inv=["action", "observation"],
            out_keys_inv=["increment", "count"],
        ),
    )
    assert env.observation_keys == ["count"]
    assert env.action_keys == ["increment"]
    td = env.reset()
    td = env.step(td.set("increment", torch.ones(1, dtype=torch.int64)))
    assert td["next", "count"].item() == 1.0
    assert "increment" in td.keys()
    check_env_specs(env)


def test_exclude_and_select():
    env = TransformedEnv(_DoubleEnv(), ExcludeTransform("count"))
    assert env.observation_keys == ["observation"]
    td = env.rand_step(env.reset())
    assert "count" not in td["next"].keys()
    check_env_specs(env)

    env = TransformedEnv(_DoubleEnv(), SelectTransform("count"))
    assert env.observation_keys == ["count"]
    td = env.rand_step(env.reset())
    assert set(td["next"].keys()) == {"count", "reward", "done", "terminated", "truncated"}


def test_exclude_refuses_done_flags():
    env = TransformedEnv(CountingEnv(), ExcludeTransform("done"))
    with pytest.raises(ValueError, match=r"ExcludeTransform: 'done' is a reward or done flag"):
        _ = env.observation_spec
