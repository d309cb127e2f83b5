"""The planners of rl_core.modules over a true env and over the same dynamics as a
ModelBasedEnvBase: the same candidates give the same plan."""

import math

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core.specs import Bounded, Composite, Unbounded
from rl_envs import ModelBasedEnvBase, PendulumEnv
from rl_envs.model_based import CEMPlanner
from rl_envs.native.pendulum import pendulum_step


class StateDynamics(torch.nn.Module):
    def forward(self, th, thdot, action):
        new_th, new_thdot, reward = pendulum_step(th, thdot, action, 10.0)
        obs = torch.cat([torch.cos(new_th), torch.sin(new_th), new_thdot], dim=-1)
        return new_th, new_thdot, obs, reward


class PendulumModel(ModelBasedEnvBase):
    def __init__(self):
        model = TensorDictModule(StateDynamics(), in_keys=["th", "thdot", "action"],
                                 out_keys=["th", "thdot", "observation", "reward"])  # fmt: skip
        super().__init__(model)
        self.observation_spec = Composite(
            observation=Unbounded(shape=(3,)), th=Unbounded(shape=(1,)),
            thdot=Unbounded(shape=(1,)),
        )  # fmt: skip
        self.action_spec = Bounded(-2.0, 2.0, shape=(1,))
        self.reward_spec = Unbounded(shape=(1,))

    def _reset(self, tensordict, **kwargs):
        th, thdot = torch.full((1,), math.pi), torch.zeros(1)
        obs = torch.cat([torch.cos(th), torch.sin(th), thdot])
        return TensorDict(th=th, thdot=thdot, observation=obs)


def test_true_env_and_model_env_give_the_same_plan():
    state = PendulumEnv().reset(TensorDict(th=torch.tensor([2.5]), thdot=torch.tensor([0.3])))
    true_env = PendulumEnv(batch_size=[32])  # batch-locked: batch = the candidates
    plans = []
    for env in (true_env, PendulumModel()):
        torch.manual_seed(3)
        planner = CEMPlanner(env, planning_horizon=8, optim_steps=3, num_candidates=32, top_k=4)
        plans.append(planner(state.clone())["action"])
    assert plans[0].shape == (1,)
    assert -2.0 <= plans[0].item() <= 2.0
    torch.testing.assert_close(plans[0], plans[1])


def test_planning_in_the_model_env_beats_zero_torque():
    env = PendulumEnv(batch_size=[4])
    env.set_seed(0)
    zero = env.rollout(60, lambda td: td.set("action", torch.zeros(4, 1)))
    env.set_seed(0)
    torch.manual_seed(0)
    planner = CEMPlanner(PendulumModel(), planning_horizon=15, optim_steps=3,
                         num_candidates=64, top_k=8)  # fmt: skip
    planned = env.rollout(60, planner)
    assert planned["next", "reward"].sum() > zero["next", "reward"].sum() + 300  # about +640
