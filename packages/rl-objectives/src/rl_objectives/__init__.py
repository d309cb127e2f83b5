"""Losses and value estimators built on the rl-core LossModule base, and the networks of
the algorithm families they train (:mod:`rl_objectives.modules`)."""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-objectives")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

from rl_objectives import losses, mixers, modules, value
from rl_objectives.hold_out import hold_out_net, hold_out_params
from rl_objectives.losses import (
    A2CLoss,
    ACTLoss,
    BCLoss,
    ClipPPOLoss,
    CQLLoss,
    CrossQLoss,
    DDPGLoss,
    DiffusionBCLoss,
    DiscreteCQLLoss,
    DiscreteIQLLoss,
    DiscreteSACLoss,
    DistributionalDQNLoss,
    DQNLoss,
    DreamerActorLoss,
    DreamerModelLoss,
    DreamerV3ActorLoss,
    DreamerV3Loss,
    DreamerV3ModelLoss,
    DreamerV3ValueLoss,
    DreamerValueLoss,
    DTLoss,
    ExponentialQuadraticCost,
    GAILLoss,
    IPPOLoss,
    IQLLoss,
    KLPENPPOLoss,
    MAPPOLoss,
    OnlineDTLoss,
    PPOLoss,
    QMixerLoss,
    REDQLoss,
    ReinforceLoss,
    RNDLoss,
    SACLoss,
    TD3BCLoss,
    TD3Loss,
    TQCLoss,
    WorldModelLoss,
    categorical_kl_balanced,
    categorical_kl_terms,
)
from rl_objectives.mixers import QMixer, VDNMixer
from rl_objectives.optim import KLAdaptiveLR, group_optimizers
from rl_objectives.target_updaters import HardUpdate, SoftUpdate, TargetNetUpdater
from rl_objectives.utils import ValueEstimators, distance_loss
from rl_objectives.value import (
    GAE,
    MultiAgentGAE,
    PercentileValueNorm,
    PopArtValueNorm,
    RunningValueNorm,
    TD0Estimator,
    TD1Estimator,
    TDLambdaEstimator,
    ValueEstimatorBase,
    ValueNorm,
    VTrace,
)
from rl_objectives.value_utils import default_value_kwargs, next_state_value

__version__ = _version("rl-objectives")

__all__ = ["__version__"]

# value estimation
__all__ += [
    "value",
    "ValueEstimators",
    "distance_loss",
    "next_state_value",
    "default_value_kwargs",
    "ValueEstimatorBase",
    "TD0Estimator",
    "TD1Estimator",
    "TDLambdaEstimator",
    "GAE",
    "VTrace",
    "MultiAgentGAE",
    "ValueNorm",
    "PopArtValueNorm",
    "RunningValueNorm",
    "PercentileValueNorm",
]

# losses
__all__ += [
    "losses",
    "PPOLoss",
    "ClipPPOLoss",
    "KLPENPPOLoss",
    "A2CLoss",
    "ReinforceLoss",
    "DQNLoss",
    "DDPGLoss",
    "TD3Loss",
    "SACLoss",
    "DiscreteSACLoss",
    "IQLLoss",
    "CQLLoss",
    "TD3BCLoss",
    "DiscreteCQLLoss",
    "QMixerLoss",
    "BCLoss",
    "ACTLoss",
    "DiffusionBCLoss",
    "GAILLoss",
    "DTLoss",
    "DiscreteIQLLoss",
    "REDQLoss",
    "TQCLoss",
    "OnlineDTLoss",
    "CrossQLoss",
    "DistributionalDQNLoss",
    "MAPPOLoss",
    "IPPOLoss",
    "DreamerModelLoss",
    "DreamerActorLoss",
    "DreamerValueLoss",
    "DreamerV3ModelLoss",
    "DreamerV3ActorLoss",
    "DreamerV3ValueLoss",
    "DreamerV3Loss",
    "categorical_kl_balanced",
    "categorical_kl_terms",
    "RNDLoss",
    "WorldModelLoss",
    "mixers",
    "QMixer",
    "VDNMixer",
    "TargetNetUpdater",
    "SoftUpdate",
    "HardUpdate",
    "ExponentialQuadraticCost",
    "KLAdaptiveLR",
    "group_optimizers",
    "hold_out_net",
    "hold_out_params",
]

# networks of one algorithm family (world models, Decision Transformer, multi-agent, DQN)
__all__ += ["modules"]
