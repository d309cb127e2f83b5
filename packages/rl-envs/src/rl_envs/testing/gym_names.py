"""The gym ids of the classic tasks users' tests name, for the installed gym backend, as
TorchRL's ``torchrl.testing`` has them (``PENDULUM_VERSIONED()`` is ``"Pendulum-v1"`` with
gymnasium 1.x)."""

from __future__ import annotations

from rl_envs.libs.gym_backend import gym_backend

_TASKS = ("CARTPOLE", "HALFCHEETAH", "PENDULUM", "PONG", "BREAKOUT", "CLIFFWALKING")

# (backend, first version the ids hold for) -> ids in _TASKS order; newest first per backend
_IDS: list[tuple[str, tuple[int, ...], tuple[str, ...]]] = [
    (
        "gymnasium",
        (1, 1),
        (
            "CartPole-v1",
            "HalfCheetah-v5",
            "Pendulum-v1",
            "ALE/Pong-v5",
            "ALE/Breakout-v5",
            "CliffWalking-v1",
        ),
    ),
    (
        "gymnasium",
        (0,),
        (
            "CartPole-v1",
            "HalfCheetah-v4",
            "Pendulum-v1",
            "ALE/Pong-v5",
            "ALE/Breakout-v5",
            "CliffWalking-v0",
        ),
    ),
    (
        "gym",
        (0, 21),
        (
            "CartPole-v1",
            "HalfCheetah-v4",
            "Pendulum-v1",
            "ALE/Pong-v5",
            "ALE/Breakout-v5",
            "CliffWalking-v0",
        ),
    ),
    (
        "gym",
        (0,),
        (
            "CartPole-v0",
            "HalfCheetah-v2",
            "Pendulum-v0",
            "Pong-v4",
            "Breakout-v4",
            "CliffWalking-v0",
        ),
    ),
]


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def _task_id(task: str) -> str | None:
    backend = gym_backend()
    if backend is None:
        return None
    version = _version(getattr(backend, "__version__", "0"))
    for name, since, ids in _IDS:
        if backend.__name__ == name and version >= since:
            return ids[_TASKS.index(task)]
    return None


def CARTPOLE_VERSIONED() -> str | None:
    """CartPole's id for the gym backend (``None`` without one)."""
    return _task_id("CARTPOLE")


def HALFCHEETAH_VERSIONED() -> str | None:
    """HalfCheetah's id for the gym backend (``None`` without one)."""
    return _task_id("HALFCHEETAH")


def PENDULUM_VERSIONED() -> str | None:
    """Pendulum's id for the gym backend (``None`` without one).

    Examples:
        >>> from rl_envs.testing import PENDULUM_VERSIONED
        >>> PENDULUM_VERSIONED()
        'Pendulum-v1'
    """
    return _task_id("PENDULUM")


def PONG_VERSIONED() -> str | None:
    """Pong's id for the gym backend (``None`` without one)."""
    return _task_id("PONG")


def BREAKOUT_VERSIONED() -> str | None:
    """Breakout's id for the gym backend (``None`` without one)."""
    return _task_id("BREAKOUT")


def CLIFFWALKING_VERSIONED() -> str | None:
    """CliffWalking's id for the gym backend (``None`` without one)."""
    return _task_id("CLIFFWALKING")


__all__ = [
    "BREAKOUT_VERSIONED",
    "CARTPOLE_VERSIONED",
    "CLIFFWALKING_VERSIONED",
    "HALFCHEETAH_VERSIONED",
    "PENDULUM_VERSIONED",
    "PONG_VERSIONED",
]
