import multiprocessing

import pytest
import torch

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
from rl_envs import GymEnv, ParallelEnv, SerialEnv
from rl_envs.transforms import TrajCounter


def test_ids_on_cartpole(cartpole):
    env = TransformedEnv(cartpole, Compose(StepCounter(3), TrajCounter()))
    check_env_specs(env)
    # check_env_specs's rollout took id 0 (its episode ends on its last step, which is not
    # followed by a reset, as in TorchRL); this rollout resets (1), truncates after 3 steps (2,
    # then 3) and takes its 7th step in the episode the 6th step's reset opened
    traj = env.rollout(7, break_when_any_done=False)
    assert traj["traj_count"].squeeze(-1).tolist()[-7:] == [1, 1, 1, 2, 2, 2, 3]


def test_partial_resets_draw_new_ids_for_reset_sub_envs_only():
    env = TransformedEnv(SerialEnv(3, lambda: GymEnv("CartPole-v1")), TrajCounter())
    td = env.reset()
    assert td["traj_count"].squeeze(-1).tolist() == [0, 1, 2]
    td["_reset"] = torch.tensor([[False], [True], [True]])
    assert env.reset(td)["traj_count"].squeeze(-1).tolist() == [0, 3, 4]


def test_workers_share_the_counter():
    counter = TrajCounter(lock=multiprocessing.get_context("fork").Lock())

    def make():
        return TransformedEnv(GymEnv("CartPole-v1"), Compose(StepCounter(2), counter.clone()))

    env = ParallelEnv(2, make)
    try:
        traj = env.rollout(4, break_when_any_done=False)
    finally:
        env.close()
    ids = traj["traj_count"].unique().tolist()
    assert len(ids) == 4  # 2 workers x 2 episodes, all distinct
    assert counter.counter.item() >= 4


def test_step_needs_a_reset(cartpole):
    env = TransformedEnv(cartpole, TrajCounter())
    td = env.reset().exclude("traj_count")
    with pytest.raises(KeyError, match="TrajCounter: expected 'traj_count'"):
        env.step(env.rand_action(td))
