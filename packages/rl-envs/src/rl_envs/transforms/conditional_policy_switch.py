"""ConditionalPolicySwitch: a second policy steps the env when a condition holds (turn-based play)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Transform, step_mdp
from rl_core.keys import DONE, NEXT


class ConditionalPolicySwitch(Transform):
    """Lets ``policy`` take the env's next step whenever ``condition`` holds on the data the env
    just returned (TorchRL's ``ConditionalPolicySwitch``).

    After each step of the env below, ``condition(next_tensordict)`` is evaluated; when it holds
    (and the episode is not over), the transform moves to the next state, runs ``policy`` on
    it and steps the env below once more with that action: the step's output is that second
    step's. After a reset the same happens once, and the reward of that policy step is dropped
    from the reset's output. The main policy thus acts only on the states where the condition
    does not hold, e.g. the main player's turns of a two-player game whose other player is
    ``policy``. Put the transform last, so that ``policy`` sees the data as the main policy
    does, and after a ``StepCounter`` that should count both policies' steps.

    On a batched env the condition is a bool of the batch shape (or one bool); the switch runs
    when it holds for every sub-env that is not done, and no sub-env is done or every one is:
    a batch-locked env cannot step part of its batch (TorchRL raises the same way).

    Args:
        policy: ``TensorDict -> TensorDict`` writing the action.
        condition: ``TensorDict -> bool | Tensor``.

    Raises:
        TypeError: ``policy`` or ``condition`` is not callable, or the condition gives
            something else than a bool or a bool tensor.
        ValueError: the condition has a shape other than the batch's, or holds for part of a
            batch.
        RuntimeError: called outside an env.

    Examples:
        >>> import torch
        >>> from rl_core import Compose, StepCounter, TransformedEnv
        >>> from rl_core.testing import CountingEnv
        >>> plus_one = lambda td: td.set("action", torch.ones(1, dtype=torch.int64))
        >>> odd = lambda td: bool(td["observation"].item() % 2 == 1)
        >>> env = TransformedEnv(
        ...     CountingEnv(max_count=6),
        ...     Compose(StepCounter(), ConditionalPolicySwitch(plus_one, odd)),
        ... )
        >>> traj = env.rollout(10, plus_one)  # the main policy sees even counts only
        >>> traj["next", "observation"].flatten().tolist(), traj["next", "step_count"].flatten().tolist()
        ([2.0, 4.0, 6.0], [2, 4, 6])
    """

    def __init__(
        self,
        policy: Callable[[TensorDictBase], TensorDictBase],
        condition: Callable[[TensorDictBase], bool | torch.Tensor],
    ) -> None:
        for name, value in (("policy", policy), ("condition", condition)):
            if not callable(value):
                raise TypeError(
                    f"ConditionalPolicySwitch: expected {name} as a callable, got "
                    f"{type(value).__name__}."
                )
        super().__init__()
        self.__dict__["policy"] = policy  # not a submodule: the policy is trained elsewhere
        self.condition = condition

    def _mask(self, data: TensorDictBase) -> torch.Tensor:
        cond = self.condition(data)
        if isinstance(cond, bool):
            cond = torch.tensor(cond, device=data.device)
        if not isinstance(cond, torch.Tensor) or cond.dtype is not torch.bool:
            raise TypeError(
                f"ConditionalPolicySwitch: the condition must give a bool or a bool tensor, got "
                f"{cond!r}."
            )
        batch = tuple(data.batch_size)
        if cond.numel() == 1:
            return cond.reshape(()).expand(batch)
        if tuple(cond.shape) not in (batch, (*batch, 1)):
            raise ValueError(
                f"ConditionalPolicySwitch: the condition gave shape {tuple(cond.shape)}; expected "
                f"one bool or the batch shape {batch}."
            )
        return cond.reshape(batch)

    def _env(self) -> Any:
        parent = self.parent
        if parent is None:
            raise RuntimeError(
                "ConditionalPolicySwitch steps the env it sits in: put it in a TransformedEnv."
            )
        return parent

    @staticmethod
    def _whole(mask: torch.Tensor, what: str) -> bool:
        if bool(mask.all()):
            return True
        if not bool(mask.any()):
            return False
        raise ValueError(
            f"ConditionalPolicySwitch: {what} holds for the sub-envs {mask.nonzero().flatten()} "
            f"only; the switch steps the whole batch, so the condition must hold for every "
            f"sub-env or none (TorchRL needs a batch-unlocked env for partial steps)."
        )

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        env = self._env()
        cond = self._mask(next_tensordict)
        if not bool(cond.any()):
            return next_tensordict
        done = next_tensordict.get(DONE, None)
        if done is not None:
            done = done.reshape(next_tensordict.batch_size)
            if self._whole(done, "the done flag"):
                return next_tensordict
        if not self._whole(cond, "the condition"):
            return next_tensordict
        root = step_mdp(tensordict.copy().set(NEXT, next_tensordict))
        return env.step(self.policy(root)).get(NEXT)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        env = self._env()
        cond = self._mask(tensordict_reset)
        if not self._whole(cond, "the condition"):
            return tensordict_reset
        out = env.step(self.policy(tensordict_reset.copy())).get(NEXT)
        return out.exclude(*env.reward_keys)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "ConditionalPolicySwitch steps an env: it runs in a TransformedEnv's step and reset, "
            "not on a TensorDict alone."
        )


__all__ = ["ConditionalPolicySwitch"]
