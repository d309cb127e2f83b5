"""Rollouts of a policy with the frames of every step."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import set_exploration_type, step_mdp
from rl_envs.render.backends import select_backend
from rl_envs.render.config import FrameBundle, RenderConfig, RenderResult, key_to_string

#: Steps of a rollout without ``max_steps`` that never ends.
_STEP_LIMIT = 10_000


def _exploration(config: RenderConfig) -> str:
    if config.exploration_mode is not None:
        return config.exploration_mode
    return "deterministic" if config.deterministic else "random"


def collect_render_rollouts(env: Any, policy: Any, config: RenderConfig) -> RenderResult:
    """``config.num_trajs`` rollouts of ``policy`` (None: random actions) in ``env``, each
    until done or ``config.max_steps`` steps, with the frames of the reset state and of every
    step (from the backend :func:`~rl_envs.render.backends.select_backend` picks).

    Returns:
        A :class:`RenderResult` without an artifact: ``trajectories`` (one ``[T]`` TensorDict
        of transitions each), ``frames`` (``T + 1`` :class:`FrameBundle` per trajectory, or
        none with the null backend), and ``metadata`` (steps and return of each trajectory,
        backend, exploration, fps).

    Raises:
        ValueError: an env with a batch size (render one env: ``batch_size=()``).
    """
    if tuple(env.batch_size) != ():
        raise ValueError(
            f"collect_render_rollouts: expected an unbatched env (batch_size=()), got "
            f"{tuple(env.batch_size)}; render one env of the batch."
        )
    backend = select_backend(env, config)
    limit = config.max_steps or _STEP_LIMIT
    trajectories: list[TensorDictBase] = []
    all_frames: list[list[FrameBundle]] = []
    summaries: list[dict[str, Any]] = []
    try:
        with set_exploration_type(_exploration(config)), torch.no_grad():
            for index in range(config.num_trajs):
                td = env.reset()
                frames = []
                first = backend.capture(env, td, config, step=0, trajectory_index=index)
                if first is not None:
                    frames.append(first)
                steps = []
                for t in range(limit):
                    td = policy(td) if policy is not None else env.rand_action(td)
                    td = env.step(td)
                    steps.append(td.clone())
                    td = step_mdp(td)
                    bundle = backend.capture(env, td, config, step=t + 1, trajectory_index=index)
                    if bundle is not None:
                        frames.append(bundle)
                    if bool(steps[-1].get(("next", "done")).any()):
                        break
                trajectory = torch.stack(steps)
                reward = trajectory.get(("next", config.reward_key), None)
                summaries.append(
                    {
                        "index": index,
                        "steps": len(steps),
                        "return": None if reward is None else float(reward.sum()),
                        "done": bool(trajectory.get(("next", "done"))[-1].any()),
                    }
                )
                trajectories.append(trajectory)
                all_frames.append(frames)
    finally:
        backend.close()
    metadata = {
        "num_trajs": len(trajectories),
        "max_steps": config.max_steps,
        "fps": config.fps,
        "render_backend": type(backend).__name__,
        "exploration": _exploration(config),
        "reward_key": key_to_string(config.reward_key),
        "trajectories": summaries,
    }
    return RenderResult(None, trajectories, [], metadata, [], all_frames)
