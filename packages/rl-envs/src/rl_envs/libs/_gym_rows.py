"""Step outputs written into rows of preallocated blocks: no torch call per step.

Turning a handful of numbers into tensors costs one torch call each (``torch.from_numpy`` of a
fresh array), and in a Python loop that interleaves an env step, a policy and TensorDict
bookkeeping each call is slow (its code is cold every time). :class:`StepRows` instead
allocates, every ``rows`` steps, one numpy block per output entry and cuts it into per-step
tensor views in one ``unbind`` call; a step then writes its numbers into the next row with
numpy (``GymNumpyStepper.write_at``) and hands out the views of that row. Every row is written once, so the tensors a step
returns are never modified afterwards, as ``EnvBase._step`` requires.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from rl_core.keys import DONE, REWARD, TERMINATED, TRUNCATED

# Elements of the observation block beyond which observations are not written into blocks
# (a block of images would keep many frames alive through one step's view).
MAX_BLOCK_OBSERVATION = 1024


class StepRows:
    """Hands out the reward, done flags (and one small observation) of each step as views.

    Args:
        batch: the env batch shape (``()`` or ``(num_envs,)``).
        observation: ``(key, shape, numpy dtype)`` of one observation entry (``shape``
            without the batch dims) to write into blocks too, or ``None``.

    Keyword Args:
        rows: steps per block. Defaults to 64.
    """

    def __init__(
        self,
        batch: tuple[int, ...],
        observation: tuple[str, tuple[int, ...], np.dtype] | None = None,
        *,
        rows: int = 64,
    ) -> None:
        self.batch = batch
        self.observation = observation
        self.rows = rows
        self.row = rows  # no block yet: the first write allocates one
        self.vector = bool(batch)
        # ``done`` of the last write where a sub-env finished, else None (see ``write_at``).
        self.finished: Any = None
        self.last = -1  # the row of the last write (see numpy_rows)

    def _allocate(self) -> None:
        rows, batch = self.rows, self.batch
        reward = np.zeros((rows, *batch, 1), dtype=np.float32)
        flags = np.zeros((rows, 3, *batch, 1), dtype=np.bool_)
        self.reward_block = reward
        reward_t, flags_t = torch.from_numpy(reward), torch.from_numpy(flags)
        # Writable views without the trailing singleton dim: a row takes a scalar (single
        # env) or a (num_envs,) array (vector env) as it comes from gymnasium.
        self.reward_np = reward.reshape(rows, *batch)
        self.flags_np = flags.reshape(rows, 3, *batch)
        self.views: list[tuple[torch.Tensor, ...]] = list(
            zip(
                reward_t.unbind(0),
                flags_t[:, 0].unbind(0),
                flags_t[:, 1].unbind(0),
                flags_t[:, 2].unbind(0),
            )
        )
        obs_np = None
        if self.observation is not None:
            _, shape, dtype = self.observation
            obs_np = np.zeros((rows, *batch, *shape), dtype=dtype)
            self.obs_views = torch.from_numpy(obs_np).unbind(0)
        # (observation, reward, done, terminated, truncated), row i for step i.
        flags_np = self.flags_np
        self.blocks = (obs_np, self.reward_np, flags_np[:, 0], flags_np[:, 1], flags_np[:, 2])
        self.pairs = None  # numpy_rows of each row of the block, made when first asked for
        self.row = 0

    def _next_row(self) -> int:
        i = self.row
        if i == self.rows:
            self._allocate()
            i = 0
        self.row = i + 1
        self.last = i
        return i

    def numpy_rows(self) -> list[tuple[torch.Tensor, np.ndarray]]:
        """``(tensor, numpy row)`` of the reward and the block observation of the last write
        (rows are never written again); empty before the first write."""
        i = self.last
        if i < 0:
            return []
        pairs = self.pairs
        if pairs is None:
            # Every row's pairs at once (one pass over the block) rather than a row per step.
            pairs = [[(v[0], a)] for v, a in zip(self.views, self.reward_block, strict=True)]
            if self.observation is not None:
                for row, view, array in zip(pairs, self.obs_views, self.blocks[0], strict=True):
                    row.append((view, array))
            self.pairs = pairs
        return pairs[i]

    def write(self, stepper: Any, obs: Any, reward: Any, terminated: Any, truncated: Any) -> dict:
        """Writes one step into the next row (``stepper.write_at``: the step rules of
        ``GymNumpyStepper``); returns the tensor views of that row: reward, flags (and the
        block observation). ``self.finished`` then holds ``write_at``'s ``done``."""
        i = self._next_row()
        self.finished = stepper.write_at(self.blocks, i, obs, reward, terminated, truncated)
        reward_t, done_t, terminated_t, truncated_t = self.views[i]
        out = {REWARD: reward_t, DONE: done_t, TERMINATED: terminated_t, TRUNCATED: truncated_t}
        if self.observation is not None:
            out[self.observation[0]] = self.obs_views[i]
        return out

    def step(self, stepper: Any, action: Any) -> dict:
        """Steps ``stepper`` with ``action`` straight into the next row
        (``stepper.step_at``); returns the tensor views of that row, as :meth:`write` does.
        Needs a block observation (no observation is returned)."""
        i = self.row  # _next_row, inline: this runs between two gymnasium steps
        if i == self.rows:
            self._allocate()
            i = 0
        self.row = i + 1
        self.last = i
        self.finished = stepper.step_at(action, self.blocks, i)
        reward_t, done_t, terminated_t, truncated_t = self.views[i]
        return {
            self.observation[0]: self.obs_views[i],
            REWARD: reward_t,
            DONE: done_t,
            TERMINATED: terminated_t,
            TRUNCATED: truncated_t,
        }

    def write_reset(self, previous: np.ndarray, mask: np.ndarray | None, obs: Any) -> dict:
        """The next root's observation and done flags after a reset of the sub-envs of
        ``mask`` (all of them when ``None``), as views of the next row: the observation rows
        of ``mask`` from gymnasium's reset ``obs``, the others from ``previous``; the flags
        all False (the block's zeros, never written). Needs a block observation."""
        i = self._next_row()
        row = self.blocks[0][i]
        if mask is None:
            row[...] = obs
        else:
            np.copyto(row, previous)
            # The rows of ``mask``: ``where`` broadcasts the (num_envs,) mask over each row.
            np.copyto(row, obs, where=mask.reshape(mask.shape + (1,) * (row.ndim - 1)))
        _, done_t, terminated_t, truncated_t = self.views[i]
        return {
            self.observation[0]: self.obs_views[i],
            DONE: done_t,
            TERMINATED: terminated_t,
            TRUNCATED: truncated_t,
        }


def block_observation(
    plan: tuple[str, str | None, Any, Any], batch: tuple[int, ...]
) -> tuple[str, tuple[int, ...], np.dtype] | None:
    """``(key, shape, dtype)`` when the observation is one small array that a step can write
    into a row block (see ``StepRows``), else None."""
    from gymnasium import spaces

    key, src, space, spec = plan
    if src is not None or not isinstance(space, spaces.Box | spaces.MultiBinary):
        return None
    shape = tuple(spec.shape[len(batch) :])
    if int(np.prod((*batch, *shape))) > MAX_BLOCK_OBSERVATION:
        return None
    return key, shape, np.dtype(space.dtype)


__all__ = ["MAX_BLOCK_OBSERVATION", "StepRows", "block_observation"]
