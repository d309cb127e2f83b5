"""ExpandAs: an env-level done flag expanded to a per-agent reward's shape (TorchRL's use)."""

import pytest
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import Categorical, Composite, TransformedEnv, Unbounded, check_env_specs
from rl_core.envs import EnvBase
from rl_envs import SerialEnv
from rl_envs.transforms import ExpandAs

N_AGENTS = 3


class _TeamCounter(EnvBase):
    """A shared count (+1 per step) that ends at 3; each agent's reward is its index."""

    def __init__(self, batch_size=()):
        super().__init__(batch_size=batch_size)
        b = self.batch_size
        self.observation_spec = Composite({"count": Unbounded(shape=(*b, 1))}, shape=b)
        self.action_spec = Categorical(2, shape=(*b, 1))
        self.reward_spec = Composite(
            {
                "agents": Composite(
                    {"reward": Unbounded(shape=(*b, N_AGENTS, 1))}, shape=(*b, N_AGENTS)
                )
            },
            shape=b,
        )

    def _reset(self, tensordict, **kwargs) -> TensorDictBase:
        return TensorDict({"count": torch.zeros(*self.batch_size, 1)}, batch_size=self.batch_size)

    def _step(self, tensordict) -> TensorDictBase:
        count = tensordict["count"] + 1
        done = count >= 3
        reward = torch.arange(N_AGENTS, dtype=torch.float32).reshape(N_AGENTS, 1)
        return TensorDict(
            {
                "count": count,
                ("agents", "reward"): reward.expand(*self.batch_size, N_AGENTS, 1).clone(),
                "done": done,
                "terminated": done.clone(),
                "truncated": torch.zeros_like(done),
            },
            batch_size=self.batch_size,
        )

    def _set_seed(self, seed):
        pass


def test_done_expanded_to_the_agents_reward_in_a_batched_env():
    env = TransformedEnv(
        _TeamCounter([2]), ExpandAs("done", ("agents", "reward"), ("agents", "done"))
    )
    check_env_specs(env)
    assert env.full_observation_spec["agents", "done"].shape == (2, N_AGENTS, 1)
    assert env.full_observation_spec["agents", "done"].dtype == torch.bool
    traj = env.rollout(5)
    assert traj.batch_size == (2, 3)
    agents_done = traj["next", "agents", "done"]
    assert agents_done.shape == (2, 3, N_AGENTS, 1)
    expected = torch.tensor([False, False, True]).reshape(1, 3, 1, 1).expand(2, 3, N_AGENTS, 1)
    assert agents_done.equal(expected)
    # at reset (no reward yet) the entry takes the reward spec's shape
    assert traj["agents", "done"].shape == (2, 3, N_AGENTS, 1)
    assert not traj["agents", "done"].any()


def test_in_serial_env_sub_envs():
    def make():
        return TransformedEnv(
            _TeamCounter(), ExpandAs("done", ("agents", "reward"), ("agents", "done"))
        )

    env = SerialEnv(2, make)
    try:
        check_env_specs(env)
        traj = env.rollout(3)
    finally:
        env.close()
    assert traj["next", "agents", "done"].shape == (2, 3, N_AGENTS, 1)
    assert (
        traj["next", "agents", "done"][:, :, :, 0].tolist()
        == [[[False] * 3, [False] * 3, [True] * 3]] * 2
    )


def test_on_a_tensordict_and_bad_inputs():
    td = TensorDict({"a": torch.tensor([[1.0], [2.0]]), "ref": torch.zeros(2, 1, 4)}, [2])
    out = ExpandAs("a", "ref", "b")(td)
    assert out["b"].tolist() == [[[1.0] * 4], [[2.0] * 4]]
    with pytest.raises(KeyError, match="ExpandAs: no entry 'missing'"):
        ExpandAs("missing", "ref")(td)
    bad = TensorDict({"a": torch.ones(2, 3), "ref": torch.zeros(2, 4)}, [2])
    with pytest.raises(
        ValueError, match=r"cannot expand 'a' of shape \(2, 3\) to the shape \(2, 4\)"
    ):
        ExpandAs("a", "ref")(bad)
    env = TransformedEnv(_TeamCounter(), ExpandAs("done", ("agents", "nothing")))
    with pytest.raises(KeyError, match="no entry \\('agents', 'nothing'\\) among the env's"):
        _ = env.observation_spec
