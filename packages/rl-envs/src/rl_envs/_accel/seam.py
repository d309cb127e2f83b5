"""The one module through which rl-envs' contract code reaches its speed-only code.

``GymWrapper``, ``SerialEnv`` and the ``ParallelEnv`` workers import from here, never from the
other modules of ``rl_envs._accel`` (the ``.importlinter`` contract ``envs-accel-seam``
checks it). What is exported:

- the step plan of a ``GymWrapper`` (``gym_plan``: :class:`GymStepPlan`, with the random
  rollout of ``gym_rollout``), which reads the wrapper through :class:`GymPlanEnv`;
- SerialEnv's vector group of gymnasium sub-envs (``gym_group``: :func:`gym_vector_group`,
  :class:`GymGroupSteps`, reading the SerialEnv's layout through :class:`SerialDevices`);
- the ``ParallelEnv`` workers' direct path for gymnasium envs (``worker_gym``:
  :class:`GymDirectStep`, between a worker's rows of the shared buffers);
- the rules of where the numpy-row paths apply (``gym_parts``: :func:`runs_own_steps`,
  :func:`numpy_rows_apply`, :func:`numpy_stepper`) and the parts of ``rl_envs.libs`` they
  need (:class:`GymParts`, handed in by :func:`register_gym_parts`);
- the numpy-row lane plan of ``RewardSum`` (``lane_plans``).
"""

from rl_envs._accel.gym_group import GymGroupSteps, SerialDevices, gym_vector_group
from rl_envs._accel.gym_parts import (
    GymParts,
    GymPlanEnv,
    gym_parts,
    numpy_rows_apply,
    numpy_stepper,
    register_gym_parts,
    runs_own_steps,
)
from rl_envs._accel.gym_plan import GymStepPlan
from rl_envs._accel.lane_plans import sum_lane_plan
from rl_envs._accel.worker_gym import GymDirectStep

__all__ = [
    "sum_lane_plan",
    "GymDirectStep",
    "GymGroupSteps",
    "GymParts",
    "GymPlanEnv",
    "GymStepPlan",
    "SerialDevices",
    "gym_parts",
    "gym_vector_group",
    "numpy_rows_apply",
    "numpy_stepper",
    "register_gym_parts",
    "runs_own_steps",
]
