"""Losses for language-model policies, all subclasses of rl-core's ``LossModule``."""

from rl_llm.objectives.cispo import CISPOLoss, cispo_objective
from rl_llm.objectives.dapo import DAPO, OverlongRewardShaping, overlong_penalty
from rl_llm.objectives.distillation import DistillationLoss, k3_kl_token_estimate
from rl_llm.objectives.dpo import DPOLoss, dpo_objective
from rl_llm.objectives.grpo import GRPOLoss, grpo_objective
from rl_llm.objectives.loss_outputs import (
    CISPOLossOutput,
    DAPOLossOutput,
    DistillationLossOutput,
    GRPOLossOutput,
    LLMLossOutput,
    RewardModelLossOutput,
    SFTLossOutput,
)
from rl_llm.objectives.mc_advantage import MCAdvantage, group_advantages
from rl_llm.objectives.mc_selector import MCAdvantageSelector
from rl_llm.objectives.ray_mc_advantage import RayMCAdvantage
from rl_llm.objectives.reward_model import RewardModelLoss, reward_model_loss
from rl_llm.objectives.sft import SFTLoss, minor_sft_loss, sft_loss

__all__ = [
    "GRPOLoss",
    "grpo_objective",
    "MCAdvantage",
    "group_advantages",
    "SFTLoss",
    "sft_loss",
    "minor_sft_loss",
    "DPOLoss",
    "dpo_objective",
    "DAPO",
    "overlong_penalty",
    "OverlongRewardShaping",
    "CISPOLoss",
    "cispo_objective",
    "DistillationLoss",
    "k3_kl_token_estimate",
    "MCAdvantageSelector",
    "LLMLossOutput",
    "GRPOLossOutput",
    "DAPOLossOutput",
    "CISPOLossOutput",
    "SFTLossOutput",
    "DistillationLossOutput",
    "RewardModelLoss",
    "RewardModelLossOutput",
    "reward_model_loss",
    "RayMCAdvantage",
]
