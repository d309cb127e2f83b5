"""render_policy: load, roll out, write, in one call."""

from __future__ import annotations

import torch

from rl_envs.render.artifacts import write_render_artifact
from rl_envs.render.config import RenderConfig, RenderResult
from rl_envs.render.env import make_render_env
from rl_envs.render.loading import checkpoint_hash, load_checkpoint
from rl_envs.render.policy import load_render_policy
from rl_envs.render.rollout import collect_render_rollouts


def render_policy(config: RenderConfig) -> RenderResult:
    """Renders a policy as ``config`` says and writes the artifact.

    Loads the checkpoint (``config.ckpt``, if any, with its SHA-256), builds the env
    (:func:`~rl_envs.render.make_render_env`) and the policy
    (:func:`~rl_envs.render.load_render_policy`), collects the rollouts
    (:func:`~rl_envs.render.collect_render_rollouts`) and writes them
    (:func:`~rl_envs.render.write_render_artifact`); the env is closed at the end. With
    ``dry_run`` nothing is rolled out or written.

    Returns:
        The :class:`RenderResult`; ``metadata["checkpoint"]`` holds the checkpoint's path
        and hash.
    """
    checkpoint = digest = None
    if config.ckpt is not None:
        checkpoint = load_checkpoint(config.ckpt, map_location=torch.device(config.device))
        digest = checkpoint_hash(config.ckpt)
    env = make_render_env(config, checkpoint=checkpoint)
    try:
        policy = load_render_policy(config, env, checkpoint=checkpoint, checkpoint_digest=digest)
        if config.dry_run:
            return RenderResult(None, [], [], {"dry_run": True, "num_trajs": 0}, [])
        result = collect_render_rollouts(env, policy, config)
        if config.ckpt is not None:
            result.metadata["checkpoint"] = {"path": str(config.ckpt), "sha256": digest}
        return write_render_artifact(result, config)
    finally:
        close = getattr(env, "close", None)
        if callable(close):
            close()
