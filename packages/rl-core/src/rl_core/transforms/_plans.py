"""rl-core's transforms and their numpy-row lane plans: which plan of ``rl_core._accel`` (see
``lane_plans`` there) serves which transform type. The plans read only the transforms'
settings; a transform is correct without its plan."""

from rl_core._accel.seam import count_lane_plan, init_lane_plan, register_lane_plan, sum_lane_plan
from rl_core.transforms.init_tracker import InitTracker
from rl_core.transforms.reward_sum import RewardSum
from rl_core.transforms.step_counter import StepCounter

register_lane_plan(StepCounter)(count_lane_plan)
register_lane_plan(RewardSum)(sum_lane_plan)
register_lane_plan(InitTracker)(init_lane_plan)

__all__: list[str] = []
