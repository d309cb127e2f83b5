"""The ``rl-render`` command: render a policy checkpoint in an env to a video, GIF, frames,
arrays, JSON lines or a notebook."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, get_args

from rl_envs.render.config import (
    CameraLayout,
    EnvBackendName,
    ExplorationMode,
    RenderBackendName,
    RenderConfig,
    RenderFormat,
)


def _json_dict(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r} ({err})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser (one option per :class:`RenderConfig` field it sets)."""
    p = argparse.ArgumentParser(
        prog="rl-render",
        description="Roll out a policy in an env and write the frames as a video, GIF, PNGs, "
        "arrays, JSON lines or a notebook.",
    )
    p.add_argument("--env", default="CartPole-v1", help="gymnasium id or module:factory")
    p.add_argument("--policy", default=None, help="module:factory (default: random actions)")
    p.add_argument("--ckpt", default=None, help="checkpoint whose weights the policy loads")
    p.add_argument("--num-trajs", type=int, default=1)
    p.add_argument("--format", choices=get_args(RenderFormat), default="mp4")
    p.add_argument("--out", default=None, help="artifact path (default render.<format>)")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--camera-layout", choices=get_args(CameraLayout), default="single")
    p.add_argument("--stochastic", action="store_true", help="sample actions (not deterministic)")
    p.add_argument("--exploration-mode", choices=get_args(ExplorationMode), default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--render-backend", choices=get_args(RenderBackendName), default="auto")
    p.add_argument("--env-backend", choices=get_args(EnvBackendName), default="auto")
    p.add_argument("--env-kwargs", type=_json_dict, default={}, help="JSON object")
    p.add_argument("--policy-kwargs", type=_json_dict, default={}, help="JSON object")
    p.add_argument("--state-dict-key", default=None)
    p.add_argument("--no-strict-load", action="store_true")
    p.add_argument("--obs-key", default="observation", help="dotted nested key")
    p.add_argument("--action-key", default="action")
    p.add_argument("--reward-key", default="reward")
    p.add_argument("--pixel-key", default="pixels")
    p.add_argument("--from-pixels", action="store_true")
    p.add_argument("--pixels-only", action="store_true")
    p.add_argument("--render-mode", default=None)
    p.add_argument("--save-frames", action="store_true")
    p.add_argument("--frame-dir", default=None)
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--video-codec", default=None)
    p.add_argument("--dry-run", action="store_true", help="build env and policy, render nothing")
    return p


def config_from_args(args: argparse.Namespace) -> RenderConfig:
    """The :class:`RenderConfig` of parsed arguments.

    Raises:
        ValueError: a value :class:`RenderConfig` refuses.
    """
    return RenderConfig(
        ckpt=args.ckpt,
        policy=args.policy,
        env=args.env,
        num_trajs=args.num_trajs,
        format=args.format,
        out=args.out,
        max_steps=args.max_steps,
        fps=args.fps,
        camera_layout=args.camera_layout,
        deterministic=not args.stochastic,
        exploration_mode=args.exploration_mode,
        seed=args.seed,
        device=args.device,
        env_kwargs=args.env_kwargs,
        policy_kwargs=args.policy_kwargs,
        state_dict_key=args.state_dict_key,
        strict_load=not args.no_strict_load,
        obs_key=args.obs_key,
        action_key=args.action_key,
        reward_key=args.reward_key,
        pixel_key=args.pixel_key,
        from_pixels=args.from_pixels,
        pixels_only=args.pixels_only,
        render_backend=args.render_backend,
        env_backend=args.env_backend,
        render_mode=args.render_mode,
        save_frames=args.save_frames,
        frame_dir=args.frame_dir,
        overwrite=args.overwrite,
        video_codec=args.video_codec,
        dry_run=args.dry_run,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command; prints the written paths (or the error) and returns the exit code:
    0 on success, 2 for bad arguments or a failed render."""
    from rl_envs.render.run import render_policy

    parser = build_parser()
    args = parser.parse_args(None if argv is None else list(argv))
    try:
        result = render_policy(config_from_args(args))
    except (
        ValueError,
        TypeError,
        KeyError,
        FileNotFoundError,
        FileExistsError,
        ModuleNotFoundError,
    ) as err:
        print(f"rl-render: error: {err}", file=sys.stderr)
        return 2
    for path in result.frame_paths:
        print(path)
    summary = {k: v for k, v in result.metadata.items() if k != "trajectories"}
    print(json.dumps(summary, default=str), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
