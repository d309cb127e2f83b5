"""GymWrapper and GymEnv: gymnasium environments (single or vector) behind the EnvBase contract."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core._accel.td_access import build_tensordict
from rl_core.envs import EnvBase, StepPlan
from rl_core.keys import ACTION, DONE, TERMINATED, TRUNCATED
from rl_core.specs import Composite
from rl_envs._accel.seam import GymParts, GymStepPlan, register_gym_parts
from rl_envs.libs._gym_codecs import make_encoder, require
from rl_envs.libs._gym_info import InfoDictReader, default_info_dict_reader, with_info_entries
from rl_envs.libs._gym_make import (
    check_frame_skip,
    frame_skip_wrapper,
    import_gymnasium,
    register_namespace,
)
from rl_envs.libs._gym_observations import observation_layout
from rl_envs.libs._gym_specs import gym_space_to_spec
from rl_envs.libs._gym_sync_stepper import make_stepper
from rl_envs.libs._gym_vector import (
    SameStepResets,
    autoreset_mode,
    reset_mask,
    splice,
    with_final_observations,
    zeros_like_spec,
)


class GymWrapper(EnvBase):
    """Wraps a gymnasium env (``gymnasium.Env`` or ``gymnasium.vector.VectorEnv``) as an EnvBase.

    Specs follow the space mapping of :func:`rl_envs.libs.gym_space_to_spec`: a non-dict
    observation goes under ``"observation"``, the entries of a ``Dict`` observation at the root
    under their own keys; the action under ``"action"`` (the keys of a ``Dict`` action space at
    the root). The reward is float32 of shape ``(*batch, 1)``; ``terminated`` and ``truncated``
    are gymnasium's, ``done`` is their OR. A vector env has batch size ``(num_envs,)``.

    Vector envs: finished sub-envs are reset by rl-core's partial reset (the ``"_reset"``
    mask), whatever gymnasium's autoreset mode: ``DISABLED`` and ``NEXT_STEP`` envs are reset
    with ``reset(options={"reset_mask": ...})``; for ``SAME_STEP`` envs the step output holds
    the final observation (``info["final_obs"]``) and the reset observation is served by the
    next reset. No reset step shows up as a transition, and the final observation of every
    episode is the ``("next", ...)`` observation of its last step.

    Args:
        env: the gymnasium env; the wrapper owns it (``close`` closes it).

    Keyword Args:
        categorical_action_encoding: ``Discrete`` spaces become ``Categorical`` indices
            instead of ``OneHot`` vectors (``MultiDiscrete``: ``MultiCategorical`` instead of
            ``MultiOneHot``). Applies to observations too. Defaults to ``False``.
        from_pixels: add ``env.render()`` frames (uint8, ``(*batch, H, W, C)``) under
            ``"pixels"``; the env must render ``"rgb_array"``. Defaults to ``False``.
        pixels_only: with ``from_pixels``, drop the env's own observations. Defaults to
            ``True``.
        frame_skip: repeat every action this many times (stopping early at the end of an
            episode) and sum the rewards; single envs only (``GymEnv`` applies it inside each
            sub-env of a vector env). Defaults to ``None`` (no repeat).
        device: where the output tensors live. Defaults to ``None`` (the CPU).

    Raises:
        TypeError: ``env`` is not a gymnasium env, or a space has no spec counterpart.
        ValueError: ``from_pixels`` on an env that does not render ``"rgb_array"``, a bad
            ``frame_skip``, or ``frame_skip`` on a vector env.
        ImportError: gymnasium is not installed.

    Examples:
        >>> import gymnasium as gym
        >>> from rl_envs.libs import GymWrapper
        >>> env = GymWrapper(gym.make("Pendulum-v1"))
        >>> env.set_seed(0)
        1
        >>> traj = env.rollout(5)
        >>> traj["next", "observation"].shape, traj["action"].shape
        (torch.Size([5, 3]), torch.Size([5, 1]))
        >>> env.close()
    """

    def __init__(
        self,
        env: Any,
        *,
        categorical_action_encoding: bool = False,
        from_pixels: bool = False,
        pixels_only: bool = True,
        frame_skip: int | None = None,
        device: torch.device | str | int | None = None,
    ) -> None:
        who = type(self).__name__
        gym = import_gymnasium(who)
        vector = isinstance(env, gym.vector.VectorEnv)
        if not vector and not isinstance(env, gym.Env):
            raise TypeError(
                f"{who}: expected a gymnasium.Env or gymnasium.vector.VectorEnv, got "
                f"{type(env).__name__}. Build it with gymnasium.make(...) or use GymEnv(name)."
            )
        skip = check_frame_skip(frame_skip, who)
        if skip > 1:
            if vector:
                raise ValueError(
                    f"{who}: frame_skip is not supported on a vector env (its sub-envs step "
                    f"together). Use GymEnv(name, num_envs=..., frame_skip={skip}), which "
                    f"repeats actions inside every sub-env."
                )
            env = frame_skip_wrapper(env, skip)
        batch = (int(env.num_envs),) if vector else ()
        super().__init__(batch_size=batch, device=device)
        self.__dict__.update(
            _env=env,
            _vector=vector,
            _from_pixels=bool(from_pixels),
            _info_readers=[],
            _categorical=bool(categorical_action_encoding),
            # Outputs are built on the CPU (as ``device`` there) and moved to another device.
            _target_device=(
                self.device if self.device is not None and self.device.type != "cpu" else None
            ),
            _cpu_device=(
                self.device if self.device is not None and self.device.type == "cpu" else None
            ),
            _same_step=None,
        )
        if vector:
            mode = autoreset_mode(env)
            if mode == "SameStep":
                if from_pixels:
                    raise ValueError(
                        f"{who}: from_pixels needs a vector env whose autoreset mode is "
                        f"DISABLED or NEXT_STEP (in SAME_STEP the frame after an episode ends "
                        f"shows the reset state), got SAME_STEP."
                    )
                self.__dict__["_same_step"] = SameStepResets(self._read_final)
        self._set_observation_spec(bool(pixels_only))
        self._set_action_spec()

    # ------------------------------------------------------------------ construction
    @property
    def name(self) -> str:
        """The env as errors name it: the class and the gymnasium id, ``GymEnv(CartPole-v1)``."""
        spec = getattr(self._env, "spec", None)
        env_id = getattr(spec, "id", None) or type(self._env).__name__
        return f"{type(self).__name__}({env_id})"

    @property
    def env(self) -> Any:
        """The wrapped gymnasium env."""
        return self._env

    @property
    def from_pixels(self) -> bool:
        """Whether steps carry ``env.render()`` frames under ``"pixels"``."""
        return self._from_pixels

    @property
    def autoreset_mode(self) -> str | None:
        """The vector env's gymnasium autoreset mode (``"NextStep"``, ``"SameStep"`` or
        ``"Disabled"``); ``None`` for a single env."""
        return autoreset_mode(self._env) if self._vector else None

    @property
    def single_observation_space(self) -> Any:
        """The gymnasium observation space of one (sub-)env.

        Examples:
            >>> from rl_envs.libs import GymEnv
            >>> GymEnv("CartPole-v1", num_envs=2).single_observation_space.shape
            (4,)
        """
        return self._space("observation_space")

    @property
    def single_action_space(self) -> Any:
        """The gymnasium action space of one (sub-)env."""
        return self._space("action_space")

    def _space(self, name: str) -> Any:
        env = self._env
        return getattr(env, f"single_{name}") if self._vector else getattr(env, name)

    def _set_observation_spec(self, pixels_only: bool) -> None:
        layout = observation_layout(
            self._env,
            self._space("observation_space"),
            tuple(self.batch_size),
            vector=self._vector,
            categorical=self._categorical,
            from_pixels=self._from_pixels,
            pixels_only=pixels_only,
            same_step=self._same_step is not None,
            who=type(self).__name__,
        )
        self.__dict__.update(
            _rows=layout.rows,
            _reset_rows=layout.reset_rows,
            _observations=layout.read,
            _step_observations=layout.read_step,
            _decode_single=layout.decode_single,
            # The rows hold every step output (no info readers aside): steps write into them.
            _rows_only=layout.rows.observation is not None
            and layout.read_step is None
            and self._same_step is None,
        )
        self.observation_spec = Composite(layout.entries, shape=self.batch_size)

    def _set_action_spec(self) -> None:
        batch = tuple(self.batch_size)
        space = self._space("action_space")
        spec = gym_space_to_spec(
            space, batch_size=batch, categorical_action_encoding=self._categorical
        )
        self.action_spec = spec
        who = self.name
        encode = make_encoder(space, spec, batch, who=who)
        self.__dict__["_stepper"] = make_stepper(
            self._env, encode, vector=self._vector, infos=bool(self._info_readers)
        )
        if isinstance(spec, Composite):
            self.__dict__["_read_action"] = lambda td: td  # the encoder reads each entry
        else:
            self.__dict__["_read_action"] = lambda td: require(td, ACTION, who)

    # ------------------------------------------------------------------ info reader
    @property
    def info_dict_reader(self) -> list[Callable[[dict, TensorDictBase], TensorDictBase]]:
        """The readers that copy ``info`` entries into every step and reset output."""
        return self._info_readers

    def set_info_dict_reader(
        self, info_dict_reader: InfoDictReader | None = None, ignore_private: bool = True
    ) -> GymWrapper:
        """Adds a reader of ``info`` entries; its entries join the observation spec.

        When the reader does not know its specs yet, they are inferred from the ``info`` of a
        reset of the gymnasium env (so attach readers before resetting the wrapper).

        Args:
            info_dict_reader: an :class:`InfoDictReader` (or any callable
                ``reader(info, tensordict) -> tensordict`` with an ``info_spec`` Composite
                describing one sub-env). ``None`` reads every numeric entry.
            ignore_private: with ``info_dict_reader=None``, skip keys starting with ``"_"``.

        Returns:
            The env itself.

        Raises:
            TypeError: the reader has no specs and cannot infer them.
            ValueError: an entry of the reader clashes with an observation entry.

        Examples:
            >>> import gymnasium as gym
            >>> import torch
            >>> from rl_core.specs import Unbounded
            >>> from rl_envs.libs import GymWrapper, default_info_dict_reader
            >>> env = GymWrapper(gym.make("CartPole-v1"))
            >>> reader = default_info_dict_reader(["steps"], spec=[Unbounded(shape=(), dtype=torch.int64)])
            >>> env = env.set_info_dict_reader(reader)
            >>> env.rollout(3)["next", "steps"].shape
            torch.Size([3])
        """
        if info_dict_reader is None:
            info_dict_reader = default_info_dict_reader(ignore_private=ignore_private)
        self.observation_spec = with_info_entries(
            self.observation_spec,
            info_dict_reader,
            self._reset_info,
            f"{type(self).__name__}.set_info_dict_reader",
        )
        self._info_readers.append(info_dict_reader)
        # Steps now carry info entries: the numpy-row paths holding the stepper stop.
        stepper = self._stepper
        stepper.retired = True
        self.__dict__["_stepper"] = make_stepper(
            stepper.env, stepper.encode, vector=stepper.vector, infos=True
        )
        return self

    def _reset_info(self) -> dict[str, Any]:
        """The ``info`` of a reset of the gymnasium env (to infer a reader's specs from)."""
        _, info = self._env.reset()
        if self._same_step is not None:
            self._same_step.clear()
        return info

    # ------------------------------------------------------------------ reading outputs
    def _read_info(self, info: dict[str, Any], td: TensorDictBase) -> TensorDictBase:
        for reader in self._info_readers:
            td = reader(info, td)
        return td

    def _read_final(
        self, out: TensorDictBase, finished: np.ndarray, final_obs: Any, final_info: dict
    ) -> TensorDictBase:
        """SAME_STEP: ``out`` with the final observations and infos of the finished sub-envs."""
        final = with_final_observations(out, finished, final_obs, self._decode_single)
        if self._info_readers:
            infos = self._read_info(final_info, TensorDict(batch_size=self.batch_size))
            final = splice(finished, infos, final)
        return final

    # ------------------------------------------------------------------ EnvBase contract
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        stepper = self._stepper
        obs, reward, terminated, truncated, info = stepper.step(self._read_action(tensordict))
        out = self._rows.write(stepper, obs, reward, terminated, truncated)
        read = self._step_observations
        if read is not None:
            out.update(read(obs))
        td = build_tensordict(out, self.batch_size, self._cpu_device)
        if self._info_readers:
            td = self._read_info(info, td)
        if self._same_step is not None:
            td = self._same_step.after_step(td, info, self.observation_keys)
        target = self._target_device
        return td if target is None else td.to(target, non_blocking=True)

    def _reset(
        self,
        tensordict: TensorDictBase | None = None,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> TensorDictBase:
        mask = reset_mask(tensordict, self.batch_size[0]) if self._vector else None
        if mask is None or bool(mask.all()):
            if self._same_step is not None:
                self._same_step.clear()
            obs, info = self._stepper.reset(seed=seed, options=options)
            return self._reset_output(obs, info)
        if not bool(mask.any()):
            return zeros_like_spec(self.full_observation_spec, self.batch_size)
        kept = None
        served = mask
        if self._same_step is not None:
            kept, mask = self._same_step.take(mask)
            served = served & ~mask
            if not bool(mask.any()):
                return kept
        obs, info = self._stepper.reset(mask, seed=seed, options=options)
        fresh = self._reset_output(obs, info)
        return fresh if kept is None else splice(served, kept, fresh)

    def _reset_output(self, obs: Any, info: dict[str, Any]) -> TensorDictBase:
        out = self._observations(obs)
        out[DONE], out[TERMINATED], out[TRUNCATED] = self._reset_flags()
        td = build_tensordict(out, self.batch_size, self._cpu_device)
        if self._info_readers:
            td = self._read_info(info, td)
        target = self._target_device
        return td if target is None else td.to(target, non_blocking=True)

    def _reset_flags(self) -> tuple[torch.Tensor, ...]:
        """``done``, ``terminated``, ``truncated`` of a reset: new all-False tensors."""
        return torch.zeros((3, *self.batch_size, 1), dtype=torch.bool).unbind(0)

    def _set_seed(self, seed: int | None) -> None:
        if seed is None:
            return
        self._env.reset(seed=seed)
        if self._same_step is not None:
            self._same_step.clear()

    def _make_step_plan(self) -> StepPlan:
        """The routes on numpy rows (``rl_envs._accel``): see :class:`~rl_core.envs.StepPlan`."""
        return GymStepPlan(self)

    def close(self) -> None:
        """Closes the gymnasium env; calling it twice is harmless."""
        if not self.is_closed:
            self._env.close()
        super().close()


class GymEnv(GymWrapper):
    """A gymnasium env made by name: ``gymnasium.make``, or a vector env with ``num_envs > 0``.

    With ``num_envs > 0`` the env is ``gymnasium.make_vec(env_name, num_envs, ...)`` with
    autoreset DISABLED: rl-core resets the sub-envs that finish (see :class:`GymWrapper`), so
    trajectories never hold a reset step and keep every final observation. ``ALE/...`` ids
    register ale-py's Atari games first.

    Args:
        env_name: the gymnasium id, e.g. ``"CartPole-v1"``.

    Keyword Args:
        num_envs: ``0`` for one env (batch size ``()``); ``n > 0`` for a vector env of ``n``
            sub-envs (batch size ``(n,)``). Defaults to ``0``.
        from_pixels: add rendered frames under ``"pixels"`` (the env is made with
            ``render_mode="rgb_array"``). Defaults to ``False``.
        pixels_only: with ``from_pixels``, drop the state observations. Defaults to ``True``.
        frame_skip: repeat every action this many times, summing rewards (inside each
            sub-env of a vector env). Defaults to ``None``.
        device: where the output tensors live. Defaults to ``None`` (the CPU).
        categorical_action_encoding: ``Categorical`` instead of ``OneHot`` for ``Discrete``
            spaces. Defaults to ``False``.
        vectorization_mode: ``"sync"`` (``SyncVectorEnv``, one process) or ``"async"``
            (``AsyncVectorEnv``, one process per sub-env) when ``num_envs > 0``. Defaults to
            ``"sync"``.
        **make_kwargs: passed to ``gymnasium.make`` (to ``make_vec`` for vector envs, where
            ``vector_kwargs`` may set another ``autoreset_mode``).

    Raises:
        ImportError: gymnasium (or ale-py for ``ALE/`` ids) is not installed.
        ValueError: ``num_envs`` is negative or ``vectorization_mode`` is unknown.

    Examples:
        >>> from rl_envs.libs import GymEnv
        >>> env = GymEnv("CartPole-v1")
        >>> env.set_seed(0)
        1
        >>> traj = env.rollout(100, break_when_any_done=False)
        >>> traj.batch_size, traj["action"].shape
        (torch.Size([100]), torch.Size([100, 2]))
        >>> venv = GymEnv("CartPole-v1", num_envs=4, categorical_action_encoding=True)
        >>> venv.rollout(10, break_when_any_done=False)["next", "observation"].shape
        torch.Size([4, 10, 4])
        >>> venv.close()
    """

    def __init__(
        self,
        env_name: str,
        *,
        num_envs: int = 0,
        from_pixels: bool = False,
        pixels_only: bool = True,
        frame_skip: int | None = None,
        device: torch.device | str | int | None = None,
        categorical_action_encoding: bool = False,
        vectorization_mode: str = "sync",
        **make_kwargs: Any,
    ) -> None:
        who = type(self).__name__
        if "num_workers" in make_kwargs:
            raise TypeError(
                f"{who}: num_workers={make_kwargs['num_workers']!r} is not taken: TorchRL's "
                f"constructor returns a ParallelEnv for it, a constructor here returns its own "
                f"type. Write ParallelEnv(n, lambda: {who}({env_name!r}, ...)) (rl_envs), or "
                f"num_envs=n for one gymnasium vector env."
            )
        gym = import_gymnasium(who)
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 0:
            raise ValueError(
                f"{who}: expected num_envs to be an int >= 0 (0 for a single env), got "
                f"{num_envs!r}."
            )
        if vectorization_mode not in ("sync", "async"):
            raise ValueError(
                f"{who}: expected vectorization_mode 'sync' or 'async', got {vectorization_mode!r}."
            )
        skip = check_frame_skip(frame_skip, who)
        register_namespace(gym, env_name)
        if from_pixels:
            make_kwargs.setdefault("render_mode", "rgb_array")
        if num_envs == 0:
            env = gym.make(env_name, **make_kwargs)
        else:
            vector_kwargs = dict(make_kwargs.pop("vector_kwargs", None) or {})
            vector_kwargs.setdefault("autoreset_mode", gym.vector.AutoresetMode.DISABLED)
            wrappers = [functools.partial(frame_skip_wrapper, skip=skip)] if skip > 1 else None
            env = gym.make_vec(
                env_name,
                num_envs=num_envs,
                vectorization_mode=vectorization_mode,
                vector_kwargs=vector_kwargs,
                wrappers=wrappers,
                **make_kwargs,
            )
            skip = 1
        self.__dict__["env_name"] = env_name
        try:
            super().__init__(
                env,
                categorical_action_encoding=categorical_action_encoding,
                from_pixels=from_pixels,
                pixels_only=pixels_only,
                frame_skip=skip if skip > 1 else None,
                device=device,
            )
        except BaseException:
            env.close()
            raise


# The numpy-row paths of the speed folder drive GymWrapper's gymnasium env directly and encode
# actions as it does: they get the class and the encoder factory from here.
register_gym_parts(GymParts(wrapper=GymWrapper, make_encoder=make_encoder))

__all__ = ["GymEnv", "GymWrapper"]
