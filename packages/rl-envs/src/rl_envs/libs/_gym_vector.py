"""The vector-env path of GymWrapper: partial resets and gymnasium's autoreset modes.

rl-core resets finished sub-envs itself: after a step in which some sub-envs are done,
``EnvBase.step_and_maybe_reset`` (and ``rollout``) call ``reset`` with a ``"_reset"`` mask.
The wrapper maps that onto gymnasium's three autoreset modes so that no reset step ever shows
up as a transition:

- ``DISABLED`` (what :class:`~rl_envs.libs.GymEnv` builds) and ``NEXT_STEP``: the step
  returns the final observation of a finished episode; the masked reset calls
  ``env.reset(options={"reset_mask": mask})``, which resets those sub-envs and (in
  ``NEXT_STEP``) clears gymnasium's pending autoreset, so the next step is a real step.
- ``SAME_STEP``: gymnasium has already reset the finished sub-envs inside the step. The step
  output gets the final observations from ``info["final_obs"]`` (and the final ``info`` from
  ``info["final_info"]``), and the reset observations are kept until the masked reset asks
  for them. Sub-envs that are reset without having finished are reset through
  ``reset_mask``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core._accel.td_access import get_leaf
from rl_core.keys import RESET, NestedKey


def reset_mask(tensordict: TensorDictBase | None, num_envs: int) -> np.ndarray | None:
    """The ``"_reset"`` mask of ``tensordict`` as a numpy ``(num_envs,)`` bool array, or None."""
    if tensordict is None:
        return None
    mask = get_leaf(tensordict, (RESET,), None)
    if mask is None:
        return None
    if mask.is_cpu:
        return mask.numpy().reshape(num_envs, -1).any(-1)
    return mask.reshape(num_envs, -1).any(-1).cpu().numpy()


def autoreset_mode(env: Any) -> str:
    """The autoreset mode of a gymnasium vector env: ``"NextStep"``, ``"SameStep"`` or ``"Disabled"``."""
    mode = env.metadata.get("autoreset_mode", "NextStep")
    return getattr(mode, "value", mode)


def _where(mask: torch.Tensor, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    view = mask.reshape(mask.shape[0], *([1] * (new.ndim - 1)))
    return torch.where(view, new, old)


def splice(mask: np.ndarray, new: TensorDictBase, old: TensorDictBase) -> TensorDictBase:
    """Per sub-env: ``new`` where ``mask`` is True, else ``old`` (tensor entries of ``new``)."""
    rows = torch.from_numpy(mask)
    out = old.clone(recurse=False)
    for key in new.keys(include_nested=True, leaves_only=True):
        value = new.get(key)
        if isinstance(value, torch.Tensor):
            out.set(key, _where(rows.to(value.device), value, old.get(key)))
    return out


def with_final_observations(
    out: TensorDictBase, finished: np.ndarray, final_obs: Any, decode_single: Any
) -> TensorDictBase:
    """A copy of ``out`` with the final observations of the ``finished`` sub-envs.

    Args:
        out: a ``SAME_STEP`` vector env's step output (reset observations where finished).
        finished: the bool ``(num_envs,)`` mask of the finished sub-envs.
        final_obs: gymnasium's ``info["final_obs"]`` (one observation per sub-env).
        decode_single: ``(key, key in the observation or None, decoder)`` per entry, decoding
            one sub-env's observation.
    """
    final = out.clone()
    for i in np.flatnonzero(finished):
        obs = final_obs[i]
        single = {
            key: decode(obs if src is None else obs[src]) for key, src, decode in decode_single
        }
        final.update_at_(single, int(i))
    return final


class SameStepResets:
    """Keeps what a ``SAME_STEP`` vector env returns for the sub-envs it reset inside a step.

    Args:
        read_final: ``read_final(out, finished, final_obs, final_info)`` returns ``out`` with
            the final observations (one per sub-env in ``final_obs``, ``None`` for running
            ones) and final ``info`` entries written for the ``finished`` sub-envs.
    """

    def __init__(
        self,
        read_final: Callable[[TensorDictBase, np.ndarray, Any, dict[str, Any]], TensorDictBase],
    ) -> None:
        self.read_final = read_final
        self.pending: np.ndarray | None = None
        self.reset_td: TensorDictBase | None = None

    def clear(self) -> None:
        self.pending = None
        self.reset_td = None

    def after_step(
        self, out: TensorDictBase, info: dict[str, Any], keys: list[NestedKey]
    ) -> TensorDictBase:
        """Keeps the observation entries ``keys`` of ``out`` (the reset observations of the
        finished sub-envs) and returns the step output with the final observations of the
        finished sub-envs."""
        finished = info.get("_final_obs")
        if finished is None or not bool(np.any(finished)):
            self.clear()
            return out
        finished = np.asarray(finished, dtype=bool)
        # A step supersedes what an earlier one kept: sub-envs stepped without a reset have
        # moved on from their reset observation.
        self.pending = finished.copy()
        self.reset_td = out.select(*keys)
        return self.read_final(out, finished, info["final_obs"], info.get("final_info", {}))

    def take(self, mask: np.ndarray) -> tuple[TensorDictBase | None, np.ndarray]:
        """The kept reset entries if any masked sub-env has some, and the sub-envs that
        still need a gymnasium reset."""
        pending = self.pending
        if pending is None:
            return None, mask
        served = mask & pending
        pending &= ~served
        return (self.reset_td if served.any() else None), mask & ~served


def zeros_like_spec(spec: Any, batch_size: torch.Size) -> TensorDict:
    """An all-zeros value of a Composite spec (for masked resets that reset nothing)."""
    out = spec.zero()
    if out.batch_size != batch_size:
        out.batch_size = batch_size
    return out


__all__ = [
    "SameStepResets",
    "autoreset_mode",
    "reset_mask",
    "splice",
    "with_final_observations",
    "zeros_like_spec",
]
