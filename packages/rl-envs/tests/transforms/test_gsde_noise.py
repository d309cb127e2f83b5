"""gSDENoise primes zeros at each reset (or a random matrix with the sizes), and the entry is
carried through an episode."""

import torch

from rl_core import StepCounter, TransformedEnv
from rl_envs import PendulumEnv
from rl_envs.transforms import gSDENoise


def test_zeros_at_each_reset_carried_within_an_episode():
    env = TransformedEnv(PendulumEnv(batch_size=[2]), gSDENoise(shape=(2,)))
    env.append_transform(StepCounter(max_steps=2))
    td = env.reset()
    assert torch.equal(td["_eps_gSDE"], torch.zeros(2, 1))

    def policy(td):  # draws a noise matrix when it sees gSDENoise's zeros, as gSDEModule does
        eps = td["_eps_gSDE"]
        if not eps.any():
            eps = torch.randn(2, 1)
        td["_eps_gSDE"] = eps
        td["action"] = torch.zeros(2, 1)
        return td

    traj = env.rollout(4, policy, break_when_any_done=False)
    eps = traj["_eps_gSDE"][0, :, 0]
    assert eps[0] == eps[1]  # one episode: the same noise
    assert eps[2] == eps[3]
    assert eps[0] != eps[2]  # the reset after 2 steps brought zeros: a new draw


def test_sizes_make_the_primer_draw():
    torch.manual_seed(0)
    env = TransformedEnv(PendulumEnv(batch_size=[2]), gSDENoise(state_dim=3, action_dim=1))
    eps = env.reset()["_eps_gSDE"]
    assert eps.shape == (2, 1, 3)
    assert eps.abs().sum() > 0
