"""ConditionalSkip: steps of the env below skipped where a condition on the input holds."""

from __future__ import annotations

from collections.abc import Callable

import torch
from tensordict import TensorDictBase

from rl_core import Transform


class ConditionalSkip(Transform):
    """Skips the step of the env below where ``cond(tensordict)`` is True.

    ``cond`` reads the step's input (what the policy wrote) and returns a bool, or a bool
    tensor with one value per sub-env. A skipped sub-env stays where it is: the step shows
    its current observations and done flags again and zero rewards, and no transform of the
    same :class:`~rl_core.TransformedEnv` runs on it (wrap the env in another
    ``TransformedEnv`` for transforms that should see every step, e.g. a step counter).
    When every sub-env is skipped the env below is not stepped. When only some are, it is
    stepped and the skipped rows of its output are replaced: exact for envs whose state
    travels in the TensorDict; an env that keeps its state elsewhere (a simulator) moves on
    in the skipped sub-envs too, so give such envs one ``ConditionalSkip`` per sub-env (in
    the workers of a ``ParallelEnv``/``SerialEnv``).

    Args:
        cond: ``(tensordict) -> bool | Tensor``: True where the step is skipped.

    Raises:
        TypeError: ``cond`` is not callable.
        ValueError: (at a step) a condition that is not one bool per sub-env.

    Examples:
        >>> import torch
        >>> from rl_core import StepCounter, TransformedEnv
        >>> from rl_core.testing import CountingEnv
        >>> skipping = TransformedEnv(
        ...     CountingEnv(max_count=100), ConditionalSkip(lambda td: td["step_count"] % 2 == 1)
        ... )
        >>> env = TransformedEnv(skipping, StepCounter())  # counts every step, skipped or not
        >>> traj = env.rollout(4, lambda td: td.set("action", torch.ones(1, dtype=torch.int64)))
        >>> traj["next", "observation"].squeeze(-1).tolist()
        [1.0, 1.0, 2.0, 2.0]
    """

    def __init__(self, cond: Callable[[TensorDictBase], bool | torch.Tensor]) -> None:
        if not callable(cond):
            raise TypeError(
                f"ConditionalSkip: expected a callable cond, got {type(cond).__name__}."
            )
        super().__init__()
        self.cond = cond

    def skipped_steps(self, tensordict: TensorDictBase) -> torch.Tensor:
        return torch.as_tensor(self.cond(tensordict), dtype=torch.bool)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict


__all__ = ["ConditionalSkip"]
