"""VideoRecorder and PixelRenderTransform: frames of an env, rendered and written out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from rl_core import Bounded, Composite, EnvBase, Transform, TransformedEnv
from rl_core.keys import PIXELS, NestedKey


def _to_uint8_chw(frame: torch.Tensor) -> torch.Tensor:
    """``[..., H, W, 3]`` uint8 or ``[..., C, H, W]`` float in [0, 1] to uint8 ``[..., C, H, W]``."""
    if frame.dtype == torch.uint8:
        if frame.shape[-1] in (1, 3, 4) and frame.shape[-3] not in (1, 3, 4):
            frame = frame.movedim(-1, -3)
        return frame
    return (frame.clamp(0, 1) * 255).round().to(torch.uint8)


class VideoRecorder(Transform):
    """Records the frames an env shows and writes them out as a video on :meth:`dump`.

    Every reset and step adds the frame(s) under ``in_keys[0]`` (uint8 ``[H, W, C]`` or float
    ``[C, H, W]``; the sub-envs of a batched env side by side). ``dump`` hands the video,
    uint8 ``[1, T, C, H, W]``, to ``logger.log_video(tag, video, step=...)`` when a logger is
    given (any object with such a method), and otherwise writes ``<folder>/<tag>_<n>.gif``
    (Pillow, the ``video`` extra). On a plain TensorDict the frames of its batch are recorded
    as consecutive frames.

    Args:
        logger: an object with ``log_video(name, video, step=None, **kwargs)``, or ``None``.
        tag: the video's name.
        in_keys: the frames. Defaults to ``["pixels"]``.
        skip: keep one frame out of ``skip``.
        folder: where GIFs go without a logger. Defaults to the working directory.
        fps: the frame rate of the GIF.

    Raises:
        ValueError: ``skip`` < 1.
        KeyError: (on the specs) the env shows no such frames.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> class Logger:
        ...     def log_video(self, name, video, step=None):
        ...         print(name, tuple(video.shape), video.dtype)
        >>> recorder = VideoRecorder(Logger(), tag="demo")
        >>> _ = recorder(TensorDict(pixels=torch.rand(5, 3, 8, 8), batch_size=[5]))
        >>> recorder.dump()
        demo (1, 5, 3, 8, 8) torch.uint8
    """

    def __init__(
        self,
        logger: Any = None,
        tag: str = "video",
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        *,
        skip: int = 1,
        folder: str | Path | None = None,
        fps: int = 30,
    ) -> None:
        super().__init__(in_keys=PIXELS if in_keys is None else in_keys)
        if skip < 1:
            raise ValueError(f"VideoRecorder: expected skip >= 1, got {skip}.")
        if logger is not None and not callable(getattr(logger, "log_video", None)):
            raise TypeError(
                f"VideoRecorder: the logger ({type(logger).__name__}) has no log_video method."
            )
        self.logger = logger
        self.tag = tag
        self.skip = skip
        self.folder = Path.cwd() if folder is None else Path(folder)
        self.fps = fps
        self.frames: list[torch.Tensor] = []
        self.count = 0
        self.dumps = 0

    def _record(self, frames: torch.Tensor, batch_ndim: int) -> None:
        frames = _to_uint8_chw(frames)
        frames = frames.reshape(-1, *frames.shape[batch_ndim:]) if batch_ndim else frames[None]
        # Sub-envs of a batched env side by side: [N, C, H, W] -> [C, H, N * W].
        frame = torch.cat(list(frames), -1) if frames.shape[0] > 1 else frames[0]
        if self.count % self.skip == 0:
            self.frames.append(frame.detach().cpu())
        self.count += 1

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        self._record(tensordict_reset.get(self.in_keys[0]), tensordict_reset.batch_dims)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        self._record(next_tensordict.get(self.in_keys[0]), next_tensordict.batch_dims)
        return next_tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        frames = _to_uint8_chw(tensordict.get(self.in_keys[0]))
        for frame in frames.reshape(-1, *frames.shape[tensordict.batch_dims :]):
            self._record(frame, 0)
        return tensordict

    def dump(self, suffix: str | None = None) -> Path | None:
        """Writes the recorded frames out and forgets them.

        Returns:
            The GIF's path when it was written to a file, else ``None``.
        """
        if not self.frames:
            return None
        video = torch.stack(self.frames)
        self.frames = []
        name = self.tag if suffix is None else f"{self.tag}_{suffix}"
        self.dumps += 1
        if self.logger is not None:
            self.logger.log_video(name, video.unsqueeze(0), step=self.dumps)
            return None
        try:
            from PIL import Image
        except ImportError as err:
            raise ImportError(
                'VideoRecorder needs Pillow to write GIFs: pip install "rl-envs[video]" (or '
                "pass a logger with a log_video method)."
            ) from err
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{name}_{self.dumps}.gif"
        images = [Image.fromarray(_hwc(frame)) for frame in video]
        images[0].save(
            path, save_all=True, append_images=images[1:], duration=max(1, 1000 // self.fps), loop=0
        )
        return path

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        known = observation_spec.keys(include_nested=True, leaves_only=True)
        if self.in_keys[0] not in known:
            raise KeyError(
                f"VideoRecorder: the env shows no {self.in_keys[0]!r} frames (it has {known}); "
                f"build it with from_pixels=True or add a PixelRenderTransform first."
            )
        return observation_spec


def _hwc(frame: torch.Tensor) -> np.ndarray:
    array = frame.movedim(0, -1).numpy()
    return array[..., 0] if array.shape[-1] == 1 else array


def _default_render(env: EnvBase) -> Any:
    """A frame per sub-env: the gymnasium env's ``render()`` (a tuple of frames for a vector
    env), each sub-env's frame for a ``SerialEnv``, else ``env.render()``."""
    gym_env = getattr(env, "env", None)
    if gym_env is not None and callable(getattr(gym_env, "render", None)):
        return gym_env.render()
    sub_envs = getattr(env, "_envs", None)  # SerialEnv: the sub-envs live in this process
    if sub_envs is not None:
        return [_default_render(sub) for sub in sub_envs]
    render = getattr(env, "render", None)
    if not callable(render):
        raise TypeError(
            f"PixelRenderTransform: {type(env).__name__} has no render method and its sub-envs "
            f"cannot be reached from this process (a ParallelEnv's live in workers); pass "
            f"render_fn, or put a PixelRenderTransform in each sub-env."
        )
    return render()


