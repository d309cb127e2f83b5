"""Losses and value estimators built on the rl-core LossModule base."""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-objectives")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

from rl_objectives import losses, value
from rl_objectives.losses import (
    A2CLoss,
    ClipPPOLoss,
    CQLLoss,
    DDPGLoss,
    DiscreteSACLoss,
    DQNLoss,
    IQLLoss,
    KLPENPPOLoss,
    PPOLoss,
    ReinforceLoss,
    SACLoss,
    TD3Loss,
)
from rl_objectives.utils import ValueEstimators, distance_loss
from rl_objectives.value import (
    GAE,
    MultiAgentGAE,
    TD0Estimator,
    TD1Estimator,
    TDLambdaEstimator,
    ValueEstimatorBase,
    VTrace,
)

__version__ = _version("rl-objectives")

__all__ = ["__version__"]

# value estimation
__all__ += [
    "value",
    "ValueEstimators",
    "distance_loss",
    "ValueEstimatorBase",
    "TD0Estimator",
    "TD1Estimator",
    "TDLambdaEstimator",
    "GAE",
    "VTrace",
    "MultiAgentGAE",
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
]
