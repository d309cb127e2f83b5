"""The gymnasium step rules on numpy rows, in one place for every path that steps a GymWrapper.

``GymWrapper._step``/``_reset``, its rollout without a policy (``rl_envs._accel.gym_rollout``), ``SerialEnv``'s
vector group (a ``GymWrapper`` over one ``SyncVectorEnv``) and the ``ParallelEnv`` workers'
direct path (``rl_envs.batched._worker_gym``) all step gymnasium through a
:class:`GymNumpyStepper`: it encodes (and checks) the action, steps the env, writes the
reward, ``terminated``, ``truncated`` and ``done = terminated | truncated`` into numpy rows,
and resets finished sub-envs (``reset_mask`` for a vector env, a full reset for a single one)
writing their reset observations into a row, after which the final observations are gone from
the env (callers that keep them read the row first).

Where the numpy-row paths apply is decided in the speed folder
(``rl_envs._accel.seam.numpy_rows_apply``); which stepper a wrapper gets, in
``_gym_sync_stepper.make_stepper``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rl_envs.libs._gym_codecs import Encoder

# (observation, reward, done, terminated, truncated) blocks; row i holds one step.
Blocks = tuple[np.ndarray | None, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]


class GymNumpyStepper:
    """Steps one gymnasium env (single or vector) with numpy in and numpy out.

    Args:
        env: the gymnasium env or vector env.
        encode: the action encoder (see ``make_encoder``): spec value -> what ``env.step``
            takes, raising ``ValueError`` for an invalid action.

    Keyword Args:
        vector: whether ``env`` is a vector env.
    """

    def __init__(self, env: Any, encode: Encoder, *, vector: bool) -> None:
        self.env = env
        self.encode = encode
        self.vector = vector
        # Set when the wrapper's outputs change (an info reader is added): paths that took
        # this stepper from ``rl_envs._accel.seam.numpy_stepper`` must then take the generic path.
        self.retired = False

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, dict]:
        """``env.step`` of the encoded ``action``: gymnasium's five outputs."""
        return self.env.step(self.encode(action))

    def write_at(
        self, blocks: Blocks, i: int, obs: Any, reward: Any, terminated: Any, truncated: Any
    ) -> Any:
        """Writes one step's outputs into row ``i`` of ``blocks``; returns ``done``.

        Args:
            blocks: ``(obs, reward, done, terminated, truncated)`` writable numpy arrays whose
                row ``i`` holds one step (batch shape, without the trailing singleton dim of
                the flags); ``obs`` or ``done`` may be ``None`` (not written).
            i: the row.

        Returns:
            ``done = terminated | truncated`` when a sub-env finished (a bool array of the
            batch shape for a vector env, ``True`` for a single env), else ``None``.
        """
        obs_block, reward_block, done_block, terminated_block, truncated_block = blocks
        reward_block[i] = reward
        terminated_block[i] = terminated
        truncated_block[i] = truncated
        if obs_block is not None:
            obs_block[i] = obs
        if self.vector:
            done = np.logical_or(terminated, truncated)
            if done_block is not None:
                done_block[i] = done
            return done if np.count_nonzero(done) else None  # ``any()``, fewer calls
        # A single env: python bools (or numpy ones), no array work.
        finished = bool(terminated or truncated)
        if done_block is not None:
            done_block[i] = finished
        return True if finished else None

    def step_at(self, action: Any, blocks: Blocks, i: int, *, encoded: bool = False) -> Any:
        """Steps with ``action`` and writes the outputs into row ``i`` of ``blocks``; returns
        ``done`` where a sub-env finished, else ``None`` (see :meth:`write_at`).

        Keyword Args:
            encoded: ``action`` is already what ``env.step`` takes (drawn and encoded in
                chunks by the rollout loop). Defaults to ``False``.
        """
        obs, reward, terminated, truncated, _ = self.env.step(
            action if encoded else self.encode(action)
        )
        return self.write_at(blocks, i, obs, reward, terminated, truncated)

    def reset(
        self,
        mask: np.ndarray | None = None,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict]:
        """Resets every sub-env (``mask`` None or all True) or those of ``mask`` (vector envs,
        through ``reset_mask``); gymnasium's ``(observation, info)``."""
        if mask is None or mask.all():
            return self.env.reset(seed=seed, options=options)
        return self.env.reset(seed=seed, options={**(options or {}), "reset_mask": mask})

    def reset_finished(self, done: Any) -> tuple[np.ndarray | None, Any]:
        """Resets the sub-envs that finished (``done`` as :meth:`write_at` returns it).

        Returns:
            ``(mask, observation)``: the bool ``(num_envs,)`` mask of the reset sub-envs and
            gymnasium's reset observation of every sub-env (only the rows of ``mask`` are
            reset observations: in ``NEXT_STEP`` mode the others are stale) for a vector env;
            ``(None, observation)`` for a single env, reset whole. The observation may be
            the env's own buffer (``SyncVectorStepper``): read it before the next step.
        """
        if not self.vector:
            return None, self.reset()[0]
        mask = np.array(done, dtype=np.bool_)
        return mask, self.reset(mask)[0]

    def reset_finished_at(self, done: Any, obs_block: np.ndarray, i: int) -> None:
        """Resets the finished sub-envs and writes their reset observations into row ``i``.

        A vector env resets only the sub-envs of ``done`` (the other rows keep their values:
        in ``NEXT_STEP`` mode gymnasium's output is stale there); a single env resets whole.
        The final observations are gone from the env afterwards: read the row first.
        """
        mask, obs = self.reset_finished(done)
        if mask is None:
            obs_block[i] = obs
        else:
            obs_block[i][mask] = np.asarray(obs)[mask]


__all__ = ["Blocks", "GymNumpyStepper"]
