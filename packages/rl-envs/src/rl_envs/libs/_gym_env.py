"""GymEnv: a gymnasium env made by name (``gymnasium.make`` or ``make_vec``), wrapped."""

from __future__ import annotations

import functools
from typing import Any

import torch

from rl_envs.libs._gym_make import (
    check_frame_skip,
    frame_skip_wrapper,
    import_gymnasium,
    register_namespace,
)
from rl_envs.libs.gym import GymWrapper


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


__all__ = ["GymEnv"]
