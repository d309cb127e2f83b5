"""A Jupyter notebook (nbformat 4 JSON) showing a render run's rollouts as embedded GIFs."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path
from typing import Any

from rl_envs.render.config import RenderConfig, RenderResult
from rl_envs.render.video import compose_frame_grid, encode_gif


def _gif_base64(images: list[Any], fps: float) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = encode_gif(images, Path(folder) / "rollout.gif", fps)
        return base64.b64encode(path.read_bytes()).decode("ascii")


def build_notebook(result: RenderResult, config: RenderConfig) -> dict[str, Any]:
    """The notebook as a dict: a markdown cell with the run's configuration, then per
    trajectory a markdown cell (steps, return) and a code cell whose saved output is the
    trajectory's frames as a GIF (``image/gif``, shown without running anything).

    Raises:
        ValueError: a trajectory has no frames.
    """
    layout = "grid" if config.camera_layout == "separate" else config.camera_layout
    cells: list[dict[str, Any]] = [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": [
                "# Policy rollouts\n",
                "\n",
                f"Rendered by `rl_envs.render` from `{config.to_dict()['env']}`.\n",
            ],
        }
    ]
    for summary, bundles in zip(result.metadata["trajectories"], result.frames):
        if not bundles:
            raise ValueError(
                f"build_notebook: trajectory {summary['index']} has no frames; render with "
                f"an env that gives rgb_array frames."
            )
        images = [compose_frame_grid(list(b.frames.values()), layout) for b in bundles]
        cells.append(
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": [
                    f"## Trajectory {summary['index']}: {summary['steps']} steps, "
                    f"return {summary['return']}\n"
                ],
            }
        )
        cells.append(
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [
                    {
                        "output_type": "display_data",
                        "data": {
                            "image/gif": _gif_base64(images, config.fps),
                            "text/plain": [f"<trajectory {summary['index']}>"],
                        },
                        "metadata": {},
                    }
                ],
                "source": [f"# trajectory {summary['index']} (saved output)"],
            }
        )
    return {
        "cells": cells,
        "metadata": {
            "rl_envs_render": {
                "config": config.to_dict(),
                "trajectories": result.metadata["trajectories"],
            },
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write_render_notebook(result: RenderResult, config: RenderConfig, path: str | Path) -> Path:
    """Writes :func:`build_notebook` as JSON at ``path``; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(build_notebook(result, config), indent=1, default=repr))
    return path
