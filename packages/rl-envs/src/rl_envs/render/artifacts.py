"""Writing a render run's artifact: a video, a GIF, PNG frames, arrays, JSON lines or a notebook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from rl_envs.render.config import FrameBundle, RenderConfig, RenderResult
from rl_envs.render.video import compose_frame_grid, encode_gif, encode_video, write_png


def _images(bundles: list[FrameBundle], config: RenderConfig, camera: str | None) -> list[Any]:
    """One image per step: one camera's, or all cameras laid out by ``camera_layout``."""
    if camera is not None:
        return [bundle.frames[camera] for bundle in bundles]
    layout = "grid" if config.camera_layout == "separate" else config.camera_layout
    return [compose_frame_grid(list(bundle.frames.values()), layout) for bundle in bundles]


def _cameras(result: RenderResult) -> list[str]:
    for bundles in result.frames:
        if bundles:
            return list(bundles[0].frames)
    return []


def _target(path: Path, overwrite: bool) -> Path:
    if path.exists() and not overwrite:
        raise FileExistsError(
            f"write_render_artifact: {str(path)!r} exists; pass overwrite=True (--overwrite) "
            f"or another out path."
        )
    return path


def _jsonable(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def write_render_artifact(result: RenderResult, config: RenderConfig) -> RenderResult:
    """Writes ``result`` as ``config.format`` at ``config.out_path`` and returns it with
    ``artifact_path`` and ``frame_paths`` set.

    ``mp4``/``gif``: the trajectories' frames one after the other (several cameras laid out
    by ``camera_layout``; ``"separate"`` writes one file per camera, ``<stem>_<camera>``);
    ``frames``: a folder of ``traj<i>_step<t>[_<camera>].png``; ``npz``: ``frames_<i>``
    (``[T + 1, H, W, 3]``) and ``reward_<i>`` arrays; ``jsonl``: one line per trajectory
    (metadata, actions, rewards); ``ipynb``: a notebook showing each trajectory as a GIF.
    With ``save_frames`` every frame is also written as a PNG under ``frame_dir``.

    Raises:
        ValueError: a format that needs frames (mp4, gif, frames, ipynb) without any.
        FileExistsError: the artifact exists and ``overwrite`` is False.
    """
    out = _target(config.out_path, config.overwrite)
    cameras = _cameras(result)
    if config.format in ("mp4", "gif", "frames", "ipynb") and not cameras:
        raise ValueError(
            f"write_render_artifact: format={config.format!r} needs frames, but the rollouts "
            f"have none (render_backend={config.render_backend!r}); make the env with "
            f"render_mode='rgb_array' or from_pixels=True, or write 'jsonl'/'npz'."
        )
    paths: list[Path] = []
    if config.format in ("mp4", "gif"):
        bundles = [bundle for trajectory in result.frames for bundle in trajectory]
        separate = config.camera_layout == "separate" and len(cameras) > 1
        for camera in cameras if separate else [None]:
            path = out if camera is None else out.with_name(f"{out.stem}_{camera}{out.suffix}")
            images = _images(bundles, config, camera)
            if config.format == "gif":
                paths.append(encode_gif(images, _target(path, config.overwrite), config.fps))
            else:
                paths.append(
                    encode_video(
                        images,
                        _target(path, config.overwrite),
                        config.fps,
                        video_codec=config.video_codec,
                    )
                )
    elif config.format == "frames":
        paths = _write_pngs(result, config, out, cameras)
    elif config.format == "npz":
        arrays = {}
        for i, trajectory in enumerate(result.trajectories):
            if result.frames and result.frames[i]:
                arrays[f"frames_{i}"] = np.stack(_images(result.frames[i], config, None))
            reward = trajectory.get(("next", config.reward_key), None)
            if reward is not None:
                arrays[f"reward_{i}"] = reward.cpu().numpy()
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("wb") as f:
            np.savez_compressed(f, **arrays)
        paths.append(out)
    elif config.format == "jsonl":
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w") as f:
            for summary, trajectory in zip(result.metadata["trajectories"], result.trajectories):
                action = trajectory.get(config.action_key, None)
                reward = trajectory.get(("next", config.reward_key), None)
                row = {
                    **summary,
                    "actions": None if action is None else _jsonable(action.cpu()),
                    "rewards": None if reward is None else _jsonable(reward.cpu().reshape(-1)),
                }
                f.write(json.dumps(row) + "\n")
        paths.append(out)
    else:  # ipynb
        from rl_envs.render.notebook import write_render_notebook

        paths.append(write_render_notebook(result, config, out))
    if config.save_frames and config.format != "frames":
        folder = Path(config.frame_dir) if config.frame_dir else out.with_name(f"{out.stem}_frames")
        paths.extend(_write_pngs(result, config, folder, cameras))
    result.artifact_path = paths[0]
    result.frame_paths = paths
    result.metadata["format"] = config.format
    return result


def _write_pngs(
    result: RenderResult, config: RenderConfig, folder: Path, cameras: list[str]
) -> list[Path]:
    paths = []
    several = len(cameras) > 1 and config.camera_layout == "separate"
    for i, bundles in enumerate(result.frames):
        for bundle in bundles:
            name = f"traj{i:03d}_step{bundle.step:05d}"
            if several:
                for camera in cameras:
                    paths.append(write_png(bundle.frames[camera], folder / f"{name}_{camera}.png"))
            else:
                image = _images([bundle], config, None)[0]
                paths.append(write_png(image, folder / f"{name}.png"))
    return paths
