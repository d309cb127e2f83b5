"""The gym backend switch: which of ``gymnasium`` and ``gym`` TorchRL-style code gets from
:func:`gym_backend`, and which :class:`~rl_envs.libs.implement_for` implementations apply.

rl-envs' own wrappers (``GymEnv``, ``GymWrapper``) are built on gymnasium whatever the
backend; the switch serves code written for TorchRL's ``torchrl.envs.libs.gym`` helpers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from contextlib import ContextDecorator
from types import ModuleType
from typing import Any

_BACKENDS = ("gymnasium", "gym")


class _State:
    """The chosen backend (``None``: not chosen yet) and a counter bumped at each change, which
    :class:`~rl_envs.libs.implement_for` reads to drop the implementations it resolved."""

    backend: ModuleType | None = None
    generation: int = 0


def _as_module(backend: str | ModuleType | Callable[[], ModuleType]) -> ModuleType:
    if isinstance(backend, ModuleType):
        module = backend
    elif isinstance(backend, str):
        try:
            module = importlib.import_module(backend)
        except ImportError as err:
            raise ImportError(
                f"set_gym_backend: the backend {backend!r} is not installed ({err}); install it "
                f'(pip install "rl-envs[gymnasium]" for gymnasium) or pick one of {_BACKENDS}.'
            ) from err
    elif callable(backend):
        module = backend()
        if not isinstance(module, ModuleType):
            raise TypeError(
                f"set_gym_backend: expected the backend callable to return a module, got "
                f"{type(module).__name__}."
            )
    else:
        raise TypeError(
            f"set_gym_backend: expected backend as a module, a module name ({_BACKENDS}) or a "
            f"callable returning a module, got {type(backend).__name__}."
        )
    if module.__name__.partition(".")[0] not in _BACKENDS:
        raise ValueError(
            f"set_gym_backend: expected the gymnasium or gym module, got {module.__name__!r}."
        )
    return module


def _install(module: ModuleType | None) -> None:
    if module is not _State.backend:
        _State.backend = module
        _State.generation += 1


class set_gym_backend(ContextDecorator):  # TorchRL's name
    """Chooses the gym backend: a context manager (restoring the previous one on exit), a
    function decorator, or, with :meth:`set`, a switch for the rest of the process.

    Args:
        backend: the ``gymnasium`` or ``gym`` module, its name, or a callable returning it
            (to import it only when the switch is used).

    Raises:
        ImportError: (when used) a backend name that is not installed.
        TypeError: (when used) a backend that is neither a module, a name nor a callable.
        ValueError: (when used) a module other than gymnasium or gym.

    Examples:
        >>> import gymnasium
        >>> with set_gym_backend("gymnasium"):
        ...     gym_backend() is gymnasium
        True
        >>> @set_gym_backend(lambda: gymnasium)
        ... def make():
        ...     return gym_backend().__name__
        >>> make()
        'gymnasium'
    """

    def __init__(self, backend: str | ModuleType | Callable[[], ModuleType]) -> None:
        self.backend = backend
        self._previous: list[ModuleType | None] = []

    def set(self) -> None:
        """Makes the backend the default for the rest of the process (no restore)."""
        _install(_as_module(self.backend))

    def __enter__(self) -> set_gym_backend:
        module = _as_module(self.backend)
        self._previous.append(_State.backend)
        _install(module)
        return self

    def __exit__(self, *exc: Any) -> None:
        _install(self._previous.pop())


def gym_backend(submodule: str | None = None) -> ModuleType | None:
    """The gym backend (by default gymnasium if installed, else gym, else ``None``), or one of
    its submodules.

    Args:
        submodule: a submodule name (``"spaces"``, ``"wrappers"``, ``"vector"``) to import from
            the backend.

    Returns:
        The backend module, the submodule, or ``None`` when neither library is installed.

    Raises:
        ImportError: ``submodule`` is asked for and neither library is installed.

    Examples:
        >>> gym_backend().__name__
        'gymnasium'
        >>> gym_backend("spaces").__name__
        'gymnasium.spaces'
    """
    if _State.backend is None:
        for name in _BACKENDS:
            try:
                _install(importlib.import_module(name))
                break
            except ImportError:
                continue
    module = _State.backend
    if submodule is None:
        return module
    if module is None:
        raise ImportError(
            f"gym_backend: neither gymnasium nor gym is installed, so there is no "
            f'{submodule!r} to import; pip install "rl-envs[gymnasium]".'
        )
    return importlib.import_module(f"{module.__name__}.{submodule.lstrip('.')}")


def backend_generation() -> int:
    """A counter that changes whenever the backend does (read by ``implement_for``)."""
    return _State.generation


__all__ = ["gym_backend", "set_gym_backend"]
