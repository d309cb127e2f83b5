"""WorldModelEnv stepping a toy world model whose transitions are computed by hand."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential

from rl_core import check_env_specs
from rl_envs.model_based import WorldModelEnv

gym = pytest.importorskip("gymnasium")


class ToyWorldModel(torch.nn.Module):
    """encode: latent = [obs_0, obs_1]; step: latent' = latent + action (broadcast),
    reward = sum(latent'), done = latent'_0 > 3 (with the done head)."""

    def __init__(self, done_head: bool = True) -> None:
        super().__init__()
        self.encode = TensorDictModule(lambda o: o[..., :2], ["observation"], ["latent"])
        parts = [
            TensorDictModule(lambda z, a: z + a, ["latent", "action"], [("next", "latent")]),
            TensorDictModule(
                lambda z: z.sum(-1, keepdim=True), [("next", "latent")], [("next", "reward")]
            ),
        ]
        if done_head:
            parts.append(
                TensorDictModule(lambda z: z[..., :1] > 3, [("next", "latent")], [("next", "done")])
            )
        self.step_module = TensorDictSequential(*parts)


@pytest.fixture
def pendulum():
    from rl_envs import GymEnv

    return GymEnv("Pendulum-v1")


def test_steps_follow_the_model_and_stop_at_its_done_flag(pendulum):
    env = WorldModelEnv(ToyWorldModel(), pendulum, batch_size=[2])
    assert env.observation_spec["latent"].shape == (2, 2)
    start = TensorDict(latent=torch.tensor([[0.0, 1.0], [3.5, 0.0]]), batch_size=[2])

    def policy(td):
        return td.set("action", torch.ones(2, 1))

    traj = env.rollout(4, policy, tensordict=env.reset(start), auto_reset=False)
    # row 1 is done after its first step (3.5 + 1 > 3): the rollout stops there
    assert traj.batch_size == (2, 1)
    assert traj["next", "latent"][:, 0].tolist() == [[1.0, 2.0], [4.5, 1.0]]
    assert traj["next", "reward"][:, 0].squeeze(-1).tolist() == [3.0, 5.5]
    assert traj["next", "done"][:, 0].squeeze(-1).tolist() == [False, True]
    longer = env.rollout(
        4, policy, tensordict=env.reset(start[:1].expand(2).clone()), auto_reset=False
    )
    # from [0, 1]: latents [1, 2], [2, 3], [3, 4], [4, 5] (done at the fourth)
    assert longer["next", "reward"][0].squeeze(-1).tolist() == [3.0, 5.0, 7.0, 9.0]
    assert longer["next", "done"][0, -1].item()


def test_without_a_done_head_episodes_never_end_and_reset_starts_at_zero(pendulum):
    env = WorldModelEnv(ToyWorldModel(done_head=False), pendulum)
    assert env.batch_size == (1,)
    assert env.reset()["latent"].abs().sum() == 0
    traj = env.rollout(6)
    assert traj.batch_size == (1, 6)
    assert not traj["next", "terminated"].any()
    check_env_specs(env)


def test_bad_world_models_are_refused(pendulum):
    with pytest.raises(TypeError, match="expected world_model as a WorldModel"):
        WorldModelEnv(torch.nn.Linear(2, 2), pendulum)
    with pytest.raises(KeyError, match="did not write the latent at 'z'"):
        WorldModelEnv(ToyWorldModel(), pendulum, latent_key="z")
