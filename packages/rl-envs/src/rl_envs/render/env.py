"""The env a render run steps: built from a factory or a gymnasium id, seeded, step-limited."""

from __future__ import annotations

from typing import Any

import torch

from rl_core import EnvBase, StepCounter, TransformedEnv
from rl_envs.render.config import RenderConfig, RenderEnvSpec
from rl_envs.render.loading import call_with_supported_kwargs, import_from_string


def _gym_env(name: str, spec: RenderEnvSpec) -> EnvBase:
    from rl_envs.libs.gym import GymEnv

    kwargs = dict(spec.env_kwargs)
    if spec.from_pixels:
        kwargs.update(from_pixels=True, pixels_only=spec.pixels_only)
    else:
        kwargs.setdefault("render_mode", spec.render_mode or "rgb_array")
    return GymEnv(name, device=spec.device, **kwargs)


def make_render_env(config: RenderConfig, checkpoint: Any | None = None) -> Any:
    """The env of ``config``: its ``env`` callable (or ``"module:object"``) called with the
    fields of :class:`RenderEnvSpec` it names (``device``, ``seed``, ``from_pixels``, ...,
    plus ``env_kwargs``), or a gymnasium id made with ``GymEnv`` (``render_mode="rgb_array"``
    so ``env.render()`` gives frames, or ``from_pixels``); then :func:`normalize_env`.

    Raises:
        TypeError: the factory returned something that is not an rl-core env.
    """
    spec = RenderEnvSpec.from_config(config, checkpoint)
    source = config.env
    if isinstance(source, str) and ":" not in source:
        env = _gym_env(source, spec)
    else:
        factory = import_from_string(source) if isinstance(source, str) else source
        offered = {
            "device": spec.device,
            "seed": spec.seed,
            "max_steps": spec.max_steps,
            "from_pixels": spec.from_pixels,
            "pixels_only": spec.pixels_only,
            "render_mode": spec.render_mode,
            "checkpoint": checkpoint,
            "config": config,
            **spec.env_kwargs,
        }
        env = call_with_supported_kwargs(factory, spec, offered)
    return normalize_env(env, config)


def normalize_env(env: Any, config: RenderConfig) -> Any:
    """``env`` checked to be an rl-core env, seeded (:func:`seed_env`) and, with
    ``max_steps``, wrapped in a step counter (:func:`add_step_counter`).

    Raises:
        TypeError: ``env`` is not an rl-core ``EnvBase``.
    """
    if not isinstance(env, EnvBase):
        raise TypeError(
            f"make_render_env: expected the env factory to return an rl-core EnvBase (wrap a "
            f"gymnasium env in rl_envs.GymWrapper), got {type(env).__name__}."
        )
    seed_env(env, config.seed)
    if config.max_steps is not None:
        env = add_step_counter(env, config.max_steps)
    return env


def add_step_counter(env: Any, max_steps: int) -> Any:
    """``env`` truncated after ``max_steps`` steps (a ``TransformedEnv`` with a ``StepCounter``).

    Raises:
        ValueError: ``max_steps < 1``.
    """
    if max_steps < 1:
        raise ValueError(f"add_step_counter: expected max_steps >= 1, got {max_steps}.")
    return TransformedEnv(env, StepCounter(max_steps=max_steps))


def seed_env(env: Any, seed: int | None) -> None:
    """Seeds torch and the env (``env.set_seed``) with ``seed``; None leaves both as they are."""
    if seed is None:
        return
    torch.manual_seed(seed)
    set_seed = getattr(env, "set_seed", None)
    if callable(set_seed):
        set_seed(seed)
