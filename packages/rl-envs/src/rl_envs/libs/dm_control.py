"""DMControlWrapper and DMControlEnv: DeepMind Control Suite tasks behind the EnvBase contract."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, PIXELS, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Bounded, Composite
from rl_envs.libs._dm_env_specs import dm_env_spec_to_spec, to_tensor
from rl_envs.libs._gym_make import check_frame_skip

_INSTALL = 'pip install "rl-envs[dm-control]"'
_DEFAULT_RENDER = {"camera_id": 0}


def _import_dm_control(who: str) -> Any:
    try:
        import dm_control.rl.control as control
    except ImportError as err:
        raise ImportError(f"{who} needs dm_control: {_INSTALL}") from err
    return control


def _physics_error(err: AttributeError, who: str) -> RuntimeError:
    """dm_control's physics bindings failing on the installed mujoco (a version mismatch)."""
    import mujoco

    return RuntimeError(
        f"{who}: dm_control could not bind the physics of the installed mujoco "
        f"{mujoco.__version__} ({err}). dm_control releases follow one mujoco version: install "
        f"the mujoco its release names (dm-control 1.0.50 needs mujoco 3.17: pip install "
        f'"mujoco>=3.17,<4").'
    )


class DMControlWrapper(EnvBase):
    """Wraps a DeepMind Control Suite env (``dm_control.rl.control.Environment``).

    Specs come from the dm_env specs of the env: every entry of the observation dict under its
    own key (``"position"``, ``"velocity"``, ...; scalars shaped ``(1,)``), the action under
    ``"action"`` (``Bounded``), the reward ``(1,)``, all in the dtype dm_control gives
    (float64: add ``DoubleToFloat`` for float32 policies). An episode ends at the dm_env
    ``LAST`` step: ``terminated`` when its discount is 0 (the task ended it), else
    ``truncated`` (the time limit of the suite tasks).

    Pixels: with ``from_pixels``, ``physics.render(**render_kwargs)`` frames (uint8
    ``(H, W, 3)``) go under ``"pixels"``. Rendering without a display needs ``MUJOCO_GL=egl``
    (or ``osmesa`` where libOSMesa is installed) set before dm_control is first imported;
    on a CPU-only machine Mesa's EGL renders in software.

    Seeding: ``set_seed(seed)`` gives the task a new ``numpy.random.RandomState(seed)`` (the
    source of its initial states and of any noise in its steps) and resets the env, as
    TorchRL's does: that reset draws the first initial state, so the next ``reset`` gives the
    second one (``DMControlEnv(..., seed=s)`` does the same at construction).

    Args:
        env: the dm_control env; the wrapper owns it (``close`` closes it).

    Keyword Args:
        from_pixels: add rendered frames under ``"pixels"``. Defaults to ``False``.
        pixels_only: with ``from_pixels``, drop the state observations. Defaults to ``True``.
        frame_skip: repeat every action this many times (stopping at the end of the episode)
            and sum the rewards. Defaults to ``None`` (no repeat).
        render_kwargs: passed to ``physics.render`` (``height``, ``width``, ``camera_id``).
            Defaults to ``{"camera_id": 0}`` (240 x 320 frames).
        device: where the output tensors live. Defaults to ``None`` (the CPU).

    Raises:
        ImportError: dm_control is not installed.
        TypeError: ``env`` is not a dm_control env.
        RuntimeError: rendering fails (``from_pixels`` without a working ``MUJOCO_GL``).

    Examples:
        >>> from dm_control import suite
        >>> from rl_envs.libs import DMControlWrapper
        >>> env = DMControlWrapper(suite.load("cartpole", "balance"))
        >>> env.set_seed(0)
        1
        >>> traj = env.rollout(5)
        >>> traj["next", "position"].shape, traj["action"].shape
        (torch.Size([5, 3]), torch.Size([5, 1]))
    """

    def __init__(
        self,
        env: Any,
        *,
        from_pixels: bool = False,
        pixels_only: bool = True,
        frame_skip: int | None = None,
        render_kwargs: Mapping[str, Any] | None = None,
        device: torch.device | str | int | None = None,
    ) -> None:
        who = type(self).__name__
        control = _import_dm_control(who)
        if not isinstance(env, control.Environment):
            raise TypeError(
                f"{who}: expected a dm_control.rl.control.Environment, got {type(env).__name__}. "
                f"Build one with dm_control.suite.load(domain, task) or use DMControlEnv."
            )
        super().__init__(batch_size=(), device=device)
        self._env = env
        self.from_pixels = bool(from_pixels)
        self.pixels_only = bool(pixels_only)
        self.frame_skip = check_frame_skip(frame_skip, who)
        self.render_kwargs = dict(_DEFAULT_RENDER if render_kwargs is None else render_kwargs)
        self._make_specs(who)

    @property
    def env(self) -> Any:
        """The wrapped dm_control env."""
        return self._env

    # ------------------------------------------------------------------ specs
    def _make_specs(self, who: str) -> None:
        observation = Composite()
        self._state_keys: list[tuple[str, tuple[int, ...], torch.dtype]] = []
        if not (self.from_pixels and self.pixels_only):
            for key, spec in self._env.observation_spec().items():
                if key == PIXELS and self.from_pixels:
                    raise ValueError(
                        f"{who}: the task has a 'pixels' observation of its own; pass "
                        f"from_pixels=False or pixels_only=True."
                    )
                converted = dm_env_spec_to_spec(spec, who, key)
                observation[key] = converted
                self._state_keys.append((key, tuple(converted.shape), converted.dtype))
        if self.from_pixels:
            frame = self._render(who)
            observation[PIXELS] = Bounded(0, 255, shape=frame.shape, dtype=torch.uint8)
        self.observation_spec = observation
        self.action_spec = dm_env_spec_to_spec(self._env.action_spec(), who, ACTION)
        reward = self._env.reward_spec()
        self._reward_dtype = dm_env_spec_to_spec(reward, who, REWARD).dtype
        self.reward_spec = dm_env_spec_to_spec(reward, who, REWARD)
        self._action_shape = tuple(self._env.action_spec().shape)

    def _render(self, who: str) -> torch.Tensor:
        try:
            frame = self._env.physics.render(**self.render_kwargs)
        except Exception as err:
            gl = os.environ.get("MUJOCO_GL")
            raise RuntimeError(
                f"{who}: from_pixels could not render ({type(err).__name__}: {err}) with "
                f"MUJOCO_GL={gl!r}. Headless rendering needs MUJOCO_GL=egl (EGL, software "
                f"rendering through Mesa on a CPU machine) or MUJOCO_GL=osmesa (needs "
                f"libOSMesa), set before dm_control is imported; or pass from_pixels=False."
            ) from err
        return torch.from_numpy(np.ascontiguousarray(frame))

    # ------------------------------------------------------------------ EnvBase contract
    def _set_seed(self, seed: int | None) -> None:
        """Seeds the task's RandomState and resets the env, as TorchRL's ``set_seed`` does
        (so the reset after ``set_seed(s)`` shows the task's second initial state from
        ``RandomState(s)``, as in TorchRL)."""
        if seed is not None:
            # The suite task draws initial states (and any noise) from this RandomState.
            self._env.task._random = np.random.RandomState(seed)
            self.reset()

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        timestep = self._env.reset()
        return TensorDict(
            self._observations(timestep.observation), batch_size=(), device=self.device
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get(ACTION).detach().cpu().numpy().reshape(self._action_shape)
        reward = 0.0
        for _ in range(self.frame_skip):
            timestep = self._env.step(action)
            reward += float(timestep.reward or 0.0)
            if timestep.last():
                break
        last = timestep.last()
        terminated = last and timestep.discount == 0
        out = self._observations(timestep.observation)
        out[REWARD] = torch.tensor([reward], dtype=self._reward_dtype)
        out[TERMINATED] = torch.tensor([terminated])
        out[TRUNCATED] = torch.tensor([last and not terminated])
        return TensorDict(out, batch_size=(), device=self.device)

    def _observations(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {
            key: to_tensor(observation[key], shape, dtype) for key, shape, dtype in self._state_keys
        }
        if self.from_pixels:
            out[PIXELS] = self._render(type(self).__name__)
        return out

    def close(self) -> None:
        """Closes the dm_control env (once)."""
        if not self.is_closed:
            self._env.close()
        super().close()


class DMControlEnv(DMControlWrapper):
    """Loads a Control Suite task (``dm_control.suite.load``) and wraps it.

    See :class:`DMControlWrapper` for the specs, done flags, pixels and seeding.

    Args:
        env_name: the domain (``"cartpole"``, ``"cheetah"``, ``"walker"``, ...).
        task_name: the task of the domain (``"swingup"``, ``"run"``, ``"walk"``, ...).

    Keyword Args:
        from_pixels, pixels_only, frame_skip, render_kwargs, device: as in
            :class:`DMControlWrapper`.
        seed: seed of the task's random state. Defaults to ``None`` (dm_control's own).
        **task_kwargs: passed to the task (``time_limit=...``).

    Raises:
        ImportError: dm_control is not installed.
        ValueError: an unknown domain or task.
        RuntimeError: dm_control does not run on the installed mujoco (version mismatch).

    Examples:
        >>> from rl_envs.libs import DMControlEnv
        >>> env = DMControlEnv("cheetah", "run", seed=0)
        >>> sorted(env.observation_spec.keys())
        ['position', 'velocity']
        >>> env.rollout(3)["next", "reward"].dtype
        torch.float64
    """

    def __init__(
        self,
        env_name: str,
        task_name: str,
        *,
        from_pixels: bool = False,
        pixels_only: bool = True,
        frame_skip: int | None = None,
        render_kwargs: Mapping[str, Any] | None = None,
        device: torch.device | str | int | None = None,
        seed: int | None = None,
        **task_kwargs: Any,
    ) -> None:
        who = type(self).__name__
        if "num_workers" in task_kwargs:
            raise TypeError(
                f"{who}: num_workers={task_kwargs['num_workers']!r} is not taken: TorchRL's "
                f"constructor returns a ParallelEnv for it, a constructor here returns its own "
                f"type. Write ParallelEnv(n, lambda: {who}({env_name!r}, {task_name!r})) "
                f"(rl_envs)."
            )
        _import_dm_control(who)
        from dm_control import suite

        if (env_name, task_name) not in suite.ALL_TASKS:
            domains = sorted({d for d, _ in suite.ALL_TASKS})
            tasks = sorted(t for d, t in suite.ALL_TASKS if d == env_name)
            hint = f"tasks of {env_name!r}: {tasks}" if tasks else f"domains: {domains}"
            raise ValueError(f"{who}: unknown task ({env_name!r}, {task_name!r}); {hint}.")
        kwargs = dict(task_kwargs)
        if seed is not None:
            kwargs["random"] = seed
        try:
            env = suite.load(env_name, task_name, task_kwargs=kwargs)
        except AttributeError as err:
            raise _physics_error(err, who) from err
        super().__init__(
            env,
            from_pixels=from_pixels,
            pixels_only=pixels_only,
            frame_skip=frame_skip,
            render_kwargs=render_kwargs,
            device=device,
        )
        self.env_name = env_name
        self.task_name = task_name
        if seed is not None:  # as TorchRL: the seeded task is reset once at construction
            self.set_seed(seed)

    @staticmethod
    def available_envs() -> list[tuple[str, str]]:
        """The ``(domain, task)`` pairs of the Control Suite (``dm_control.suite.ALL_TASKS``)."""
        _import_dm_control("DMControlEnv")
        from dm_control import suite

        return list(suite.ALL_TASKS)


__all__ = ["DMControlEnv", "DMControlWrapper"]
