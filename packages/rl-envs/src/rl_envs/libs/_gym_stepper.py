"""The gymnasium step rules on numpy rows, in one place for every path that steps a GymWrapper.

``GymWrapper._step``/``_reset``, its rollout without a policy (``_gym_rollout``), ``SerialEnv``'s
vector group (a ``GymWrapper`` over one ``SyncVectorEnv``) and the ``ParallelEnv`` workers'
direct path (``rl_envs.batched._worker_gym``) all step gymnasium through a
:class:`GymNumpyStepper`: it encodes (and checks) the action, steps the env, writes the
reward, ``terminated``, ``truncated`` and ``done = terminated | truncated`` into numpy rows,
and resets finished sub-envs (``reset_mask`` for a vector env, a full reset for a single one)
writing their reset observations into a row, after which the final observations are gone from
the env (callers that keep them read the row first).

:func:`runs_own_steps` tells whether a wrapper's class steps as ``GymWrapper`` does (no
override of its step, reset or seed methods), which every fast path that drives the gymnasium
env directly needs; :func:`numpy_rows_apply` decides which wrappers the numpy-row paths (the
rollout loop and the workers' direct path) may take: those whose outputs are one array
observation and the flags, and whose class steps as ``GymWrapper`` does.
:func:`sub_env_steps_apply` decides where a wrapper's stepper may step the sub-envs of its
``SyncVectorEnv`` directly (:func:`make_stepper` picks the stepper).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rl_core.keys import OBSERVATION
from rl_core.specs import Composite
from rl_envs.libs._gym_codecs import Encoder

if TYPE_CHECKING:
    from rl_envs.libs.gym import GymWrapper

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
        # this stepper from ``GymWrapper.numpy_stepper`` must then take the generic path.
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


# The state of a SyncVectorEnv that SyncVectorStepper reads and keeps (gymnasium >= 1.1).
_SYNC_STATE = ("envs", "_env_obs", "_observations", "_rewards", "_terminations", "_truncations")


def sub_env_steps_apply(env: Any, *, infos: bool) -> bool:
    """Whether ``env``'s sub-envs may be stepped directly (``_gym_sync_stepper``).

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
        from rl_envs.libs._gym_sync_stepper import SyncVectorStepper

        return SyncVectorStepper(env, encode)
    return GymNumpyStepper(env, encode, vector=vector)


def runs_own_steps(env: Any) -> bool:
    """Whether ``env`` is a :class:`GymWrapper` that steps, resets and seeds as GymWrapper does.

    False for other envs and for subclasses overriding a step, reset or seed method (``_step``,
    ``_reset``, ``_set_seed``, ``step``, ``reset``, ``step_and_maybe_reset``, ``set_seed``):
    a fast path that drives the gymnasium env directly would skip the override.

    Examples:
        >>> from rl_envs.libs import GymEnv
        >>> class Shaped(GymEnv):
        ...     def _step(self, tensordict):
        ...         return super()._step(tensordict)
        >>> runs_own_steps(GymEnv("CartPole-v1")), runs_own_steps(Shaped("CartPole-v1"))
        (True, False)
    """
    from rl_envs.libs.gym import GymWrapper

    if not isinstance(env, GymWrapper):
        return False
    kind = type(env)
    return all(
        getattr(kind, name) is getattr(GymWrapper, name)
        for name in (
            "_step",
            "_reset",
            "_set_seed",
            "step",
            "reset",
            "step_and_maybe_reset",
            "set_seed",
        )
    )


def numpy_rows_apply(wrapper: GymWrapper) -> bool:
    """Whether ``wrapper``'s steps are plain arrays that the numpy-row paths can move.

    True for wrappers that step as ``GymWrapper`` does (see ``runs_own_steps``), whose only
    observation entry is one ``Box`` or ``MultiBinary`` array (no pixels, no ``Dict``
    observation, no info entries) and whose action is one ``Box``, ``Discrete``,
    ``MultiDiscrete`` or ``MultiBinary`` space, on the CPU, in any autoreset mode but
    ``SAME_STEP``.
    """
    from gymnasium import spaces

    return runs_own_steps(wrapper) and not (
        wrapper.from_pixels
        or wrapper.autoreset_mode == "SameStep"
        or (wrapper.device is not None and wrapper.device.type != "cpu")
        or wrapper.info_dict_reader
        or not isinstance(wrapper.single_observation_space, spaces.Box | spaces.MultiBinary)
        or list(wrapper.observation_spec.keys()) != [OBSERVATION]
        or isinstance(wrapper.action_spec, Composite)
        or not isinstance(
            wrapper.single_action_space,
            spaces.Box | spaces.Discrete | spaces.MultiDiscrete | spaces.MultiBinary,
        )
    )


__all__ = [
    "Blocks",
    "GymNumpyStepper",
    "make_stepper",
    "numpy_rows_apply",
    "runs_own_steps",
    "sub_env_steps_apply",
]
