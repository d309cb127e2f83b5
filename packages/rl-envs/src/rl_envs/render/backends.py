"""Where a render run's frames come from: the step's pixels, ``env.render()``, or nowhere."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from tensordict import TensorDictBase

from rl_envs.render.config import FrameBundle, RenderConfig
from rl_envs.render.video import normalize_frame_output


@runtime_checkable
class RenderBackend(Protocol):
    """Captures the frames of each step of a rollout."""

    def supports(self, env: Any, config: RenderConfig) -> bool:
        """Whether this backend can give frames for ``env``."""
        ...

    def capture(
        self,
        env: Any,
        tensordict: TensorDictBase,
        config: RenderConfig,
        *,
        step: int,
        trajectory_index: int,
    ) -> FrameBundle | None:
        """The frames of the step whose (root) TensorDict is ``tensordict``."""
        ...

    def close(self) -> None:
        """Releases what the backend holds."""
        ...


class TensorDictPixelsBackend:
    """Frames read from the step's TensorDict at ``config.pixel_key`` (an env built with
    ``from_pixels=True`` writes them)."""

    def supports(self, env: Any, config: RenderConfig) -> bool:
        keys = env.full_observation_spec.keys(True, True)
        return config.pixel_key in keys

    def capture(
        self,
        env: Any,
        tensordict: TensorDictBase,
        config: RenderConfig,
        *,
        step: int,
        trajectory_index: int,
    ) -> FrameBundle | None:
        pixels = tensordict.get(config.pixel_key, None)
        if pixels is None:
            raise KeyError(
                f"TensorDictPixelsBackend: expected frames at {config.pixel_key!r} in the step, "
                f"got keys {sorted(map(str, tensordict.keys(True, True)))}; set pixel_key."
            )
        return FrameBundle(normalize_frame_output(pixels), step, trajectory_index)

    def close(self) -> None:
        return None


def _render_target(env: Any) -> Any:
    """The innermost object with ``render()`` (a gymnasium env inside wrappers)."""
    for _ in range(16):
        inner = getattr(env, "env", None) or getattr(env, "base_env", None)
        if inner is None or inner is env:
            break
        env = inner
    return env


class EnvRenderBackend:
    """Frames from the wrapped library env's ``render()`` (a gymnasium env made with
    ``render_mode="rgb_array"``), called after each step."""

    def supports(self, env: Any, config: RenderConfig) -> bool:
        target = _render_target(env)
        return callable(getattr(target, "render", None)) and getattr(
            target, "render_mode", "rgb_array"
        ) in ("rgb_array", "rgb_array_list", None)

    def capture(
        self,
        env: Any,
        tensordict: TensorDictBase,
        config: RenderConfig,
        *,
        step: int,
        trajectory_index: int,
    ) -> FrameBundle | None:
        output = _render_target(env).render()
        if isinstance(output, list) and output and getattr(output[0], "ndim", 0) == 3:
            output = output[-1]  # "rgb_array_list": the frames since the last call
        return FrameBundle(normalize_frame_output(output), step, trajectory_index)

    def close(self) -> None:
        return None


class NullRenderBackend:
    """No frames: the rollouts and their metadata only (``format="jsonl"`` or ``"npz"``)."""

    def supports(self, env: Any, config: RenderConfig) -> bool:
        return True

    def capture(
        self,
        env: Any,
        tensordict: TensorDictBase,
        config: RenderConfig,
        *,
        step: int,
        trajectory_index: int,
    ) -> FrameBundle | None:
        return None

    def close(self) -> None:
        return None


def select_backend(env: Any, config: RenderConfig) -> RenderBackend:
    """The backend ``config.render_backend`` names; ``"auto"``: pixels in the step if the env
    has them, else ``env.render()``, else none.

    Raises:
        ValueError: the named backend cannot render ``env``.
    """
    named = {
        "pixels": TensorDictPixelsBackend,
        "env": EnvRenderBackend,
        "null": NullRenderBackend,
    }
    if config.render_backend != "auto":
        backend = named[config.render_backend]()
        if not backend.supports(env, config):
            raise ValueError(
                f"render: render_backend={config.render_backend!r} cannot render "
                f"{type(env).__name__} (pixels need an env with {config.pixel_key!r} in its "
                f"observation spec; 'env' needs a library env made with render_mode='rgb_array')."
            )
        return backend
    for cls in (TensorDictPixelsBackend, EnvRenderBackend):
        backend = cls()
        if backend.supports(env, config):
            return backend
    return NullRenderBackend()
