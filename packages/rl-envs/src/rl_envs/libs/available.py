"""get_available_libraries: which of the wrapped env libraries are installed."""

from __future__ import annotations

import importlib.util

# library (its import name) -> the rl-envs extra that installs it
LIBRARIES: dict[str, str] = {
    "gymnasium": "gymnasium",
    "ale_py": "atari",
    "mujoco": "mujoco",
    "dm_control": "dm-control",
    "pettingzoo": "pettingzoo",
    "pyspiel": "open-spiel",
    "envpool": "envpool",
    "mo_gymnasium": "mo-gymnasium",
    "brax": "brax",
    "jumanji": "jumanji",
    "vmas": "vmas",
    "lbforaging": "lbforaging",
}


def get_available_libraries() -> dict[str, bool]:
    """Whether each env library that rl-envs wraps is installed, by its import name.

    The libraries are looked up (``importlib.util.find_spec``), not imported. The extra that
    installs each one is ``rl_envs.libs.available.LIBRARIES[name]``
    (``pip install "rl-envs[<extra>]"``). TorchRL's function answers for its own list
    (``gym``, ``dm_control``, ``habitat``, ...); this one for the wrappers here.

    Returns:
        ``{import name: installed}`` for ``gymnasium``, ``ale_py``, ``mujoco``,
        ``dm_control``, ``pettingzoo``, ``pyspiel``, ``envpool``, ``mo_gymnasium``, ``brax``,
        ``jumanji``, ``vmas`` and ``lbforaging``.

    Examples:
        >>> sorted(get_available_libraries())[:3]
        ['ale_py', 'brax', 'dm_control']
    """
    return {name: importlib.util.find_spec(name) is not None for name in LIBRARIES}


__all__ = ["get_available_libraries"]
