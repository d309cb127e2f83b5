"""RemoveEmptySpecs: empty composites leave the specs and the data; empty inputs come back."""

import torch
from tensordict import TensorDict

from rl_core import Composite, EnvBase, TransformedEnv, Unbounded, check_env_specs
from rl_envs.transforms import RemoveEmptySpecs


class EnvWithEmptyGroups(EnvBase):
    """An observation plus an empty group ``("other", "nested")``, an empty reward group and an
    empty state group that its step requires in its input."""

    def __init__(self, batch_size=(2,)):
        super().__init__(batch_size=batch_size)
        b = tuple(self.batch_size)
        self.observation_spec = Composite(
            observation=Unbounded(shape=(*b, 3)),
            other=Composite(nested=Composite(shape=b), shape=b),
            shape=b,
        )
        self.action_spec = Unbounded(shape=(*b, 3))
        self.reward_spec = Composite(
            reward=Unbounded(shape=(*b, 1)), other_reward=Composite(shape=b), shape=b
        )
        self.state_spec = Composite(memory=Composite(shape=b), shape=b)
        self.steps_seen_memory = 0

    def _out(self, obs):
        b = self.batch_size
        return TensorDict(
            observation=obs,
            other=TensorDict(nested=TensorDict(batch_size=b), batch_size=b),
            batch_size=b,
        )

    def _reset(self, tensordict, **kwargs):
        return self._out(torch.zeros(*self.batch_size, 3))

    def _step(self, tensordict):
        assert isinstance(tensordict.get("memory"), TensorDict)  # the env reads its empty state
        self.steps_seen_memory += 1
        out = self._out(tensordict["observation"] + tensordict["action"])
        out["reward"] = torch.ones(*self.batch_size, 1)
        out["other_reward"] = TensorDict(batch_size=self.batch_size)
        out["done"] = torch.zeros(*self.batch_size, 1, dtype=torch.bool)
        return out

    def _set_seed(self, seed):
        pass


def test_removes_empty_specs_and_entries_and_restores_empty_inputs():
    base = EnvWithEmptyGroups()
    env = TransformedEnv(base, RemoveEmptySpecs())
    assert "other" not in env.observation_spec.keys()
    assert list(env.full_reward_spec.keys()) == ["reward"]
    assert "memory" not in env.full_state_spec.keys()
    check_env_specs(env)
    base.steps_seen_memory = 0
    traj = env.rollout(3, lambda td: td.set("action", torch.ones(2, 3)))
    assert "other" not in traj.keys()
    assert "other" not in traj["next"].keys()
    assert "other_reward" not in traj["next"].keys()
    assert torch.equal(traj["next", "observation"][:, -1], torch.full((2, 3), 3.0))
    assert base.steps_seen_memory == 3


def test_on_data():
    td = TensorDict(
        obs=torch.zeros(2), info=TensorDict(deep=TensorDict()), keep=TensorDict(x=torch.ones(1))
    )
    out = RemoveEmptySpecs()(td)
    assert sorted(out.keys()) == ["keep", "obs"]
