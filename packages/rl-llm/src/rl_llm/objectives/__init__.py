"""Losses for language-model policies, all subclasses of rl-core's ``LossModule``."""

from rl_llm.objectives.dpo import DPOLoss, dpo_objective
from rl_llm.objectives.grpo import GRPOLoss, grpo_objective
from rl_llm.objectives.mc_advantage import MCAdvantage, group_advantages
from rl_llm.objectives.sft import SFTLoss

__all__ = [
    "GRPOLoss",
    "grpo_objective",
    "MCAdvantage",
    "group_advantages",
    "SFTLoss",
    "DPOLoss",
    "dpo_objective",
]
