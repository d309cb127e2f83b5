"""The per-step spec-check switch (off by default; specs are checked when an env is built)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

_ENV_VAR = "RL_CHECK_SPECS"


class _Switch:
    __slots__ = ("enabled",)

    def __init__(self) -> None:
        self.enabled = os.environ.get(_ENV_VAR, "0").strip().lower() in ("1", "true", "yes", "on")


SWITCH = _Switch()


def spec_checks_enabled() -> bool:
    """Whether every ``reset``/``step`` is checked against the env's specs.

    Off by default; on when the environment variable ``RL_CHECK_SPECS=1`` was set when
    ``rl_core`` was imported, or inside :func:`set_spec_checks`.

    Examples:
        >>> from rl_core.envs import set_spec_checks, spec_checks_enabled
        >>> with set_spec_checks(True):
        ...     print(spec_checks_enabled())
        True
    """
    return SWITCH.enabled


@contextmanager
def set_spec_checks(enabled: bool = True) -> Iterator[None]:
    """Turns per-step spec checks on (or off) inside a block; the previous state comes back.

    With checks on, ``EnvBase.step`` and ``EnvBase.reset`` verify that every entry the env
    writes is in its spec (key, shape, dtype, device, bounds) and raise a ``ValueError`` naming
    the first mismatch. Meant for debugging and tests: it costs far more than a step.

    Args:
        enabled: turn checks on (``True``) or off (``False``).
    """
    previous = SWITCH.enabled
    SWITCH.enabled = bool(enabled)
    try:
        yield
    finally:
        SWITCH.enabled = previous
