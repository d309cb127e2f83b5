"""ModelBasedEnvBase: the step is the world model's, on any batch; specs, transforms, params."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core import TransformedEnv
from rl_core.envs import check_env_specs
from rl_core.specs import Bounded, Composite, Unbounded
from rl_envs import ModelBasedEnvBase, PendulumEnv
from rl_envs.transforms import RewardSum


class Linear(torch.nn.Module):
    """next = A obs + B action; reward = -|next|^2."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor([[1.0, 0.1], [0.0, 1.0]]))
        self.b = torch.nn.Parameter(torch.tensor([[0.0], [0.5]]))

    def forward(self, obs, action):
        nxt = obs @ self.a.T + action @ self.b.T
        return nxt, -nxt.square().sum(-1, keepdim=True)


class LinearEnv(ModelBasedEnvBase):
    def __init__(self, model=None, batch_size=(), **kwargs):
        model = model or TensorDictModule(
            Linear(), in_keys=["observation", "action"], out_keys=["observation", "reward"]
        )
        super().__init__(model, batch_size=batch_size, **kwargs)
        b = tuple(self.batch_size)
        self.observation_spec = Composite(observation=Unbounded(shape=(*b, 2)), shape=b)
        self.action_spec = Bounded(-1.0, 1.0, shape=(*b, 1))
        self.reward_spec = Unbounded(shape=(*b, 1))

    def _reset(self, tensordict, **kwargs):
        return TensorDict(observation=torch.randn(*self.batch_size, 2), batch_size=self.batch_size)


def ref_step(obs, action):
    """Float64 reference of Linear on lists."""
    nxt = [obs[0] + 0.1 * obs[1], obs[1] + 0.5 * action[0]]
    return nxt, -(nxt[0] ** 2 + nxt[1] ** 2)


@pytest.mark.parametrize("batch_size", [(), (3,), (2, 2)])
def test_passes_check_env_specs(batch_size):
    check_env_specs(LinearEnv(batch_size=batch_size), seed=0)


def test_step_runs_the_model_on_any_batch():
    env = LinearEnv(batch_size=(2,))
    obs = torch.randn(7, 2)
    action = torch.rand(7, 1) * 2 - 1
    td = env.step(TensorDict(observation=obs, action=action, batch_size=[7]))
    assert td["next"].batch_size == (7,)
    for i in range(7):
        nxt, r = ref_step(obs[i].double().tolist(), action[i].double().tolist())
        torch.testing.assert_close(td["next", "observation"][i].double(),
                                   torch.tensor(nxt, dtype=torch.float64))  # fmt: skip
        assert td["next", "reward"][i].item() == pytest.approx(r, rel=1e-5)
    assert not td["next", "done"].any()
    assert not td["next", "terminated"].any()
    assert td["next", "terminated"].shape == (7, 1)
    torch.testing.assert_close(td["observation"], obs)  # the input is left as it was


def test_done_flags_written_by_the_model_are_kept():
    class Ends(torch.nn.Module):
        def forward(self, obs, action):
            nxt = obs + action
            return nxt, -nxt.abs(), nxt > 1.5

    model = TensorDictModule(Ends(), in_keys=["observation", "action"],
                             out_keys=["observation", "reward", "terminated"])  # fmt: skip

    class CounterEnv(ModelBasedEnvBase):
        def __init__(self):
            super().__init__(model)
            self.observation_spec = Composite(observation=Unbounded(shape=(1,)))
            self.action_spec = Bounded(0.0, 1.0, shape=(1,))

        def _reset(self, tensordict, **kwargs):
            return TensorDict(observation=torch.zeros(1))

    traj = CounterEnv().rollout(10, lambda td: td.set("action", torch.ones(1)))
    assert traj["next", "observation"].squeeze(-1).tolist() == [1.0, 2.0]
    assert traj["next", "done"].squeeze(-1).tolist() == [False, True]


def test_composes_with_transforms_and_rollout():
    env = TransformedEnv(LinearEnv(batch_size=(4,)), RewardSum())
    torch.manual_seed(0)
    traj = env.rollout(6)
    assert traj.batch_size == (4, 6)
    torch.testing.assert_close(traj["next", "episode_reward"][:, -1],
                               traj["next", "reward"].sum(1))  # fmt: skip


def test_params_are_swapped_in_for_the_step():
    other = Linear()
    with torch.no_grad():
        other.a.mul_(2.0)
    params = TensorDict.from_module(TensorDictModule(other, ["observation", "action"], ["x", "r"]))
    env = LinearEnv(params=None)
    swapped = LinearEnv(model=env.world_model, params=params)
    td = TensorDict(observation=torch.ones(2), action=torch.zeros(1))
    out = swapped.step(td.clone())["next", "observation"]
    torch.testing.assert_close(out, torch.tensor([2.2, 2.0]))  # 2A @ [1, 1]
    torch.testing.assert_close(
        env.step(td.clone())["next", "observation"], torch.tensor([1.1, 1.0])
    )
    assert env.world_model.module.a[0, 0].item() == 1.0  # the model's own params are back
    mismatched = LinearEnv(model=env.world_model, params=TensorDict.from_module(other))
    with pytest.raises(KeyError, match="the params do not match the world model's parameter"):
        mismatched.step(td.clone())


def test_set_specs_from_env_copies_the_specs():
    class FromPendulum(ModelBasedEnvBase):
        def _reset(self, tensordict, **kwargs):
            return self.full_observation_spec.zero()

    pendulum = PendulumEnv(batch_size=[3], device="cpu")
    env = FromPendulum(TensorDictModule(torch.nn.Identity(), ["action"], ["action"]),
                       batch_size=[3])  # fmt: skip
    env.set_specs_from_env(pendulum)
    assert env.state_spec == pendulum.state_spec
    assert env.observation_spec == pendulum.observation_spec
    assert env.action_spec == pendulum.action_spec
    assert env.reward_spec == pendulum.reward_spec
    assert env.observation_spec is not pendulum.observation_spec
    with pytest.raises(ValueError, match=r"expected an env of batch size \(3,\), got \(2,\)"):
        env.set_specs_from_env(PendulumEnv(batch_size=[2]))


def test_a_model_that_writes_no_reward_is_reported():
    model = TensorDictModule(torch.nn.Identity(), in_keys=["observation"], out_keys=["state"])
    env = LinearEnv(model=model)
    td = TensorDict(observation=torch.zeros(2), action=torch.zeros(1))
    with pytest.raises(KeyError, match=r"expected the world model to write \['reward'\]"):
        env.step(td)


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match=r"expected world_model as a torch\.nn\.Module"):
        LinearEnv(model=lambda td: td)
    with pytest.raises(TypeError, match="expected params as a TensorDict"):
        LinearEnv(params=[torch.zeros(1)])
    with pytest.raises(TypeError, match="abstract"):
        ModelBasedEnvBase(torch.nn.Identity())
