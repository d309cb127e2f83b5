"""rl-core's speed-only code, in one private folder (see ``seam``).

Everything here gives what the contract code gives, faster: step plans, numpy rows, policy
call and draw plans, the parameter-swap cache of ``LossModule.use_network`` and the
tensordict fast access. Contract modules reach it through one module, ``rl_core._accel.seam``
(an import-linter contract keeps it so), and nothing here imports a contract module above the
TensorDict layer: what a plan needs of an env or a transform it reads through the seam's
named interfaces (``PlanEnv``) and registries.
"""
