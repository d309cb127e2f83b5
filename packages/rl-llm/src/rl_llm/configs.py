"""Hydra configs of rl-llm's classes that TorchRL configures (needs
``pip install "rl-llm[hydra]"``): the transforms :class:`~rl_llm.envs.Tokenizer` and
:class:`~rl_llm.envs.KLRewardTransform`, the policies :class:`~rl_llm.modules.TransformersWrapper`
and :class:`~rl_llm.modules.vLLMWrapper`, the weight updaters
:class:`~rl_llm.collectors.vLLMUpdater` and :class:`~rl_llm.collectors.TransformersWeightUpdater`,
and the :class:`~rl_llm.trainers.GRPOTrainer`.

Each config is a typed dataclass whose ``_target_`` names what it builds: a key it does not
have or a value of the wrong type fails when the config is composed, naming the key. Configs of
things that need built parts (a model, a tokenizer, a reference policy, a collector and a loss)
are partial (``_partial_: true``): ``instantiate`` returns a callable that is called with those
parts. :func:`register_configs` stores them in Hydra's ``ConfigStore`` through the
``rl_stack.configs`` entry point (groups ``llm_transform``, ``llm_policy``, ``weight_updater``
and ``llm_trainer``), so installing rl-llm makes them available to ``rl-train``. Importing this
module does not import hydra; only :func:`register_configs` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_MISSING = "???"  # OmegaConf's mandatory value


@dataclass
class TokenizerConfig:
    """:class:`rl_llm.envs.Tokenizer`: string entries to padded ids (and back); partial:
    called with ``tokenizer=`` (a transformers tokenizer)."""

    in_keys: list[str] | None = None
    out_keys: list[str] | None = None
    in_keys_inv: list[str] | None = None
    out_keys_inv: list[str] | None = None
    add_special_tokens: bool = False
    skip_special_tokens: bool = True
    padding_side: str = "left"
    return_attention_mask: bool = True
    _target_: str = "rl_llm.envs.Tokenizer"
    _partial_: bool = True


@dataclass
class KLRewardTransformConfig:
    """:class:`rl_llm.envs.KLRewardTransform`: subtracts ``coeff`` times the KL to a reference
    policy from the reward; partial: called with the reference policy (``ref_model``)."""

    coeff: float = 0.1
    reward_key: str = "reward"
    _target_: str = "rl_llm.envs.KLRewardTransform"
    _partial_: bool = True


@dataclass
class _LLMWrapperConfig:
    input_mode: str = "history"
    generate: bool = True
    return_log_probs: bool = True
    generate_kwargs: dict[str, Any] | None = None
    chat_template_name: str | None = None
    _target_: str = _MISSING
    _partial_: bool = True


@dataclass
class TransformersWrapperConfig(_LLMWrapperConfig):
    """:class:`rl_llm.modules.TransformersWrapper`: a transformers causal LM as a policy;
    partial: called with the model and its tokenizer."""

    _target_: str = "rl_llm.modules.TransformersWrapper"


@dataclass
class vLLMWrapperConfig(_LLMWrapperConfig):
    """:class:`rl_llm.modules.vLLMWrapper`: a vLLM engine as a policy; partial: called with the
    engine (``llm``) and its tokenizer."""

    _target_: str = "rl_llm.modules.vLLMWrapper"


@dataclass
class vLLMUpdaterConfig:
    """:class:`rl_llm.collectors.vLLMUpdater`: sends the trained weights to a vLLM engine;
    partial: called with the engine (``llm``)."""

    _target_: str = "rl_llm.collectors.vLLMUpdater"
    _partial_: bool = True


@dataclass
class TransformersWeightUpdaterConfig:
    """:class:`rl_llm.collectors.TransformersWeightUpdater`: copies the trained weights into a
    transformers model; partial: called with the model."""

    _target_: str = "rl_llm.collectors.TransformersWeightUpdater"
    _partial_: bool = True


@dataclass
class GRPOTrainerConfig:
    """:class:`rl_llm.trainers.GRPOTrainer`: its settings (``total_frames`` and
    ``optim_steps_per_batch`` are mandatory); partial: called with ``collector=``,
    ``loss_module=``, ``optimizer=`` and, as needed, ``replay_buffer=``,
    ``weight_sync_sender=`` and ``logger=``."""

    total_frames: int = _MISSING  # type: ignore[assignment]
    optim_steps_per_batch: int = _MISSING  # type: ignore[assignment]
    frame_skip: int = 1
    weight_update_frequency: int = 1
    empty_replay_buffer_on_weight_update: bool = False
    batch_size: int | None = None
    mixed_precision: bool = False
    gradient_accumulation_steps: int = 1
    clip_grad_norm: bool = True
    clip_norm: float | None = 1.0
    seed: int | None = None
    save_trainer_interval: int = 10000
    log_interval: int = 10000
    save_trainer_file: str | None = None
    num_epochs: int = 1
    log_rewards: bool = True
    log_kl: bool = True
    _target_: str = "rl_llm.trainers.GRPOTrainer"
    _partial_: bool = True


#: The options :func:`register_configs` stores: ``{group: {name: config}}``.
LLM_CONFIGS: dict[str, dict[str, type]] = {
    "llm_transform": {"tokenizer": TokenizerConfig, "kl_reward": KLRewardTransformConfig},
    "llm_policy": {"transformers": TransformersWrapperConfig, "vllm": vLLMWrapperConfig},
    "weight_updater": {
        "vllm_updater": vLLMUpdaterConfig,
        "transformers_weight_updater": TransformersWeightUpdaterConfig,
    },
    "llm_trainer": {"grpo": GRPOTrainerConfig},
}


def register_configs(store: Any = None) -> None:
    """Stores :data:`LLM_CONFIGS` in Hydra's ``ConfigStore`` (or ``store``).

    Raises:
        ImportError: hydra is not installed (the message gives the install line).
    """
    if store is None:
        try:
            from hydra.core.config_store import ConfigStore
        except ImportError as err:
            raise ImportError(
                'rl_llm.configs needs hydra-core: pip install "rl-llm[hydra]"'
            ) from err
        store = ConfigStore.instance()
    for group, options in LLM_CONFIGS.items():
        for name, node in options.items():
            store.store(group=group, name=name, node=node, provider="rl_llm")
