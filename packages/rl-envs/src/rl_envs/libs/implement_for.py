"""``implement_for``: one function, several implementations, each for a range of versions of a
library; a call runs the one that fits the installed library (TorchRL's name and arguments)."""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from rl_envs.libs.gym_backend import backend_generation, gym_backend

_GYM_NAMES = ("gym", "gymnasium")


def _version_tuple(text: str) -> tuple[int, ...]:
    """The leading release numbers of a version string: ``"2.8.0+cu121"`` -> ``(2, 8, 0)``."""
    numbers = []
    for part in str(text).split("."):
        match = re.match(r"\d+", part)
        if match is None:
            break
        numbers.append(int(match.group()))
        if match.end() != len(part):
            break
    return tuple(numbers)


def _in_range(version: str, low: str | None, high: str | None) -> bool:
    """``low <= version < high`` on release numbers (missing trailing numbers count as 0)."""
    v = _version_tuple(version)

    def cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
        n = max(len(a), len(b))
        a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
        return (a > b) - (a < b)

    if low is not None and cmp(v, _version_tuple(low)) < 0:
        return False
    return high is None or cmp(v, _version_tuple(high)) < 0


@dataclass(frozen=True)
class _Candidate:
    module_name: str | Callable[[], ModuleType]
    from_version: str | None
    to_version: str | None
    fn: Callable[..., Any]

    def library(self) -> ModuleType | None:
        """The library the implementation is for, if it is the one in use; else ``None``."""
        name = self.module_name
        if callable(name):
            try:
                return name()
            except ImportError:
                return None
        if name in _GYM_NAMES:  # gym or gymnasium: the backend chosen by set_gym_backend
            backend = gym_backend()
            return backend if backend is not None and backend.__name__ == name else None
        try:
            return importlib.import_module(name)
        except ImportError:
            return None

    def applies(self) -> bool:
        library = self.library()
        if library is None:
            return False
        version = getattr(library, "__version__", None)
        if version is None:
            return self.from_version is None and self.to_version is None
        return _in_range(version, self.from_version, self.to_version)

    def describe(self) -> str:
        name = getattr(self.module_name, "__name__", self.module_name)
        return f"{name} [{self.from_version or '-inf'}, {self.to_version or 'inf'})"


class _Dispatch:
    """The implementations registered under one qualified name, resolved at call time."""

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname
        self.candidates: list[_Candidate] = []
        self._resolved: tuple[int, Callable[..., Any]] | None = None

    def resolve(self) -> Callable[..., Any]:
        generation = backend_generation()
        if self._resolved is not None and self._resolved[0] == generation:
            return self._resolved[1]
        for candidate in reversed(self.candidates):  # the latest registration wins
            if candidate.applies():
                self._resolved = (generation, candidate.fn)
                return candidate.fn
        ranges = ", ".join(c.describe() for c in self.candidates)
        raise ModuleNotFoundError(
            f"implement_for: {self.qualname} has no implementation for the installed library "
            f"versions (implementations for {ranges}; gym backend: "
            f"{getattr(gym_backend(), '__name__', None)}). Install a version in one of these "
            f"ranges, or switch the gym backend with set_gym_backend."
        )


_REGISTRY: dict[str, _Dispatch] = {}


class implement_for:  # TorchRL's name
    """Registers the decorated function as the implementation of its name for versions
    ``from_version <= v < to_version`` of ``module_name``.

    Several definitions of one function (same module and qualified name, e.g. methods of a
    class) decorated for different ranges make one function: each call runs the definition
    whose range holds the installed version (the last registered wins when several do). For
    ``"gym"`` and ``"gymnasium"`` the library is the gym backend chosen by
    :class:`~rl_envs.libs.set_gym_backend`, so switching the backend switches the
    implementation.

    Args:
        module_name: the library's import name, or a callable returning the module.
        from_version: the lowest version (inclusive); ``None``: no lower bound.
        to_version: the first version not covered (exclusive); ``None``: no upper bound.
        class_method: make the function a classmethod (keyword-only).
        compilable: accepted for TorchRL compatibility; the resolution happens at call time
            either way (keyword-only).

    Raises:
        TypeError: ``module_name`` is neither a str nor a callable.
        ModuleNotFoundError: (when called) no implementation fits the installed versions.

    Examples:
        >>> @implement_for("torch", None, "1.0")
        ... def which():
        ...     return "old torch"
        >>> @implement_for("torch", "1.0")
        ... def which():
        ...     return "torch >= 1.0"
        >>> which()
        'torch >= 1.0'
    """

    def __init__(
        self,
        module_name: str | Callable[[], ModuleType],
        from_version: str | None = None,
        to_version: str | None = None,
        *,
        class_method: bool = False,
        compilable: bool = False,
    ) -> None:
        if not (isinstance(module_name, str) or callable(module_name)):
            raise TypeError(
                f"implement_for: expected module_name as a module name or a callable returning "
                f"the module, got {type(module_name).__name__}."
            )
        self.module_name = module_name
        self.from_version = from_version
        self.to_version = to_version
        self.class_method = bool(class_method)
        self.compilable = bool(compilable)

    def __call__(self, fn: Callable[..., Any]) -> Any:
        class_method = self.class_method
        if isinstance(fn, classmethod):
            fn, class_method = fn.__func__, True
        qualname = f"{fn.__module__}.{fn.__qualname__}"
        dispatch = _REGISTRY.get(qualname)
        if dispatch is None:
            dispatch = _REGISTRY[qualname] = _Dispatch(qualname)
        dispatch.candidates.append(
            _Candidate(self.module_name, self.from_version, self.to_version, fn)
        )
        dispatch._resolved = None

        @functools.wraps(fn)
        def dispatcher(*args: Any, **kwargs: Any) -> Any:
            return dispatch.resolve()(*args, **kwargs)

        return classmethod(dispatcher) if class_method else dispatcher


__all__ = ["implement_for"]
