"""NoopResetEnv: random steps after each reset (Atari's varied starting states)."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core import Transform, step_mdp
from rl_core.keys import DONE


class NoopResetEnv(Transform):
    """After each reset, takes a number of random steps before handing the env over.

    With ``random=True`` the number is drawn uniformly from ``1..noops`` (torch RNG) at each
    reset, otherwise it is ``noops``. An episode that ends during these steps is reset and
    the steps start over (at most 10 times). Works on unbatched envs (inside each worker of
    a ``ParallelEnv``); a batched env below it raises on the first reset.

    Args:
        noops: the (maximum) number of random steps.
        random: draw the number at each reset.

    Raises:
        ValueError: ``noops`` < 1.
        RuntimeError: (on reset) the env below is batched, or episodes keep ending during
            the steps.

    Examples:
        >>> from rl_core import TransformedEnv
        >>> from rl_core.testing import CountingEnv
        >>> env = TransformedEnv(CountingEnv(max_count=100), NoopResetEnv(4, random=False))
        >>> env.reset()["observation"].item() <= 4
        True
    """

    _MAX_TRIALS = 10

    def __init__(self, noops: int = 30, *, random: bool = True) -> None:
        if not isinstance(noops, int) or isinstance(noops, bool) or noops < 1:
            raise ValueError(f"NoopResetEnv: expected noops >= 1, got {noops!r}.")
        super().__init__()
        self.noops = noops
        self.random = random

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        parent = self.parent
        if parent is None:
            raise RuntimeError("NoopResetEnv: a reset outside an env.")
        if parent.batch_size != torch.Size([]):
            raise RuntimeError(
                f"NoopResetEnv: expected an unbatched env below it, got batch size "
                f"{tuple(parent.batch_size)}; put the transform in each sub-env (e.g. in the "
                f"create_env_fn of a ParallelEnv)."
            )
        keys = list(tensordict_reset.keys(include_nested=True, leaves_only=True))
        td = tensordict_reset
        for _ in range(self._MAX_TRIALS):
            n = int(torch.randint(1, self.noops + 1, ())) if self.random else self.noops
            for _ in range(n):
                td = step_mdp(
                    parent.rand_step(td),
                    reward_keys=parent.reward_keys,
                    done_keys=parent.done_keys,
                    action_keys=parent.action_keys,
                )
                if bool(td.get(DONE).any()):
                    break
            else:
                return td.select(*keys, strict=False)
            td = parent.reset()
        raise RuntimeError(
            f"NoopResetEnv: the episode ended during the random steps after {self._MAX_TRIALS} "
            f"resets in a row; lower noops."
        )

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def extra_repr(self) -> str:
        return f"noops={self.noops}, random={self.random}"


__all__ = ["NoopResetEnv"]
