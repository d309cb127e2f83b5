"""The plans of rl-envs' transforms, registered with rl-core's speed seam by type.

- Numpy-row lane plans: the transforms hold their reference ``_call``; these plans compute
  the same affine maps on numpy rows (``_affine``), and ``RewardSum``'s rows
  (``rl_envs._accel.lane_plans``), where a TransformedEnv's base env hands out numpy rows
  (``rl_core._accel.seam.register_lane_plan``).
- ``fusable`` declarations (``declare_fusable``): the transforms whose step and reset only
  map outputs, so a fused step-and-reset of the env below gives the same result.

A transform is correct without its plan or declaration; the classes carry neither.
"""

from __future__ import annotations

from typing import Any

from rl_core._accel.seam import declare_fusable, register_lane_plan
from rl_envs._accel.seam import sum_lane_plan
from rl_envs.transforms._affine import AffinePlan, affine_lane_plan
from rl_envs.transforms._common import maps_outputs_only
from rl_envs.transforms.clip import ClipTransform, SignTransform
from rl_envs.transforms.dtype_cast import DoubleToFloat
from rl_envs.transforms.finite_check import FiniteTensorDictCheck
from rl_envs.transforms.observation_norm import ObservationNorm
from rl_envs.transforms.reward import (
    BinarizeReward,
    LineariseRewards,
    RewardClipping,
    RewardScaling,
)
from rl_envs.transforms.reward_sum import RewardSum


@register_lane_plan(ObservationNorm)
def observation_norm_plan(owner: ObservationNorm, lane: Any) -> AffinePlan | None:
    """Root-level keys, each output written under a key no later pair reads."""
    return affine_lane_plan(owner, lane, ObservationNorm)


@register_lane_plan(RewardScaling)
def reward_scaling_plan(owner: RewardScaling, lane: Any) -> AffinePlan | None:
    """Rewards of loc's dtype, root-level keys."""
    return affine_lane_plan(owner, lane, RewardScaling)


register_lane_plan(RewardSum)(sum_lane_plan)

# Step and reset map outputs only (an inverse path maps actions before the step).
declare_fusable(RewardSum)
declare_fusable(ObservationNorm)
declare_fusable(DoubleToFloat)
declare_fusable(FiniteTensorDictCheck)  # it maps nothing
for _kind in (
    ClipTransform,
    SignTransform,
    RewardScaling,
    RewardClipping,
    BinarizeReward,
    LineariseRewards,
):
    # unless an output is named like a done flag: the fused step-and-reset decides the
    # resets from the base env's own flags, the generic path from the transformed ones
    declare_fusable(_kind, maps_outputs_only)

__all__ = ["observation_norm_plan", "reward_scaling_plan"]
