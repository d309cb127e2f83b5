"""Building gymnasium envs for the wrappers: the import check, Atari ids, frame skipping."""

from __future__ import annotations

import functools
from typing import Any


def import_gymnasium(who: str) -> Any:
    try:
        import gymnasium
    except ImportError as err:
        raise ImportError(f'{who} needs gymnasium: pip install "rl-envs[gymnasium]"') from err
    return gymnasium


def check_frame_skip(frame_skip: Any, who: str) -> int:
    if frame_skip is None:
        return 1
    if isinstance(frame_skip, bool) or not isinstance(frame_skip, int) or frame_skip < 1:
        raise ValueError(
            f"{who}: expected frame_skip to be None or an int >= 1, got {frame_skip!r}."
        )
    return frame_skip


@functools.cache
def _frame_skip_class() -> type:
    gymnasium = import_gymnasium("frame_skip")

    class FrameSkip(gymnasium.Wrapper):
        """Repeats every action ``skip`` times (fewer if the episode ends), summing rewards."""

        def __init__(self, env: Any, skip: int) -> None:
            super().__init__(env)
            self.skip = skip

        def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
            total = 0.0
            for _ in range(self.skip):
                obs, reward, terminated, truncated, info = self.env.step(action)
                total += float(reward)
                if terminated or truncated:
                    break
            return obs, total, terminated, truncated, info

    return FrameSkip


def frame_skip_wrapper(env: Any, skip: int) -> Any:
    """Wraps a gymnasium env so that each step repeats the action ``skip`` times."""
    return _frame_skip_class()(env, skip)


def register_namespace(gym: Any, env_name: str) -> None:
    """Makes the ``ALE/`` ids known to gymnasium (ale-py registers them on request)."""
    if not env_name.startswith("ALE/") or env_name in gym.registry:
        return
    try:
        import ale_py
    except ImportError as err:
        raise ImportError(
            f'GymEnv({env_name!r}) needs ale-py for Atari games: pip install "rl-envs[atari]"'
        ) from err
    gym.register_envs(ale_py)


__all__ = ["check_frame_skip", "frame_skip_wrapper", "import_gymnasium", "register_namespace"]