def _as_frames(frame: Any, batch_size: torch.Size, device: Any) -> torch.Tensor | None:
    """The rendered frame(s) as one uint8 tensor ``[*batch_size, H, W, C]``."""
    if frame is None:
        return None
    if isinstance(frame, list | tuple):
        if any(f is None for f in frame):
            return None
        frame = np.stack([np.asarray(f) for f in frame])
    out = torch.as_tensor(np.ascontiguousarray(frame), device=device)
    lead = len(batch_size)
    if lead and out.shape[:lead] != batch_size:
        try:
            out = out.reshape(*batch_size, *out.shape[-3:])
        except RuntimeError:
            raise ValueError(
                f"PixelRenderTransform: expected one frame per sub-env (batch size "
                f"{tuple(batch_size)}), got frames of shape {tuple(out.shape)}."
            ) from None
    return out


class PixelRenderTransform(Transform):
    """Adds rendered frames (uint8 ``[*batch, H, W, 3]``) to the observations of an env that
    has none.

    Batched envs get one frame per sub-env: a ``GymEnv`` of a gymnasium vector env
    (``num_envs``) renders every sub-env at once, a ``SerialEnv`` each of its sub-envs. The
    sub-envs of a ``ParallelEnv`` live in worker processes: give each sub-env its own
    PixelRenderTransform (``create_env_fn`` returning a TransformedEnv) instead.

    Args:
        out_keys: where the frames go. Defaults to ``["pixels"]``.
        render_fn: called with the base env, returns the frame(s): an ``[*batch, H, W, 3]``
            array or tensor, or a sequence of ``[H, W, 3]`` frames, one per sub-env. Defaults
            to ``env.env.render()`` (the gymnasium env of a ``GymEnv``, made with
            ``render_mode="rgb_array"``), the sub-envs' frames of a ``SerialEnv``, or
            ``env.render()``.

    Raises:
        RuntimeError: (on the specs) the env renders nothing.
        TypeError: (on the specs) the env has no way to render (a ``ParallelEnv``).
        ValueError: (on the specs) not one frame per sub-env.

    Examples:
        >>> t = PixelRenderTransform()
        >>> t.out_keys
        ['pixels']
    """

    def __init__(
        self,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        *,
        render_fn: Callable[[EnvBase], Any] | None = None,
    ) -> None:
        super().__init__()
        self.out_keys = [PIXELS] if out_keys is None else list(out_keys)
        self.render_fn = _default_render if render_fn is None else render_fn

    def _base(self) -> EnvBase:
        env = self.parent
        while isinstance(env, TransformedEnv):
            env = env.base_env
        if env is None:
            raise RuntimeError("PixelRenderTransform: the transform is in no env.")
        return env

    def _render(self, device: Any = None) -> torch.Tensor:
        base = self._base()
        frame = _as_frames(self.render_fn(base), base.batch_size, device)
        if frame is None:
            raise RuntimeError(
                "PixelRenderTransform: the env rendered nothing; make it with "
                "render_mode='rgb_array'."
            )
        return frame

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset.set(self.out_keys[0], self._render(tensordict_reset.device))

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict.set(self.out_keys[0], self._render(next_tensordict.device))

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        base = self._base()
        base.reset()  # gymnasium renders only after a reset
        frame = self._render()
        observation_spec[self.out_keys[0]] = Bounded(
            0, 255, shape=frame.shape, device=observation_spec.device, dtype=torch.uint8
        )
        return observation_spec


__all__ = ["PixelRenderTransform", "VideoRecorder"]
