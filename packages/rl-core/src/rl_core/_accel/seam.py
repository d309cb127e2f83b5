"""The one module through which rl-core's contract code reaches its speed-only code.

``EnvBase``, the transforms machinery, the actors, ``LossModule``, the TED helpers and the
conformance kit import from here, never from the other modules of ``rl_core._accel`` (the
``.importlinter`` contract ``accel-seam`` checks it). What is exported:

- the tensordict fast access (``fast_td``): entry dicts, leaves, plain TensorDicts built
  without checks;
- done-flag completion and partial-reset merging on entry dicts (``flags``);
- the step-plan machinery (``step_plan``): :class:`StepPlan`, the interface a plan reads of
  its env (:class:`PlanEnv`), the rules of when a plan applies (:func:`plan_applies`,
  :func:`fusable_as_declared`), the registry of transforms' ``fusable`` declarations
  (:func:`declare_fusable`) and the switch of :func:`reference_only`;
- the step plan of a ``TransformedEnv`` (``transform_plan``, with ``lane``, ``lane_plans``,
  ``replay``), built from what the env reads of its transforms (:class:`TransformStack`) and
  reading the env through :class:`TransformedPlanEnv`; the lane-plan registry
  (:func:`register_lane_plan`) and rl-core's transforms' lane plans;
- the policy-call plan (:class:`PolicyCallPlan`, with ``probabilistic_plan`` and
  ``draw_plan``), which knows rl_core's policy classes through :class:`PolicyClasses`
  (:func:`register_policy_classes`, called by ``rl_core.modules``);
- the step plans' conformance check (``plan_check``: :func:`check_step_plan`, whose public
  entry point is ``rl_core.testing.check_step_plan``, and :func:`seeded_twins`);
- numpy rows (``rows``) and the parameter-swap cache of ``LossModule.use_network``
  (``swap``).
"""

from rl_core._accel.call_plan import PolicyCallPlan
from rl_core._accel.fast_td import (
    StepMdpMerge,
    TreeBuilder,
    batch_size_of,
    build_tensordict,
    device_of,
    entries,
    get_leaf,
    is_plain,
    leaf_paths,
    module_io_keys,
    only_tensors,
    sequence_children,
    set_leaf,
    writable_entries,
)
from rl_core._accel.flags import (
    any_set,
    carry_flat,
    complete_done_flags,
    merge_partial_reset,
    reset_masks,
)
from rl_core._accel.lane import RowLane, lane_plan_factory, register_lane_plan
from rl_core._accel.lane_plans import count_lane_plan, init_lane_plan
from rl_core._accel.plan_check import check_step_plan, seeded_twins
from rl_core._accel.policy_classes import PolicyClasses, register_policy_classes
from rl_core._accel.rows import NUMPY_DTYPES, Rows, on_cpu, zeros
from rl_core._accel.stack import TransformedPlanEnv, TransformStack
from rl_core._accel.step_plan import (
    FUSED_METHODS,
    PLANS,
    REFERENCE_METHODS,
    PlanEnv,
    StepPlan,
    declare_fusable,
    declared_fusable,
    fusable_as_declared,
    plan_applies,
    reference_only,
)
from rl_core._accel.swap import SwapPlanCache, loaded
from rl_core._accel.transform_plan import TransformedEnvPlan

__all__ = [
    "FUSED_METHODS",
    "NUMPY_DTYPES",
    "PLANS",
    "REFERENCE_METHODS",
    "PlanEnv",
    "PolicyCallPlan",
    "PolicyClasses",
    "RowLane",
    "Rows",
    "StepMdpMerge",
    "StepPlan",
    "SwapPlanCache",
    "TransformStack",
    "TransformedEnvPlan",
    "TransformedPlanEnv",
    "TreeBuilder",
    "any_set",
    "batch_size_of",
    "build_tensordict",
    "carry_flat",
    "check_step_plan",
    "complete_done_flags",
    "count_lane_plan",
    "init_lane_plan",
    "declare_fusable",
    "declared_fusable",
    "device_of",
    "entries",
    "fusable_as_declared",
    "get_leaf",
    "is_plain",
    "lane_plan_factory",
    "leaf_paths",
    "loaded",
    "merge_partial_reset",
    "module_io_keys",
    "on_cpu",
    "only_tensors",
    "plan_applies",
    "reference_only",
    "register_policy_classes",
    "register_lane_plan",
    "reset_masks",
    "seeded_twins",
    "sequence_children",
    "set_leaf",
    "writable_entries",
    "zeros",
]
