"""rl-objectives' Hydra configs: typed (unknown keys and wrong types fail naming the key), they
build the classes they name, and rl-train finds each package's configs through its entry
point, or names the package to install."""

import importlib.util
from importlib.metadata import entry_points

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-objectives[hydra]"')

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from rl_core.testing import CountingEnv
from rl_objectives import ClipPPOLoss
from rl_objectives.configs import PPOAlgoConfig, TrainConfig, register_configs
from rl_objectives.train import check_groups, recipe_groups, register_all_configs
from rl_objectives.trainers import PPOTrainer


def test_unknown_key_and_wrong_type_fail_naming_the_key():
    algo = OmegaConf.structured(PPOAlgoConfig)
    with pytest.raises(ConfigKeyError, match=r"Key 'clip_eps' not in 'ClipPPOLossConfig'"):
        OmegaConf.merge(algo, {"loss": {"clip_eps": 0.1}})
    with pytest.raises(
        ValidationError,
        match=r"(?s)Value 'many' of type 'str' could not be converted to Integer.*full_key: trainer\.num_epochs",
    ):
        OmegaConf.merge(algo, {"trainer": {"num_epochs": "many"}})
    with pytest.raises(ValidationError, match=r"(?s)full_key: total_frames"):
        OmegaConf.merge(OmegaConf.structured(TrainConfig), {"total_frames": 1.5})


def test_the_ppo_preset_builds_its_parts():
    cfg = OmegaConf.merge(OmegaConf.structured(PPOAlgoConfig), {"model": {"num_cells": 8}})
    models = instantiate(cfg.model)(CountingEnv())
    policy = models.pop("policy")
    loss = instantiate(cfg.loss)(**models)
    assert isinstance(loss, ClipPPOLoss)
    # The loss trains the very weights the collector's policy acts with.
    shared = {p.data_ptr() for p in loss.parameters()}
    assert all(p.data_ptr() in shared for p in policy.parameters())
    optimizer = instantiate(cfg.optimizer)(loss.parameters())
    assert isinstance(optimizer, torch.optim.Adam)
    trainer = instantiate(cfg.trainer)([], 10, loss, optimizer, progress_bar=False)
    assert isinstance(trainer, PPOTrainer)
    assert trainer.num_epochs == 4


def test_each_installed_package_registers_its_configs_and_only_those():
    names = {e.name for e in entry_points(group="rl_stack.configs")}
    for module in ("rl_envs", "rl_buffers", "rl_collectors", "rl_objectives", "rl_llm"):
        assert (module in names) == (importlib.util.find_spec(module) is not None), module
    from hydra.core.config_store import ConfigStore

    register_all_configs()
    repo = ConfigStore.instance().repo
    for group, module in [
        ("env", "rl_envs"),
        ("replay_buffer", "rl_buffers"),
        ("collector", "rl_collectors"),
        ("llm_policy", "rl_llm"),
    ]:
        assert (group in repo) == (importlib.util.find_spec(module) is not None), group
    assert {"ppo.yaml", "a2c.yaml", "sac.yaml"} <= set(repo["algo"])


def test_a_missing_package_is_named_with_its_install_line():
    store = {}

    class Store:
        def store(self, group=None, name=None, node=None, provider=None):
            store.setdefault(group, {})[name] = node

    register_configs(Store())
    with pytest.raises(
        SystemExit,
        match=r'no \'collector\' configs: they come with rl-collectors, which is not installed .*pip install "rl-collectors\[hydra\]"',
    ):
        check_groups([], repo={**store, "env": {"gym.yaml": None}})
    with pytest.raises(SystemExit, match=r'no \'llm_policy\' configs: .*"rl-llm\[hydra\]"'):
        check_groups(
            ["+llm_policy=transformers"],
            repo={**store, "env": {"x": 1}, "collector": {"x": 1}},
        )
    with pytest.raises(SystemExit, match=r'pip install "rl-buffers\[hydra\]"'):
        check_groups(
            ["replay_buffer=tensordict"], repo={**store, "env": {"x": 1}, "collector": {"x": 1}}
        )


def test_a_recipe_needing_a_missing_package_is_named_with_its_install_line():
    assert recipe_groups(["--config-name", "dqn_cartpole"]) == {"replay_buffer", "algo"}
    assert recipe_groups(["--config-name=ppo_cartpole"]) == set()
    store = {"algo": {"x": 1}, "logger": {"x": 1}, "env": {"x": 1}, "collector": {"x": 1}}
    with pytest.raises(SystemExit, match=r'pip install "rl-buffers\[hydra\]"'):
        check_groups(["--config-name", "sac_pendulum"], repo=store)
    check_groups(["--config-name", "ppo_cartpole"], repo=store)  # needs no buffer
