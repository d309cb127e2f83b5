"""The numpy-row plans of rl-envs' transforms, registered with rl-core's lane by type.

The transforms hold their reference ``_call``; these plans compute the same affine maps on
numpy rows (``_affine``) where a TransformedEnv's base env hands out numpy rows (see
``rl_core._accel.seam.register_lane_plan``). A transform is correct without its plan.
"""

from __future__ import annotations

from typing import Any

from rl_core._accel.seam import register_lane_plan
from rl_envs.transforms._affine import AffinePlan, affine_lane_plan
from rl_envs.transforms.observation_norm import ObservationNorm
from rl_envs.transforms.reward import RewardScaling


@register_lane_plan(ObservationNorm)
def observation_norm_plan(owner: ObservationNorm, lane: Any) -> AffinePlan | None:
    """Root-level keys, each output written under a key no later pair reads."""
    return affine_lane_plan(owner, lane, ObservationNorm)


@register_lane_plan(RewardScaling)
def reward_scaling_plan(owner: RewardScaling, lane: Any) -> AffinePlan | None:
    """Rewards of loc's dtype, root-level keys."""
    return affine_lane_plan(owner, lane, RewardScaling)


__all__ = ["observation_norm_plan", "reward_scaling_plan"]
