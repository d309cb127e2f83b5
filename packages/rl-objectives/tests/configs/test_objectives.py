"""Loss, GAE, trainer and hook configs: derived from their classes' constructors, they build
the classes they name with the values given."""

import inspect

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-objectives[hydra]"')

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from tensordict import TensorDict

from rl_objectives import GAE, ReinforceLoss
from rl_objectives.configs import (
    HOOK_CONFIGS,
    LOSS_CONFIGS,
    BatchSubSamplerConfig,
    EarlyStoppingConfig,
    GAEConfig,
    OfflineToOnlineTrainerConfig,
    OnPolicyTrainerConfig,
    ReinforceLossConfig,
    TanhNormalModelConfig,
    TD3TrainerConfig,
    ValueModelConfig,
    register_configs,
)
from rl_objectives.trainers import EarlyStopping, OnPolicyTrainer, TD3Trainer

_MLP = {"_target_": "rl_core.modules.MLP", "in_features": 3, "depth": 1, "num_cells": 8}


@pytest.mark.parametrize("name", sorted(LOSS_CONFIGS))
def test_every_loss_config_holds_its_loss_defaults(name):
    cls = getattr(__import__("rl_objectives"), name)
    built = instantiate(OmegaConf.structured(LOSS_CONFIGS[name]))
    assert built.func is cls
    defaults = inspect.signature(cls).parameters
    for key, value in built.keywords.items():
        assert defaults[key].default == value, key


def test_a_reinforce_loss_config_builds_the_loss_on_networks_from_model_configs():
    actor = instantiate(OmegaConf.merge(OmegaConf.structured(TanhNormalModelConfig),
                                        {"network": {**_MLP, "out_features": 2}}))  # fmt: skip
    critic = instantiate(OmegaConf.merge(OmegaConf.structured(ValueModelConfig),
                                         {"network": {**_MLP, "out_features": 1}}))  # fmt: skip
    cfg = OmegaConf.merge(OmegaConf.structured(ReinforceLossConfig), {"loss_critic_type": "l2"})
    loss = instantiate(cfg)(actor, critic_network=critic)
    assert isinstance(loss, ReinforceLoss)
    assert loss.loss_critic_type == "l2"


def test_gae_from_its_config_matches_the_hand_computed_advantage():
    # Two steps, rewards 1 and 1, values 0.5 and 0.5, the episode ends after the second:
    # deltas 1 + 0.9 * 0.5 - 0.5 = 0.95 and 1 - 0.5 = 0.5; A_1 = 0.5, A_0 = 0.95 + 0.9*0.5*0.5.
    value = instantiate(OmegaConf.merge(OmegaConf.structured(ValueModelConfig),
                                        {"network": {"_target_": "torch.nn.Linear",
                                                     "in_features": 1, "out_features": 1}}))  # fmt: skip
    with torch.no_grad():
        value.module.weight.zero_()
        value.module.bias.fill_(0.5)
    cfg = OmegaConf.merge(OmegaConf.structured(GAEConfig), {"gamma": 0.9, "lmbda": 0.5})
    gae = instantiate(cfg)(value_network=value)
    assert isinstance(gae, GAE)
    td = TensorDict(
        observation=torch.zeros(2, 1),
        next=TensorDict(
            observation=torch.zeros(2, 1),
            reward=torch.ones(2, 1),
            done=torch.tensor([[False], [True]]),
            terminated=torch.tensor([[False], [True]]),
        ),
        batch_size=[2],
    )
    advantage = gae(td)["advantage"].flatten().tolist()
    assert advantage == pytest.approx([0.95 + 0.9 * 0.5 * 0.5, 0.5])


def test_trainer_configs_build_their_trainers():
    net = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    cfg = OmegaConf.merge(OmegaConf.structured(OnPolicyTrainerConfig), {"num_epochs": 3})
    trainer = instantiate(cfg)([], 10, net, optimizer, progress_bar=False)
    assert type(trainer) is OnPolicyTrainer
    assert trainer.num_epochs == 3
    td3 = instantiate(OmegaConf.structured(TD3TrainerConfig))
    assert td3.func is TD3Trainer  # called with the replay buffer and target updater too
    assert td3.keywords["batch_size"] == 256
    assert OmegaConf.missing_keys(OmegaConf.structured(OfflineToOnlineTrainerConfig)) == {
        "offline_steps"
    }


def test_hook_configs_build_their_hooks_and_a_subsampler_keeps_batch_size_items():
    stop = instantiate(OmegaConf.merge(OmegaConf.structured(EarlyStoppingConfig),
                                       {"monitor": "train/reward", "patience": 2}))  # fmt: skip
    assert isinstance(stop, EarlyStopping)
    assert stop.patience == 2
    sampler = instantiate(OmegaConf.merge(OmegaConf.structured(BatchSubSamplerConfig),
                                          {"batch_size": 4}))  # fmt: skip
    batch = TensorDict(x=torch.arange(10.0), batch_size=[10])
    assert sampler(batch).numel() == 4
    stored = {}

    class Store:
        def store(self, group=None, name=None, node=None, provider=None):
            stored[(group, name)] = node

    register_configs(Store())
    assert stored[("hook", "batch_sub_sampler")] is BatchSubSamplerConfig
    assert {name for group, name in stored if group == "hook"} >= {
        "log_timing", "count_frames_log", "early_stopping", "clear_cuda_cache",
    }  # fmt: skip
    assert len([g for g, _ in stored if g == "hook"]) == len(HOOK_CONFIGS)
