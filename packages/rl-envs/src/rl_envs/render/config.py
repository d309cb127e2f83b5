"""What a render run is asked to do (RenderConfig) and what it hands back (RenderResult)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import torch
from tensordict import TensorDictBase

from rl_core.keys import NestedKey

#: Artifacts a run can write (``"frames"``: one PNG per frame; ``"npz"``: the frames as arrays).
RenderFormat = Literal["ipynb", "mp4", "gif", "frames", "npz", "jsonl"]
#: How several cameras' frames are laid out in one image.
CameraLayout = Literal["single", "grid", "horizontal", "vertical", "separate"]
#: Where frames come from: the TensorDict's pixels, ``env.render()``, nowhere, or the first
#: that works (``"auto"``).
RenderBackendName = Literal["auto", "pixels", "env", "null"]
#: How a notebook shows the rollout (only ``"static"`` here: the frames embedded as a GIF).
NotebookRenderBackendName = Literal["auto", "static", "mujoco_wasm", "mujoco-wasm"]
#: Whether a notebook holds saved rollouts, runs them live, or both (only ``"saved"`` here).
NotebookRolloutMode = Literal["saved", "live", "both"]
#: The env library a name is made with (``"gym"``/``"gymnasium"``: ``GymEnv``).
EnvBackendName = Literal["auto", "gym", "gymnasium"]
#: The exploration type the policy runs under.
ExplorationMode = Literal["deterministic", "mode", "mean", "random"]


def parse_nested_key(value: NestedKey | str | Sequence[str]) -> NestedKey:
    """A nested key from a dotted string (``"next.pixels"``), a list or a key.

    Examples:
        >>> from rl_envs.render import parse_nested_key
        >>> parse_nested_key("next.pixels"), parse_nested_key("pixels"), parse_nested_key(["a", "b"])
        (('next', 'pixels'), 'pixels', ('a', 'b'))
    """
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(str(part) for part in value)
    if isinstance(value, str):
        parts = [part for part in value.strip().split(".") if part]
        if not parts:
            raise ValueError(f"parse_nested_key: expected a non-empty key, got {value!r}.")
        return parts[0] if len(parts) == 1 else tuple(parts)
    raise TypeError(
        f"parse_nested_key: expected a key (str, tuple or list of str), got {type(value).__name__}."
    )


def key_to_string(key: NestedKey) -> str:
    """A nested key written as a dotted string (the inverse of :func:`parse_nested_key`).

    Examples:
        >>> from rl_envs.render import key_to_string
        >>> key_to_string(("next", "pixels")), key_to_string("action")
        ('next.pixels', 'action')
    """
    return ".".join(str(part) for part in key) if isinstance(key, tuple) else str(key)


def _check_choice(name: str, value: Any, literal: Any) -> None:
    choices = get_args(literal)
    if value not in choices:
        raise ValueError(f"RenderConfig: expected {name} in {choices}, got {value!r}.")


@dataclass
class RenderConfig:
    """A render run: which policy (and checkpoint) in which env, how many rollouts, what to write.

    ``policy`` and ``env`` are callables or ``"module:object"`` strings; each factory is
    called with the keyword arguments it accepts among those a run offers (see
    :func:`~rl_envs.render.make_render_env`, :func:`~rl_envs.render.load_render_policy`).
    An ``env`` string that is not ``"module:object"`` is a gymnasium id (``"CartPole-v1"``).
    ``policy`` may be None: the env's random policy is rendered.

    Args:
        ckpt: the checkpoint file (``torch.save`` output), or None.
        policy: the policy or its factory.
        env: the env factory, ``"module:object"``, or a gymnasium id.
        num_trajs: rollouts to render.
        format: the artifact (:data:`RenderFormat`).
        out: the artifact's path (default ``render.<format>``; a folder for ``"frames"``).
        max_steps: steps per rollout (None: until done, at most 10,000).
        fps: frames per second of videos and GIFs.
        camera_layout: how several cameras' frames are joined (:data:`CameraLayout`).
        deterministic: run the policy in deterministic mode (unless ``exploration_mode``).
        exploration_mode: the exploration type (:data:`ExplorationMode`).
        seed: the env's (and torch's) seed.
        device: where the policy runs.
        env_kwargs: extra arguments of the env factory.
        policy_kwargs: extra arguments of the policy factory.
        state_dict_key: the checkpoint entry holding the policy's weights (inferred if None).
        strict_load: load the weights strictly.
        auto_load_policy: load the checkpoint's weights into a policy that is a module.
        policy_eval: put a module policy in eval mode.
        obs_key: the observation a plain callable policy reads.
        action_key: where a plain callable policy's output is written.
        reward_key: the reward read for the metadata's returns.
        pixel_key: where frames are read (``"pixels"``).
        from_pixels: ask the env factory for pixel observations.
        pixels_only: with ``from_pixels``, drop the state observations.
        render_backend: where frames come from (:data:`RenderBackendName`).
        env_backend: the env library for an id (:data:`EnvBackendName`).
        notebook_render_backend: a notebook's viewer (``"auto"``/``"static"``).
        notebook_rollout_mode: a notebook's rollouts (``"saved"``).
        render_mode: the gymnasium render mode (``"rgb_array"`` by default for ids).
        save_frames: also write every frame as a PNG under ``frame_dir``.
        frame_dir: the PNG folder (default ``<out>_frames``).
        overwrite: replace an existing artifact.
        video_codec: the mp4 codec (``"libx264"`` by default).
        dry_run: check the configuration and build the env and policy, without rollouts.

    Raises:
        ValueError: a choice outside its :data:`Literal`, ``num_trajs < 1``, ``fps <= 0``,
            ``max_steps < 1``, or a notebook mode that needs the MuJoCo viewer.
    """

    ckpt: str | Path | None = None
    policy: str | Callable[..., Any] | None = None
    env: str | Callable[..., Any] = "CartPole-v1"
    num_trajs: int = 1
    format: RenderFormat = "mp4"
    out: str | Path | None = None
    max_steps: int | None = None
    fps: float = 30.0
    camera_layout: CameraLayout = "single"
    deterministic: bool = True
    exploration_mode: ExplorationMode | None = None
    seed: int | None = 0
    device: torch.device | str = "cpu"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    policy_kwargs: dict[str, Any] = field(default_factory=dict)
    state_dict_key: str | None = None
    strict_load: bool = True
    auto_load_policy: bool = True
    policy_eval: bool = True
    obs_key: NestedKey = "observation"
    action_key: NestedKey = "action"
    reward_key: NestedKey = "reward"
    pixel_key: NestedKey = "pixels"
    from_pixels: bool = False
    pixels_only: bool = False
    render_backend: RenderBackendName = "auto"
    env_backend: EnvBackendName = "auto"
    notebook_render_backend: NotebookRenderBackendName = "auto"
    notebook_rollout_mode: NotebookRolloutMode = "saved"
    render_mode: str | None = None
    save_frames: bool = False
    frame_dir: str | Path | None = None
    overwrite: bool = False
    video_codec: str | None = None
    dry_run: bool = False

    def __post_init__(self) -> None:
        _check_choice("format", self.format, RenderFormat)
        _check_choice("camera_layout", self.camera_layout, CameraLayout)
        _check_choice("render_backend", self.render_backend, RenderBackendName)
        _check_choice("env_backend", self.env_backend, EnvBackendName)
        _check_choice(
            "notebook_render_backend", self.notebook_render_backend, NotebookRenderBackendName
        )
        _check_choice("notebook_rollout_mode", self.notebook_rollout_mode, NotebookRolloutMode)
        if self.exploration_mode is not None:
            _check_choice("exploration_mode", self.exploration_mode, ExplorationMode)
        if self.notebook_render_backend in ("mujoco_wasm", "mujoco-wasm"):
            raise ValueError(
                "RenderConfig: notebook_render_backend='mujoco_wasm' needs the MuJoCo WASM "
                "viewer, which rl_envs.render does not build; use 'static' (an embedded GIF)."
            )
        if self.notebook_rollout_mode != "saved":
            raise ValueError(
                f"RenderConfig: notebook_rollout_mode={self.notebook_rollout_mode!r} runs "
                f"rollouts inside the notebook, which rl_envs.render does not build; use 'saved'."
            )
        if not isinstance(self.num_trajs, int) or self.num_trajs < 1:
            raise ValueError(f"RenderConfig: expected num_trajs >= 1, got {self.num_trajs!r}.")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(
                f"RenderConfig: expected max_steps >= 1 or None, got {self.max_steps}."
            )
        if not self.fps > 0:
            raise ValueError(f"RenderConfig: expected fps > 0, got {self.fps!r}.")
        for name in ("obs_key", "action_key", "reward_key", "pixel_key"):
            setattr(self, name, parse_nested_key(getattr(self, name)))

    @property
    def out_path(self) -> Path:
        """The artifact's path: ``out``, or ``render.<format>`` (``render_frames`` for frames)."""
        if self.out is not None:
            return Path(self.out)
        return Path("render_frames" if self.format == "frames" else f"render.{self.format}")

    def to_dict(self) -> dict[str, Any]:
        """The configuration as JSON-ready values (callables by ``module:qualname``)."""
        out = {}
        for name, value in asdict(self).items():
            if callable(value):
                value = f"{getattr(value, '__module__', '?')}:{getattr(value, '__qualname__', '?')}"
            elif isinstance(value, Path | torch.device):
                value = str(value)
            elif name.endswith("_key"):
                value = key_to_string(value)
            out[name] = value
        return out

    def to_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as JSON (unknown values by ``repr``)."""
        return json.dumps(self.to_dict(), default=repr, **kwargs)


@dataclass
class RenderEnvSpec:
    """What an env factory may ask for (it receives the fields it names as keyword arguments)."""

    device: torch.device
    seed: int | None
    max_steps: int | None
    from_pixels: bool
    pixels_only: bool
    render_mode: str | None
    env_kwargs: dict[str, Any]
    config: RenderConfig
    checkpoint: Any | None = None

    @classmethod
    def from_config(cls, config: RenderConfig, checkpoint: Any | None = None) -> RenderEnvSpec:
        """The spec of ``config`` (and the loaded checkpoint, if any)."""
        return cls(
            device=torch.device(config.device),
            seed=config.seed,
            max_steps=config.max_steps,
            from_pixels=config.from_pixels,
            pixels_only=config.pixels_only,
            render_mode=config.render_mode,
            env_kwargs=dict(config.env_kwargs),
            config=config,
            checkpoint=checkpoint,
        )


@dataclass
class RenderPolicySpec:
    """What a policy factory may ask for (it receives the fields it names as keyword arguments)."""

    ckpt_path: Path | None
    checkpoint: Any | None
    checkpoint_hash: str | None
    device: torch.device
    env_specs: Any | None
    policy_kwargs: dict[str, Any]
    config: RenderConfig


@dataclass
class FrameBundle:
    """The frames of one step: camera name -> ``[H, W, 3]`` uint8 array.

    Examples:
        >>> import numpy as np
        >>> from rl_envs.render import FrameBundle
        >>> bundle = FrameBundle({"default": np.zeros((2, 2, 3), dtype=np.uint8)}, 0, 0)
        >>> bundle.frames["default"].shape
        (2, 2, 3)
    """

    frames: dict[str, Any]
    step: int
    trajectory_index: int
    timestamp: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class RenderResult:
    """What a render run produced: the rollouts, their frames, the written paths, metadata.

    Examples:
        >>> from rl_envs.render import RenderResult
        >>> RenderResult(None, [], [], {"num_trajs": 0}, []).metadata["num_trajs"]
        0
    """

    artifact_path: Path | None
    trajectories: list[TensorDictBase]
    frame_paths: list[Path]
    metadata: dict[str, Any]
    warnings: list[str]
    frames: list[list[FrameBundle]] = field(default_factory=list)
