"""FrameSkipTransform: each action repeated for several env steps, rewards summed."""

from __future__ import annotations

from collections.abc import Sequence

from tensordict import TensorDictBase

from rl_core import Transform, step_mdp
from rl_core.keys import DONE, NEXT, REWARD, NestedKey
from rl_envs.transforms._common import parent_input


class FrameSkipTransform(Transform):
    """Repeats each action ``frame_skip`` times; the step shows the last observation and the
    sum of the rewards.

    The repetition stops early when the episode ends (for a batched env: when any sub-env's
    episode ends, so the others then skip fewer frames in that step). Put it first in the
    transform list so that the transforms after it see one step per action.

    Args:
        frame_skip: the number of env steps per action (>= 1).
        reward_keys: the rewards to sum. Defaults to ``["reward"]``.

    Raises:
        ValueError: ``frame_skip`` < 1.
        RuntimeError: a step outside an env.

    Examples:
        >>> import torch
        >>> from rl_core import TransformedEnv
        >>> from rl_core.testing import CountingEnv
        >>> env = TransformedEnv(CountingEnv(max_count=100), FrameSkipTransform(3))
        >>> td = env.step(env.reset().set("action", torch.ones(1, dtype=torch.int64)))
        >>> td["next", "observation"].item(), td["next", "reward"].item()
        (3.0, 3.0)
    """

    def __init__(
        self, frame_skip: int = 1, reward_keys: NestedKey | Sequence[NestedKey] | None = None
    ) -> None:
        if not isinstance(frame_skip, int) or isinstance(frame_skip, bool) or frame_skip < 1:
            raise ValueError(f"FrameSkipTransform: expected frame_skip >= 1, got {frame_skip!r}.")
        super().__init__(in_keys=REWARD if reward_keys is None else reward_keys)
        self.frame_skip = frame_skip

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        if self.frame_skip == 1:
            return next_tensordict
        parent = self.parent
        if parent is None:
            raise RuntimeError("FrameSkipTransform: a step outside an env.")
        totals = [next_tensordict.get(key) for key in self.in_keys]
        # The next input is the step's next state with the same action, so that envs whose
        # state lives in the TensorDict move on too.
        stepped = parent_input(self, tensordict).set(NEXT, next_tensordict)
        for _ in range(self.frame_skip - 1):
            if bool(next_tensordict.get(DONE).any()):
                break
            root = step_mdp(
                stepped,
                exclude_action=False,
                reward_keys=parent.reward_keys,
                done_keys=parent.done_keys,
                action_keys=parent.action_keys,
            )
            stepped = parent.step(root)
            next_tensordict = stepped.get(NEXT)
            totals = [t + next_tensordict.get(k) for t, k in zip(totals, self.in_keys)]
        for key, total in zip(self.in_keys, totals):
            next_tensordict.set(key, total)
        return next_tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def extra_repr(self) -> str:
        return f"frame_skip={self.frame_skip}"


__all__ = ["FrameSkipTransform"]
