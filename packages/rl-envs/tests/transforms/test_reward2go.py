import re

import pytest
import torch
from tensordict import TensorDict

from rl_core import Compose, StepCounter, TransformedEnv
from rl_envs.transforms import Reward2GoTransform


def test_on_cartpole_trajectories(cartpole):
    env = TransformedEnv(cartpole, StepCounter(5))
    traj = env.rollout(12, break_when_any_done=False)  # episodes of 5, 5 and 2 steps
    out = Reward2GoTransform(gamma=0.9)(traj)["reward_to_go"].squeeze(-1)
    powers = [sum(0.9**k for k in range(n)) for n in range(5, 0, -1)]
    expected = torch.tensor([*powers, *powers, 1.9, 1.0])
    assert torch.allclose(out, expected)


def test_batched_trajectories_from_a_buffer():
    data = TensorDict(batch_size=[2, 3])
    data["next", "reward"] = torch.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]).unsqueeze(-1)
    data["next", "done"] = torch.tensor([[False, False, True], [True, False, False]]).unsqueeze(-1)
    out = Reward2GoTransform()(data)["reward_to_go"].squeeze(-1)
    assert out.tolist() == [[6.0, 5.0, 3.0], [1.0, 2.0, 1.0]]


def test_errors(cartpole):
    # as TorchRL: refused with ValueError(ENV_ERR) when put in an env, or in a Compose in one
    with pytest.raises(ValueError, match=re.escape(Reward2GoTransform.ENV_ERR)):
        TransformedEnv(cartpole, Reward2GoTransform())
    # TorchRL's users match the message as a pattern, unescaped: it must match itself
    with pytest.raises(ValueError, match=Reward2GoTransform.ENV_ERR):
        TransformedEnv(cartpole, Reward2GoTransform())
    env = TransformedEnv(cartpole, Compose(Reward2GoTransform()))
    with pytest.raises(ValueError, match="Reward2GoTransform: it needs future rewards"):
        env.reset()
    assert isinstance(Compose(Reward2GoTransform()), Compose)  # outside an env: fine
    with pytest.raises(KeyError, match="Reward2GoTransform: the trajectory has no"):
        Reward2GoTransform()(TensorDict(batch_size=[3]))
