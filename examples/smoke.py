"""Smoke run of the stack: a batched env, transforms, a Q-value policy with exploration,
a rollout, and GAE through the op schema.

The main job until the training examples land. Run: ``uv run python examples/smoke.py``
"""

import importlib

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential

from rl_core import ExplorationType, StepCounter, TransformedEnv, set_exploration_type
from rl_core.modules import MLP, EGreedyModule, QValueActor, ValueOperator
from rl_core.ops import generalized_advantage_estimate
from rl_core.testing import CountingEnv
from rl_envs.transforms import RewardSum

PACKAGES = [
    "rl_core",
    "rl_envs",
    "rl_buffers",
    "rl_collectors",
    "rl_objectives",
    "rl_llm",
    "rl_kernels",
]


def main() -> None:
    for name in PACKAGES:
        print(f"{name:<14} {importlib.import_module(name).__version__}")
    torch.manual_seed(0)

    env = TransformedEnv(CountingEnv(max_count=20, batch_size=[8]), StepCounter(max_steps=50))
    env.append_transform(RewardSum())
    env.set_seed(0)

    q_net = TensorDictModule(
        MLP(out_features=2, num_cells=[32, 32]), ["observation"], ["action_value"]
    )
    actor = QValueActor(q_net, in_keys=["observation"], spec=env.action_spec)
    explore = EGreedyModule(env.action_spec, eps_init=0.5, eps_end=0.05, annealing_num_steps=100)
    policy = TensorDictSequential(actor, explore)

    with set_exploration_type(ExplorationType.RANDOM), torch.no_grad():
        traj = env.rollout(200, policy, break_when_any_done=False)
    finished = traj["next", "done"]
    returns = traj["next", "episode_reward"][finished]
    print(
        f"rollout        {tuple(traj.batch_size)} transitions, {int(finished.sum())} episodes, "
        f"mean return {returns.mean().item():.1f}"
    )

    critic = ValueOperator(MLP(out_features=1, num_cells=[32]), in_keys=["observation"])
    with torch.no_grad():
        critic(traj)
        critic(traj["next"])
    advantage, target = generalized_advantage_estimate(
        0.99,
        0.95,
        traj["state_value"],
        traj["next", "state_value"],
        traj["next", "reward"],
        traj["next", "done"],
        traj["next", "terminated"],
        time_dim=1,
    )
    print(
        f"GAE            advantage {tuple(advantage.shape)}, value target mean {target.mean().item():.2f}"
    )


if __name__ == "__main__":
    main()
