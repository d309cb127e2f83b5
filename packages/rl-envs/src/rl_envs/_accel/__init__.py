"""rl-envs' speed-only code, in one private folder (see ``seam``).

Everything here gives what the contract code gives, faster: the step plan of a
:class:`~rl_envs.libs.GymWrapper` (the fused step-and-reset, the numpy rows a TransformedEnv's
lane reads, the random rollout in a plain gymnasium loop), SerialEnv's vector group of gymnasium sub-envs
and the rules of where those numpy-row
paths apply. Contract modules reach it through one module, ``rl_envs._accel.seam`` (an
import-linter contract keeps it so), and nothing here imports another rl-envs folder: what a
plan needs of a wrapper it reads through the named interface ``GymPlanEnv`` and the parts
``rl_envs.libs.gym`` registers (``GymParts``).
"""
