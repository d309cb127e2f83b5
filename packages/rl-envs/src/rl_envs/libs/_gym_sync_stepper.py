"""Steps the sub-envs of a ``gymnasium.vector.SyncVectorEnv`` directly, without its bookkeeping.

``SyncVectorEnv.step`` loops over its sub-envs and, around each sub-env step, builds the
``info`` dict (``_add_info``) and checks the autoreset mode; a masked ``reset`` loops over every
sub-env to find the masked ones and builds the ``info`` dict too. A ``GymWrapper`` without
info readers reads none of those infos. :class:`SyncVectorStepper` runs the same loop without
them: it splits the actions with ``gymnasium.vector.utils.iterate`` (the sub-envs get the
same action objects), steps (or resets) each sub-env, and keeps the vector env's own state
(``_env_obs``, ``_rewards``, ``_terminations``, ``_truncations``, ``_autoreset_envs``) as
``SyncVectorEnv`` does (its output buffer ``_observations`` included), so the generic path
can take over at any step.

Where it applies (an exact ``SyncVectorEnv`` in ``DISABLED`` autoreset mode, no info reader)
is decided once, by :func:`sub_env_steps_apply` (:func:`make_stepper` picks the stepper of a
wrapper); the oracle test
(``tests/libs/test_gym_sync_stepper.py``) steps a wrapper through it and one through
``SyncVectorEnv`` side by side.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import numpy as np

from rl_envs.libs._gym_codecs import Encoder
from rl_envs.libs._gym_stepper import Blocks, GymNumpyStepper


class SyncVectorStepper(GymNumpyStepper):
    """A :class:`GymNumpyStepper` of a ``SyncVectorEnv`` that steps its sub-envs itself.

    Outputs, sub-env calls and the vector env's state afterwards are those of
    ``SyncVectorEnv.step`` / ``reset(options={"reset_mask": mask})`` in ``DISABLED`` mode, but
    the returned ``info`` is always ``{}`` (the wrapper reads none). A step while a sub-env
    still waits for its reset, a full reset and a reset with a seed or options go through the
    ``SyncVectorEnv`` itself.

    Args:
        env: a ``gymnasium.vector.SyncVectorEnv`` with autoreset ``DISABLED``.
        encode: the action encoder (see ``make_encoder``).
    """

    def __init__(self, env: Any, encode: Encoder) -> None:
        from gymnasium import spaces
        from gymnasium.vector.utils import concatenate, iterate

        super().__init__(env, encode, vector=True)
        self._iterate = iterate
        self._concatenate = concatenate
        # The spaces whose ``iterate`` is ``iter(items)`` and whose ``concatenate`` is
        # ``np.stack(items, axis=0, out=out)`` (gymnasium's ``_iterate_base`` and
        # ``_concatenate_base``): exact types, a subclass may register its own.
        self._iter_spaces = (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)
        self._stack_spaces = (*self._iter_spaces, spaces.Discrete)
        self._flat_out: tuple[np.ndarray, Any, np.ndarray] | None = None

    def _step_sub_envs(self, actions: Any) -> bool:
        """Steps every sub-env with its share of ``actions``, into the vector env's arrays.

        Returns False (nothing stepped) when a sub-env still waits for its reset: the caller
        then steps through ``SyncVectorEnv.step``, which raises gymnasium's error.
        """
        vec = self.env
        if np.count_nonzero(vec._autoreset_envs):  # ``any()``, without numpy's Python layer
            return False
        env_obs, rewards = vec._env_obs, vec._rewards
        terminations, truncations = vec._terminations, vec._truncations
        space = vec.action_space
        if type(space) in self._iter_spaces and type(actions) is np.ndarray and actions.ndim:
            parts = iter(actions)  # what ``iterate`` does for these spaces
        else:
            parts = self._iterate(space, actions)
        for i, (action, sub_env) in enumerate(zip(parts, vec.envs, strict=True)):
            env_obs[i], rewards[i], terminations[i], truncations[i], _ = sub_env.step(action)
        vec._autoreset_envs = np.logical_or(terminations, truncations)
        return True

    def _concatenated(self) -> Any:
        """Gymnasium's batched observation of ``_env_obs``, in the vector env's own buffer."""
        vec = self.env
        out, items = vec._observations, vec._env_obs
        flat = self._flat_view(out, vec.single_observation_space)
        if flat is not None:
            # ``np.stack(items, axis=0, out=out)`` (gymnasium's concatenate of these spaces)
            # is one ``concatenate`` into the flat view of ``out`` where every item is an
            # array of the row shape: same values, same ``same_kind`` casting and errors.
            shape = out.shape[1:]
            for item in items:
                if type(item) is not np.ndarray or item.shape != shape:
                    break
            else:
                np.concatenate(items, axis=0, out=flat)
                return out
        vec._observations = self._concatenate(vec.single_observation_space, items, out)
        return vec._observations

    def _flat_view(self, out: Any, space: Any) -> np.ndarray | None:
        """``out`` with its first two dims merged, as a view (cached per buffer), where
        gymnasium's concatenate of ``space`` into ``out`` is ``np.stack``; else None."""
        cached = self._flat_out
        if cached is not None and cached[0] is out and cached[1] is space:
            return cached[2]
        if (
            type(space) not in self._stack_spaces
            or type(out) is not np.ndarray
            or out.ndim < 2
            or not out.flags.c_contiguous
        ):
            return None
        flat = out.reshape(-1, *out.shape[2:])
        self._flat_out = (out, space, flat)
        return flat

    def _observations(self) -> Any:
        """:meth:`_concatenated`, copied where the vector env copies its outputs."""
        obs = self._concatenated()
        if not self.env.copy:
            return obs
        if type(obs) is np.ndarray and not obs.dtype.hasobject:
            return obs.copy()  # what deepcopy does for such an array
        return deepcopy(obs)

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, dict]:
        """``SyncVectorEnv.step`` of the encoded ``action``; ``info`` is ``{}``."""
        encoded = self.encode(action)
        if not self._step_sub_envs(encoded):
            return self.env.step(encoded)
        vec = self.env
        return (
            self._observations(),
            np.copy(vec._rewards),
            np.copy(vec._terminations),
            np.copy(vec._truncations),
            {},
        )

    def step_at(self, action: Any, blocks: Blocks, i: int, *, encoded: bool = False) -> Any:
        """Steps with ``action`` and writes the outputs into row ``i`` of ``blocks`` (see
        :meth:`GymNumpyStepper.step_at`), with no copy of gymnasium's arrays in between."""
        actions = action if encoded else self.encode(action)
        if not self._step_sub_envs(actions):
            return super().step_at(actions, blocks, i, encoded=True)
        vec = self.env
        # Into gymnasium's own buffer first (its dtype), then the row: as the generic path.
        obs = self._concatenated() if blocks[0] is not None else None
        return self.write_at(blocks, i, obs, vec._rewards, vec._terminations, vec._truncations)

    def reset(
        self,
        mask: np.ndarray | None = None,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[Any, dict]:
        """Resets the sub-envs of ``mask`` as ``SyncVectorEnv.reset(options={"reset_mask":
        mask})`` does; ``info`` is ``{}``. Anything else (no mask, every sub-env, a seed,
        options, a mask gymnasium would reject) goes through the ``SyncVectorEnv``."""
        if seed is not None or options is not None or not self._resets_directly(mask):
            return super().reset(mask, seed=seed, options=options)
        self._reset_sub_envs(mask)
        return self._observations(), {}

    def reset_finished(self, done: Any) -> tuple[np.ndarray | None, Any]:
        """:meth:`GymNumpyStepper.reset_finished`, with no copy of the observation: it is the
        vector env's buffer, to read before the next step or reset."""
        mask = np.array(done, dtype=np.bool_)
        if not self._resets_directly(mask):
            return super().reset_finished(mask)
        self._reset_sub_envs(mask)
        return mask, self._concatenated()

    def _resets_directly(self, mask: Any) -> bool:
        """Whether ``mask`` is a partial reset mask that gymnasium accepts."""
        return (
            type(mask) is np.ndarray
            and mask.dtype == np.bool_
            and mask.shape == (self.env.num_envs,)
            and 0 < np.count_nonzero(mask) < mask.shape[0]  # some but not all
        )

    def _reset_sub_envs(self, mask: np.ndarray) -> None:
        vec = self.env
        vec._terminations[mask] = False
        vec._truncations[mask] = False
        vec._autoreset_envs[mask] = False
        env_obs, envs = vec._env_obs, vec.envs
        sub_options: dict[str, Any] = {}  # what is left of gymnasium's options once popped
        for i in mask.nonzero()[0].tolist():
            env_obs[i], _ = envs[i].reset(seed=None, options=sub_options)


# The state of a SyncVectorEnv that SyncVectorStepper reads and keeps (gymnasium >= 1.1).
_SYNC_STATE = ("envs", "_env_obs", "_observations", "_rewards", "_terminations", "_truncations")


def sub_env_steps_apply(env: Any, *, infos: bool) -> bool:
    """Whether ``env``'s sub-envs may be stepped directly (:class:`SyncVectorStepper`).

    True for an exact ``gymnasium.vector.SyncVectorEnv`` (its type, not a subclass: a subclass
    may step otherwise) in ``DISABLED`` autoreset mode, holding the state the direct stepper
    keeps, when no ``info`` is read (``infos`` False: no info reader). There the direct loop
    gives what ``SyncVectorEnv.step`` and its masked ``reset`` give, minus the ``info`` dict.

    Examples:
        >>> import gymnasium as gym
        >>> from rl_envs.libs import GymEnv
        >>> sub_env_steps_apply(GymEnv("CartPole-v1", num_envs=2).env, infos=False)
        True
        >>> sub_env_steps_apply(gym.make_vec("CartPole-v1", num_envs=2), infos=False)
        False
    """
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    return (
        not infos
        and type(env) is SyncVectorEnv
        and env.metadata.get("autoreset_mode") == AutoresetMode.DISABLED
        and getattr(env, "autoreset_mode", None) == AutoresetMode.DISABLED
        and all(hasattr(env, name) for name in (*_SYNC_STATE, "_autoreset_envs"))
    )


def make_stepper(env: Any, encode: Encoder, *, vector: bool, infos: bool) -> GymNumpyStepper:
    """The stepper of a wrapper's gymnasium ``env``: a ``SyncVectorStepper`` where
    :func:`sub_env_steps_apply` holds, else a :class:`GymNumpyStepper`.

    Keyword Args:
        vector: ``env`` is a vector env.
        infos: the wrapper reads ``info`` entries (it has info readers).
    """
    if vector and sub_env_steps_apply(env, infos=infos):
        return SyncVectorStepper(env, encode)
    return GymNumpyStepper(env, encode, vector=vector)


__all__ = ["SyncVectorStepper", "make_stepper", "sub_env_steps_apply"]
