"""StepCounter: counts steps per episode and truncates at a maximum."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core.keys import DONE, STEP_COUNT, TRUNCATED, NestedKey
from rl_core.specs import Bounded, Composite
from rl_core.transforms.transform import Transform


class StepCounter(Transform):
    """Writes the step count of the episode and sets ``truncated`` when it reaches ``max_steps``.

    The count (int64, shaped like the done flags) is 0 after a reset and 1 after the first
    step; it lives at the root of the env's done flags.

    Args:
        max_steps: truncate the episode after this many steps; ``None`` only counts.
        truncated_key: the flag set on truncation. Defaults to ``"truncated"``.
        step_count_key: where the count goes. Defaults to ``"step_count"``.
        update_done: also set ``done`` on truncation (keeps ``done == terminated | truncated``).

    Raises:
        ValueError: ``max_steps`` is not a positive int.
    """

    def __init__(
        self,
        max_steps: int | None = None,
        truncated_key: NestedKey = TRUNCATED,
        step_count_key: NestedKey = STEP_COUNT,
        *,
        update_done: bool = True,
    ) -> None:
        if max_steps is not None and (
            not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1
        ):
            raise ValueError(f"StepCounter: expected max_steps >= 1 or None, got {max_steps!r}.")
        super().__init__()
        self.max_steps = max_steps
        self.truncated_key = truncated_key
        self.step_count_key = step_count_key
        self.update_done = update_done

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        batch, device = tensordict_reset.batch_size, tensordict_reset.device
        tensordict_reset.set(
            self.step_count_key, torch.zeros((*batch, 1), dtype=torch.int64, device=device)
        )
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        count = tensordict.get(self.step_count_key, None)
        if count is None:
            raise KeyError(
                f"StepCounter: expected {self.step_count_key!r} in the TensorDict given to step; "
                f"it is written by reset. Reset the env first, and keep the entry when you build "
                f"the next input (step_mdp keeps it)."
            )
        count = count + 1
        next_tensordict.set(self.step_count_key, count)
        if self.max_steps is not None:
            truncated = count >= self.max_steps
            previous = next_tensordict.get(self.truncated_key, None)
            if previous is not None:
                truncated = truncated | previous
            next_tensordict.set(self.truncated_key, truncated)
            if self.update_done:
                done = next_tensordict.get(DONE, None)
                next_tensordict.set(DONE, truncated if done is None else done | truncated)
        return next_tensordict

    def _count_spec(self, batch_size: torch.Size, device: torch.device | None) -> Bounded:
        high = self.max_steps if self.max_steps is not None else torch.iinfo(torch.int64).max
        return Bounded(0, high, shape=(*batch_size, 1), device=device, dtype=torch.int64)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        observation_spec[self.step_count_key] = self._count_spec(
            observation_spec.shape, observation_spec.device
        )
        return observation_spec

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        state_spec[self.step_count_key] = self._count_spec(state_spec.shape, state_spec.device)
        return state_spec

    def extra_repr(self) -> str:
        return f"max_steps={self.max_steps}"


__all__ = ["StepCounter"]
