"""rl_llm.configs: typed Hydra configs of rl-llm's classes, registered through the
rl_stack.configs entry point when rl-llm is installed."""

from __future__ import annotations

import importlib.util
from importlib.metadata import entry_points

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-llm[hydra]"')
pytest.importorskip("transformers", reason='pip install "rl-llm[transformers]"')

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError
from tensordict import TensorDict

from rl_llm.collectors import TransformersWeightUpdater, vLLMUpdater
from rl_llm.configs import (
    LLM_CONFIGS,
    GRPOTrainerConfig,
    KLRewardTransformConfig,
    TokenizerConfig,
    TransformersWeightUpdaterConfig,
    TransformersWrapperConfig,
    register_configs,
    vLLMUpdaterConfig,
    vLLMWrapperConfig,
)
from rl_llm.envs import KLRewardTransform, Tokenizer
from rl_llm.modules import TransformersWrapper, vLLMWrapper
from rl_llm.trainers import GRPOTrainer


def test_the_entry_point_registers_rl_llm_configs_and_no_sibling_is_needed():
    (entry,) = [e for e in entry_points(group="rl_stack.configs") if e.name == "rl_llm"]
    assert entry.load() is register_configs
    from hydra.core.config_store import ConfigStore

    register_configs()
    repo = ConfigStore.instance().repo
    assert {"tokenizer.yaml", "kl_reward.yaml"} <= set(repo["llm_transform"])
    assert {"transformers.yaml", "vllm.yaml"} <= set(repo["llm_policy"])
    assert {"vllm_updater.yaml", "transformers_weight_updater.yaml"} <= set(repo["weight_updater"])
    assert set(repo["llm_trainer"]) == {"grpo.yaml"}
    # the other packages' entry points are there exactly when those packages are installed
    names = {e.name for e in entry_points(group="rl_stack.configs")}
    for module in ("rl_envs", "rl_buffers", "rl_collectors", "rl_objectives"):
        assert (module in names) == (importlib.util.find_spec(module) is not None), module


def test_tokenizer_config_builds_the_transform(tiny_tokenizer):
    cfg = OmegaConf.merge(OmegaConf.structured(TokenizerConfig), {"padding_side": "right"})
    transform = instantiate(cfg)(tokenizer=tiny_tokenizer)
    assert type(transform) is Tokenizer
    td = transform(TensorDict(query=["hello world", "ok"], batch_size=[2]))
    mask = td["tokens_query_attention_mask"]
    assert mask[1, 0]  # padded on the right: the short row starts with tokens
    assert not mask[1, -1]


def test_policy_kl_and_updater_configs_build_on_a_tiny_model(tiny_model, tiny_tokenizer):
    model, tokenizer = tiny_model, tiny_tokenizer
    cfg = OmegaConf.merge(OmegaConf.structured(TransformersWrapperConfig),
                          {"generate": False, "generate_kwargs": {"max_new_tokens": 3}})  # fmt: skip
    policy = instantiate(cfg)(model, tokenizer)
    assert type(policy) is TransformersWrapper
    kl = instantiate(OmegaConf.merge(OmegaConf.structured(KLRewardTransformConfig),
                                     {"coeff": 0.5}))(policy)  # fmt: skip
    assert type(kl) is KLRewardTransform
    assert kl.coeff == 0.5
    updater = instantiate(OmegaConf.structured(TransformersWeightUpdaterConfig))(model)
    assert type(updater) is TransformersWeightUpdater
    # vLLM's are built the same way around a vllm.LLM (not installed here): the targets resolve
    assert instantiate(OmegaConf.structured(vLLMUpdaterConfig)).func is vLLMUpdater
    assert instantiate(OmegaConf.structured(vLLMWrapperConfig)).func is vLLMWrapper


def test_grpo_trainer_config_needs_its_counts_and_builds_the_trainer():
    loss = torch.nn.Linear(1, 1)
    # a partial config leaves a mandatory value unset to the call, which names it
    with pytest.raises(TypeError, match="'total_frames' and 'optim_steps_per_batch'"):
        instantiate(OmegaConf.structured(GRPOTrainerConfig))(collector=[], loss_module=loss)
    cfg = OmegaConf.merge(OmegaConf.structured(GRPOTrainerConfig),
                          {"total_frames": 8, "optim_steps_per_batch": 2, "clip_norm": 0.5})  # fmt: skip
    optimizer = torch.optim.SGD(loss.parameters(), lr=0.1)
    trainer = instantiate(cfg)(collector=[], loss_module=loss, optimizer=optimizer)
    assert type(trainer) is GRPOTrainer
    assert (trainer.total_frames, trainer.clip_norm) == (8, 0.5)


@pytest.mark.parametrize(
    ("config", "override", "error", "key"),
    [
        (GRPOTrainerConfig, {"total_frames": "many"}, ValidationError, "total_frames"),
        (TokenizerConfig, {"padding_side": ["left"]}, ValidationError, "padding_side"),
        (KLRewardTransformConfig, {"coeff": "big"}, ValidationError, "coeff"),
        (TransformersWrapperConfig, {"return_logprobs": True}, ConfigKeyError, "return_logprobs"),
    ],
)
def test_a_wrong_type_or_unknown_key_is_refused_naming_the_key(config, override, error, key):
    with pytest.raises(error, match=key):
        OmegaConf.merge(OmegaConf.structured(config), override)


def test_every_registered_option_is_a_typed_config_with_a_target():
    for group, options in LLM_CONFIGS.items():
        for name, node in options.items():
            cfg = OmegaConf.structured(node)
            assert cfg._target_.startswith("rl_llm."), (group, name)
