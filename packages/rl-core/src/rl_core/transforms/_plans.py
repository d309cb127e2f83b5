"""rl-core's transforms and their plans: the numpy-row lane plans of ``rl_core._accel`` (see
``lane_plans`` there) that serve ``StepCounter`` and ``InitTracker``, and which transforms are ``fusable`` (they
map the step and reset outputs only). The plans read only the transforms' settings; a
transform is correct without its plan."""

from rl_core._accel.seam import (
    count_lane_plan,
    declare_fusable,
    fusable_as_declared,
    init_lane_plan,
    register_lane_plan,
)
from rl_core.transforms.compose import Compose
from rl_core.transforms.init_tracker import InitTracker
from rl_core.transforms.step_counter import StepCounter

register_lane_plan(StepCounter)(count_lane_plan)
register_lane_plan(InitTracker)(init_lane_plan)

declare_fusable(InitTracker)
# StepCounter maps step and reset outputs only where it truncates nothing (a truncation is a
# done flag the env below does not know of); a Compose where each of its transforms does.
declare_fusable(StepCounter, lambda counter: counter.max_steps is None)
declare_fusable(Compose, lambda compose: all(fusable_as_declared(t) for t in compose))

__all__: list[str] = []
