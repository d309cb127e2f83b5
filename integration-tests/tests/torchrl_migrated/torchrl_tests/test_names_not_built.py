"""A TorchRL test module that uses one name the rl stack does not have: only the test that
uses it fails, the others run."""

import torch
from tensordict import TensorDict
from torchrl.envs import IsaacGymEnv
from torchrl.envs.utils import step_mdp


def test_isaacgym_env():
    env = IsaacGymEnv(task="Ant", num_envs=2)
    assert env.batch_size == (2,)


def test_step_mdp_alone():
    td = TensorDict({"next": {"observation": torch.ones(2)}}, batch_size=[])
    assert (step_mdp(td)["observation"] == 1).all()
