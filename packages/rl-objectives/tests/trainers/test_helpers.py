import pytest
import torch

from rl_core.testing import CountingEnv
from rl_objectives.trainers.helpers import make_dqn_models, make_ppo_models, make_sac_models


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


def test_dqn_models_explore_and_anneal():
    env = CountingEnv(batch_size=[4])
    models = make_dqn_models(env, num_cells=8, eps_init=1.0, eps_end=0.0, annealing_num_steps=10)
    td = models["policy"](env.reset())
    assert td["action"].shape == env.action_spec.shape
    assert "action_value" in td.keys()
    models["exploration"].step(5)
    assert models["exploration"].eps.item() == pytest.approx(0.5)  # 1 -> 0 over 10 frames
    with pytest.raises(ValueError, match="DQN needs discrete actions"):
        make_dqn_models(_ContinuousEnv())


class _ContinuousEnv(CountingEnv):
    """CountingEnv with a float action spec, to check the discrete-only builder refuses it."""

    def __init__(self):
        super().__init__()
        from rl_core.specs import Bounded

        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
