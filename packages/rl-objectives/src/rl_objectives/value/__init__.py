"""Value estimation: pure functions (:mod:`rl_objectives.value.functional`) and the
TensorDict-aware estimators that wrap them."""

from rl_objectives.value import functional
from rl_objectives.value.base import ValueEstimatorBase
from rl_objectives.value.gae import GAE
from rl_objectives.value.multiagent_gae import MultiAgentGAE
from rl_objectives.value.td0 import TD0Estimator
from rl_objectives.value.td1 import TD1Estimator
from rl_objectives.value.td_lambda import TDLambdaEstimator
from rl_objectives.value.value_norm import (
    PercentileValueNorm,
    PopArtValueNorm,
    RunningValueNorm,
    ValueNorm,
)
from rl_objectives.value.vtrace import VTrace

__all__ = [
    "functional",
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
