"""Network and model configs: rl-core's MLP and ConvNet, value, Q-value and TanhNormal models,
the mixers and exploration noise, built from configs and checked against hand-computed
outputs."""

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-objectives[hydra]"')

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from tensordict import TensorDict

from rl_core import Bounded
from rl_core.modules import MLP, AdditiveGaussianModule, ConvNet
from rl_objectives.configs import (
    AdditiveGaussianModuleConfig,
    ConvNetConfig,
    MLPConfig,
    QValueModelConfig,
    TanhNormalModelConfig,
    TensorDictModuleConfig,
    TensorDictSequentialConfig,
    VDNMixerNetworkConfig,
)


def _build(node, values):
    return instantiate(OmegaConf.merge(OmegaConf.structured(node), values))


def test_an_mlp_config_with_a_relu_activation():
    net = _build(MLPConfig, {"in_features": 3, "out_features": 2, "depth": 1, "num_cells": 8,
                             "activation_class": {"_target_": "torch.nn.ReLU"}})  # fmt: skip
    assert isinstance(net, MLP)
    assert [type(m).__name__ for m in net] == ["Linear", "ReLU", "Linear"]


def test_a_convnet_config_flattens_an_unbatched_image():
    net = _build(ConvNetConfig, {"in_features": 3, "depth": 1, "num_cells": [4]})
    assert isinstance(net, ConvNet)
    assert net(torch.zeros(3, 5, 5)).shape == (4 * 3 * 3,)


def test_a_qvalue_model_config_picks_the_action_of_highest_value():
    linear = {"_target_": "torch.nn.Linear", "in_features": 2, "out_features": 2, "bias": False}
    actor = _build(QValueModelConfig, {"network": linear, "action_space": "categorical"})
    with torch.no_grad():
        actor.module[0].module.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
    td = actor(TensorDict(observation=torch.tensor([[3.0, 1.0], [0.0, 2.0]]), batch_size=[2]))
    assert td["action"].tolist() == [0, 1]


def test_a_tanh_normal_model_config_draws_actions_inside_its_bounds():
    mlp = {"_target_": "rl_core.modules.MLP", "in_features": 3, "out_features": 4, "depth": 1,
           "num_cells": 8}  # fmt: skip
    actor = _build(TanhNormalModelConfig, {"network": mlp, "low": -2.0, "high": 2.0})
    action = actor(TensorDict(observation=100 * torch.randn(64, 3), batch_size=[64]))["action"]
    assert action.shape == (64, 2)
    assert action.abs().max() <= 2.0


def test_tensordict_module_and_sequential_configs_write_their_keys():
    double = {"_target_": "torch.nn.Linear", "in_features": 1, "out_features": 1, "bias": False}
    first = {"_target_": TensorDictModuleConfig._target_, "module": double,
             "in_keys": ["x"], "out_keys": [["nested", "y"]]}  # fmt: skip
    seq = _build(TensorDictSequentialConfig, {"modules": [first]})
    with torch.no_grad():
        seq[0].module.weight.fill_(2.0)
    out = seq(TensorDict(x=torch.tensor([[1.5]]), batch_size=[1]))
    assert out["nested", "y"].item() == 3.0
    with pytest.raises(Exception, match=r"TensorDictModuleConfig\.network: expected a torch"):
        _build(TensorDictModuleConfig, {"module": {"_target_": "builtins.dict"}})


def test_vdn_mixer_config_sums_the_agents_values():
    mixer = _build(VDNMixerNetworkConfig, {"n_agents": 3})
    assert mixer(torch.tensor([[[1.0], [2.0], [4.0]]])).flatten().tolist() == [7.0]


def test_additive_gaussian_config_is_called_with_the_action_spec():
    spec = Bounded(-1.0, 1.0, shape=(2,))
    noise = _build(AdditiveGaussianModuleConfig, {"sigma_init": 0.5})(spec)
    assert isinstance(noise, AdditiveGaussianModule)


def test_dreamer_v3_image_configs_keep_integer_channel_multipliers():
    from rl_objectives.configs import DreamerV3ImageDecoderConfig, DreamerV3ImageEncoderConfig

    encoder = _build(DreamerV3ImageEncoderConfig, {"depth": 2, "mults": [1, 2]})
    # Two stride-2 stages: 64 -> 16 pixels a side, 2 * 2 = 4 channels: 4 * 16 * 16 features.
    assert encoder(torch.zeros(1, 3, 64, 64)).shape == (1, 4 * 16 * 16)
    decoder = _build(
        DreamerV3ImageDecoderConfig,
        {"in_features": 8, "depth": 2, "mults": [1, 2], "num_blocks": 1},
    )
    assert decoder(torch.zeros(1, 8)).shape == (1, 3, 64, 64)
