"""Stack: entries stacked on the forward path, unstacked on the inverse path, specs included."""

import pytest
import torch
from tensordict import TensorDict

from rl_core import Composite, EnvBase, TransformedEnv, Unbounded, check_env_specs
from rl_envs.transforms import Stack


class TwoAgents(EnvBase):
    """Two agents with observations ``obs_a``/``obs_b`` [*B, 3] and actions ``act_a``/``act_b``
    [*B, 1]: ``obs_a += act_a``, ``obs_b += 2 * act_b``. The state lives in the env."""

    def __init__(self, batch_size=(2,)):
        super().__init__(batch_size=batch_size)
        b = tuple(self.batch_size)
        self.observation_spec = Composite(
            obs_a=Unbounded(shape=(*b, 3)), obs_b=Unbounded(shape=(*b, 3)), shape=b
        )
        self.action_spec = Composite(
            act_a=Unbounded(shape=(*b, 1)), act_b=Unbounded(shape=(*b, 1)), shape=b
        )
        self.reward_spec = Unbounded(shape=(*b, 1))

    def _reset(self, tensordict, **kwargs):
        b = self.batch_size
        self.a, self.b = torch.zeros(*b, 3), torch.ones(*b, 3)
        return TensorDict(obs_a=self.a.clone(), obs_b=self.b.clone(), batch_size=b)

    def _step(self, tensordict):
        self.a = self.a + tensordict["act_a"]
        self.b = self.b + 2 * tensordict["act_b"]
        return TensorDict(
            obs_a=self.a.clone(),
            obs_b=self.b.clone(),
            reward=torch.zeros(*self.batch_size, 1),
            done=torch.zeros(*self.batch_size, 1, dtype=torch.bool),
            batch_size=self.batch_size,
        )

    def _set_seed(self, seed):
        pass


def _stack():
    return Stack(
        in_keys=["obs_a", "obs_b"],
        out_key="obs",
        in_key_inv="act",
        out_keys_inv=["act_a", "act_b"],
        dim=-2,
    )


def test_stacks_observations_and_unstacks_actions_on_a_batched_env():
    env = TransformedEnv(TwoAgents(), _stack())
    check_env_specs(env)
    assert env.observation_spec["obs"].shape == (2, 2, 3)
    assert "obs_a" not in env.observation_spec.keys()
    assert env.full_action_spec["act"].shape == (2, 2, 1)
    assert list(env.full_action_spec.keys()) == ["act"]
    td = env.reset()
    assert torch.equal(td["obs"][:, 0], torch.zeros(2, 3))
    assert torch.equal(td["obs"][:, 1], torch.ones(2, 3))
    td["act"] = torch.tensor([[[1.0], [10.0]], [[2.0], [20.0]]])
    out = env.step(td)["next", "obs"]
    assert torch.equal(out[:, 0], torch.tensor([[1.0] * 3, [2.0] * 3]))
    assert torch.equal(out[:, 1], torch.tensor([[21.0] * 3, [41.0] * 3]))


def test_stacks_tensordicts_and_keeps_inputs_without_del_keys():
    td = TensorDict(
        agent_0=TensorDict(obs=torch.zeros(4, 2), batch_size=[4]),
        agent_1=TensorDict(obs=torch.ones(4, 2), batch_size=[4]),
        batch_size=[4],
    )
    out = Stack(["agent_0", "agent_1"], "agents", del_keys=False)(td)
    assert out["agents"].batch_size == (4, 2)
    assert out["agents", "obs"].shape == (4, 2, 2)
    assert torch.equal(out["agents", "obs"][:, 1], torch.ones(4, 2))
    assert "agent_0" in out.keys()


def test_stack_errors():
    with pytest.raises(ValueError, match="Stack: expected a negative dim"):
        Stack(["a", "b"], "ab", dim=0)
    assert Stack(["a", "b"], "ab", dim=1, allow_positive_dim=True).dim == 1
    with pytest.raises(ValueError, match="expected as many out_keys_inv as in_keys"):
        Stack(["a", "b"], "ab", in_key_inv="x", out_keys_inv=["x0"])
    with pytest.raises(ValueError, match="Stack: expected entries of one shape"):
        Stack(["a", "b"], "ab")(TensorDict(a=torch.zeros(2), b=torch.zeros(3)))
    with pytest.raises(KeyError, match=r"Stack: the entries \['b'\] are missing"):
        Stack(["a", "b"], "ab")(TensorDict(a=torch.zeros(2)))
