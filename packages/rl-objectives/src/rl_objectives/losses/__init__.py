"""The loss catalogue; every loss is also importable from :mod:`rl_objectives`."""

from rl_objectives.losses.a2c import A2CLoss
from rl_objectives.losses.act import ACTLoss, kl_to_standard_normal
from rl_objectives.losses.bc import BCLoss
from rl_objectives.losses.clip_ppo import ClipPPOLoss
from rl_objectives.losses.cql import CQLLoss
from rl_objectives.losses.crossq import CrossQLoss
from rl_objectives.losses.ddpg import DDPGLoss
from rl_objectives.losses.diffusion_bc import DiffusionBCLoss
from rl_objectives.losses.discrete_cql import DiscreteCQLLoss
from rl_objectives.losses.discrete_iql import DiscreteIQLLoss
from rl_objectives.losses.discrete_sac import DiscreteSACLoss
from rl_objectives.losses.distributional_dqn import DistributionalDQNLoss
from rl_objectives.losses.dqn import DQNLoss
from rl_objectives.losses.dreamer import DreamerActorLoss, DreamerModelLoss, DreamerValueLoss
from rl_objectives.losses.dreamer_v3 import (
    DreamerV3ActorLoss,
    DreamerV3ModelLoss,
    DreamerV3ValueLoss,
    categorical_kl_balanced,
    categorical_kl_terms,
)
from rl_objectives.losses.dreamer_v3_loss import DreamerV3Loss
from rl_objectives.losses.dt import DTLoss
from rl_objectives.losses.gail import GAILLoss
from rl_objectives.losses.iql import IQLLoss
from rl_objectives.losses.kl_ppo import KLPENPPOLoss
from rl_objectives.losses.mappo import IPPOLoss, MAPPOLoss
from rl_objectives.losses.online_dt import OnlineDTLoss
from rl_objectives.losses.pilco import ExponentialQuadraticCost, expected_saturating_cost
from rl_objectives.losses.ppo import PPOLoss
from rl_objectives.losses.qmixer import QMixerLoss
from rl_objectives.losses.redq import REDQLoss
from rl_objectives.losses.reinforce import ReinforceLoss
from rl_objectives.losses.rnd import RNDLoss
from rl_objectives.losses.sac import SACLoss
from rl_objectives.losses.td3 import TD3Loss
from rl_objectives.losses.td3_bc import TD3BCLoss
from rl_objectives.losses.tqc import TQCLoss
from rl_objectives.losses.world_model import WorldModelLoss

__all__ = [
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
    "kl_to_standard_normal",
    "DiffusionBCLoss",
    "GAILLoss",
    "DTLoss",
    "DiscreteIQLLoss",
    "REDQLoss",
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
    "TQCLoss",
    "OnlineDTLoss",
    "ExponentialQuadraticCost",
    "expected_saturating_cost",
]
