"""Hydra configs of networks and models (TorchRL's ``configs.modules``): rl-core's ``MLP``,
``ConvNet``, value and Q-value operators, a TanhNormal actor and exploration modules, the
mixers, TensorDict modules and the DreamerV3 networks.

The configs of rl-core's classes live here, not in rl-core: rl-core is the contract every
package pins and is at its size cap. A model config builds a TensorDict module from a network
config; keys written in YAML as lists (``[next, reward]``) become nested-key tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential
from torch import nn

from rl_core.modules import ProbabilisticActor, QValueActor, TanhNormal, ValueOperator
from rl_objectives.configs._derive import MISSING, config_of
from rl_objectives.modules import (
    DreamerV3DiscreteActor,
    DreamerV3ImageDecoder,
    DreamerV3ImageEncoder,
    DreamerV3MLP,
    RSSMStateEstimatorV3,
)


def _key(key: Any) -> Any:
    return key if isinstance(key, str) or not isinstance(key, Sequence) else tuple(key)


def _keys(owner: str, name: str, keys: Any) -> list[Any] | None:
    if keys is None:
        return None
    if isinstance(keys, str):
        return [keys]
    if not isinstance(keys, Sequence):
        raise TypeError(
            f"{owner}.{name}: expected a key or a list of keys, got {type(keys).__name__}."
        )
    return [_key(k) for k in keys]


def _network(owner: str, network: Any) -> nn.Module:
    if not isinstance(network, nn.Module):
        raise TypeError(
            f"{owner}.network: expected a torch module (a network config with a _target_ such "
            f"as rl_core.modules.MLP), got {type(network).__name__}."
        )
    return network


def tensordict_module(
    module: nn.Module, in_keys: Any = None, out_keys: Any = None
) -> TensorDictModule:
    """``TensorDictModuleConfig``'s target: ``TensorDictModule(module, in_keys, out_keys)``.

    Raises:
        TypeError: ``module`` is not a torch module.
    """
    return TensorDictModule(
        _network("TensorDictModuleConfig", module),
        in_keys=_keys("TensorDictModuleConfig", "in_keys", in_keys),
        out_keys=_keys("TensorDictModuleConfig", "out_keys", out_keys),
    )


def tensordict_sequential(
    modules: Sequence[Any], selected_out_keys: Any = None, partial_tolerant: bool = False
) -> TensorDictSequential:
    """``TensorDictSequentialConfig``'s target: the ``modules`` (TensorDict module configs)
    run in order."""
    return TensorDictSequential(
        *modules,
        selected_out_keys=_keys(
            "TensorDictSequentialConfig", "selected_out_keys", selected_out_keys
        ),
        partial_tolerant=partial_tolerant,
    )


def tanh_normal_model(
    network: nn.Module,
    in_keys: Any = ("observation",),
    param_keys: Any = ("loc", "scale"),
    out_keys: Any = ("action",),
    *,
    scale_mapping: str = "biased_softplus_1.0",
    scale_lb: float = 1e-4,
    low: float = -1.0,
    high: float = 1.0,
    return_log_prob: bool = False,
) -> ProbabilisticActor:
    """``TanhNormalModelConfig``'s target: ``network``'s output split into a location and a
    positive scale (``NormalParamExtractor``), and a ``TanhNormal`` on ``[low, high]`` drawn
    from them into ``out_keys``.

    Raises:
        TypeError: ``network`` is not a torch module.
    """
    owner = "TanhNormalModelConfig"
    body = TensorDictModule(
        nn.Sequential(_network(owner, network), NormalParamExtractor(scale_mapping, scale_lb)),
        in_keys=_keys(owner, "in_keys", in_keys),
        out_keys=_keys(owner, "param_keys", param_keys),
    )
    return ProbabilisticActor(
        body,
        in_keys=_keys(owner, "param_keys", param_keys),
        out_keys=_keys(owner, "out_keys", out_keys),
        distribution_class=TanhNormal,
        distribution_kwargs={"low": low, "high": high},
        return_log_prob=return_log_prob,
    )


def value_model(network: nn.Module, in_keys: Any = None, out_keys: Any = None) -> ValueOperator:
    """``ValueModelConfig``'s target: ``ValueOperator(network, in_keys, out_keys)`` (default
    keys: ``observation`` in, ``state_value`` out).

    Raises:
        TypeError: ``network`` is not a torch module.
    """
    owner = "ValueModelConfig"
    return ValueOperator(
        _network(owner, network),
        in_keys=_keys(owner, "in_keys", in_keys) or ["observation"],
        out_keys=_keys(owner, "out_keys", out_keys),
    )


def qvalue_model(
    network: nn.Module,
    in_keys: Any = None,
    action_space: str | None = None,
    spec: Any = None,
) -> QValueActor:
    """``QValueModelConfig``'s target: ``QValueActor(network, in_keys, spec,
    action_space=...)``: the greedy action of the action values ``network`` outputs.

    Raises:
        TypeError: ``network`` is not a torch module.
    """
    owner = "QValueModelConfig"
    return QValueActor(
        _network(owner, network),
        in_keys=_keys(owner, "in_keys", in_keys) or ["observation"],
        spec=spec,
        action_space=action_space,
    )


# Parts of a network: classes its constructor calls (partial: called with their sizes).


@dataclass
class ActivationConfig:
    """An activation class for a network (``activation_class``): ``torch.nn.Tanh`` unless
    ``_target_`` names another."""

    _target_: str = "torch.nn.Tanh"
    _partial_: bool = True


@dataclass
class LayerConfig:
    """A layer class for an MLP (``layer_class``): ``torch.nn.Linear`` unless ``_target_``
    names another."""

    _target_: str = "torch.nn.Linear"
    _partial_: bool = True


@dataclass
class NormConfig:
    """A normalisation class (``norm_class``): ``torch.nn.BatchNorm1d`` unless ``_target_``
    names another."""

    _target_: str = "torch.nn.BatchNorm1d"
    _partial_: bool = True


@dataclass
class AggregatorConfig:
    """The class that flattens a ConvNet's output (``aggregator_class``): ``torch.nn.Flatten``
    unless ``_target_`` names another."""

    _target_: str = "torch.nn.Flatten"
    _partial_: bool = True


# Networks.


@dataclass
class NetworkConfig:
    """The base of the network configs: ``_target_`` names a ``torch.nn.Module``."""

    _target_: str = MISSING


@dataclass
class MLPConfig(NetworkConfig):
    """:class:`rl_core.modules.MLP`."""

    in_features: int | None = None
    out_features: Any = None
    depth: int | None = None
    num_cells: Any = None
    activation_class: Any = field(default_factory=ActivationConfig)
    activation_kwargs: Any = None
    norm_class: Any = None
    norm_kwargs: Any = None
    dropout: float | None = None
    bias_last_layer: bool = True
    layer_class: Any = field(default_factory=LayerConfig)
    layer_kwargs: Any = None
    activate_last_layer: bool = False
    device: str | None = None
    _target_: str = "rl_core.modules.MLP"
    _convert_: str = "all"


@dataclass
class ConvNetConfig(NetworkConfig):
    """:class:`rl_core.modules.ConvNet`."""

    in_features: int | None = None
    depth: int | None = None
    num_cells: Any = None
    kernel_sizes: Any = 3
    strides: Any = 1
    paddings: Any = 0
    activation_class: Any = field(default_factory=lambda: ActivationConfig("torch.nn.ELU"))
    activation_kwargs: Any = None
    norm_class: Any = None
    norm_kwargs: Any = None
    bias_last_layer: bool = True
    activate_last_layer: bool = True
    aggregator_class: Any = field(default_factory=AggregatorConfig)
    aggregator_kwargs: Any = field(default_factory=lambda: {"start_dim": -3})
    squeeze_output: bool = False
    device: str | None = None
    _target_: str = "rl_core.modules.ConvNet"
    _convert_: str = "all"


@dataclass
class QMixerNetworkConfig(NetworkConfig):
    """:class:`rl_objectives.QMixer` (``state_shape`` and ``n_agents`` mandatory)."""

    state_shape: list[int] = MISSING  # type: ignore[assignment]
    mixing_embed_dim: int = 32
    n_agents: int = MISSING  # type: ignore[assignment]
    device: str | None = None
    _target_: str = "rl_objectives.QMixer"
    _convert_: str = "all"


@dataclass
class VDNMixerNetworkConfig(NetworkConfig):
    """:class:`rl_objectives.VDNMixer` (``n_agents`` mandatory)."""

    n_agents: int = MISSING  # type: ignore[assignment]
    device: str | None = None
    _target_: str = "rl_objectives.VDNMixer"


# Models: TensorDict modules built around a network config.


@dataclass
class ModelConfig:
    """The base of the model configs: the keys read and written, and ``_target_``."""

    in_keys: Any = None
    out_keys: Any = None
    _target_: str = MISSING
    _convert_: str = "all"


@dataclass
class TensorDictModuleConfig(ModelConfig):
    """A ``tensordict.nn.TensorDictModule`` of ``module`` (a network config, mandatory)."""

    module: Any = MISSING
    _target_: str = "rl_objectives.configs.modules.tensordict_module"


@dataclass
class TensorDictSequentialConfig:
    """A ``tensordict.nn.TensorDictSequential`` of ``modules`` (model configs, mandatory)."""

    modules: list[Any] = MISSING  # type: ignore[assignment]
    selected_out_keys: Any = None
    partial_tolerant: bool = False
    _target_: str = "rl_objectives.configs.modules.tensordict_sequential"
    _convert_: str = "all"


@dataclass
class TanhNormalModelConfig(ModelConfig):
    """A TanhNormal actor: ``network`` (mandatory) writes the location and scale parameters,
    and a ``TanhNormal`` on ``[low, high]`` draws the action."""

    network: Any = MISSING
    in_keys: Any = field(default_factory=lambda: ["observation"])
    param_keys: Any = field(default_factory=lambda: ["loc", "scale"])
    out_keys: Any = field(default_factory=lambda: ["action"])
    scale_mapping: str = "biased_softplus_1.0"
    scale_lb: float = 1e-4
    low: float = -1.0
    high: float = 1.0
    return_log_prob: bool = False
    _target_: str = "rl_objectives.configs.modules.tanh_normal_model"


@dataclass
class ValueModelConfig(ModelConfig):
    """:class:`rl_core.modules.ValueOperator` of ``network`` (mandatory)."""

    network: Any = MISSING
    _target_: str = "rl_objectives.configs.modules.value_model"


@dataclass
class QValueModelConfig:
    """:class:`rl_core.modules.QValueActor` of ``network`` (mandatory; it outputs one value per
    action): ``action_space`` (``"one_hot"``, ``"categorical"``, ...) or an action ``spec``."""

    network: Any = MISSING
    in_keys: Any = None
    action_space: str | None = None
    spec: Any = None
    _target_: str = "rl_objectives.configs.modules.qvalue_model"
    _convert_: str = "all"


@dataclass
class AdditiveGaussianModuleConfig:
    """:class:`rl_core.modules.AdditiveGaussianModule`: Gaussian exploration noise annealed
    from ``sigma_init`` to ``sigma_end``; partial (called with the action spec)."""

    sigma_init: float = 1.0
    sigma_end: float = 0.1
    annealing_num_steps: int = 1000
    mean: float = 0.0
    std: float = 1.0
    action_key: str = "action"
    safe: bool = True
    _target_: str = "rl_core.modules.AdditiveGaussianModule"
    _partial_: bool = True


# DreamerV3's networks (rl_objectives.modules), derived from their constructors.

DreamerV3MLPConfig = config_of(
    DreamerV3MLP, "DreamerV3MLPConfig", "rl_objectives.modules.DreamerV3MLP"
)
DreamerV3DiscreteActorConfig = config_of(
    DreamerV3DiscreteActor, "DreamerV3DiscreteActorConfig",
    "rl_objectives.modules.DreamerV3DiscreteActor",
)  # fmt: skip
DreamerV3ImageEncoderConfig = config_of(
    DreamerV3ImageEncoder, "DreamerV3ImageEncoderConfig",
    "rl_objectives.modules.DreamerV3ImageEncoder",
)  # fmt: skip
DreamerV3ImageDecoderConfig = config_of(
    DreamerV3ImageDecoder, "DreamerV3ImageDecoderConfig",
    "rl_objectives.modules.DreamerV3ImageDecoder",
)  # fmt: skip
RSSMStateEstimatorV3Config = config_of(
    RSSMStateEstimatorV3, "RSSMStateEstimatorV3Config",
    "rl_objectives.modules.RSSMStateEstimatorV3",
)  # fmt: skip


@dataclass
class DreamerV3SeededPolicyConfig:
    """:class:`rl_objectives.modules.DreamerV3SeededPolicy` on its own random stream seeded with
    ``seed`` (mandatory); partial (called with the policy module)."""

    seed: int = MISSING  # type: ignore[assignment]
    _target_: str = "rl_objectives.modules.DreamerV3SeededPolicy"
    _partial_: bool = True
