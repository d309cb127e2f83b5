import pytest
import torch

from rl_core.testing import CountingEnv
from rl_objectives.trainers.helpers import make_ppo_models, make_sac_models


def test_ppo_models_act_on_the_env():
    env = CountingEnv(batch_size=[3])
    models = make_ppo_models(env, num_cells=8, depth=1)
    td = models["policy"](env.reset())
    assert td["action"].shape == env.action_spec.shape
    assert models["critic_network"](td)["state_value"].shape == torch.Size([3, 1])
    assert models["policy"] is models["actor_network"]


def test_errors():
    with pytest.raises(TypeError, match="env must be an rl-core EnvBase, got str"):
        make_ppo_models("CartPole-v1")
    with pytest.raises(ValueError, match="activation must be one of"):
        make_ppo_models(CountingEnv(), activation="gelu")
    with pytest.raises(ValueError, match="SAC needs continuous actions"):
        make_sac_models(CountingEnv())
