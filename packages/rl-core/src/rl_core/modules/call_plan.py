"""``PolicyCallPlan``, kept where rl-core 0.3 published it: the plan itself is speed-only code
in rl-core's private folder (``rl_core._accel``, reached through ``rl_core._accel.seam``)."""

from rl_core._accel.seam import PolicyCallPlan

__all__ = ["PolicyCallPlan"]
