"""The interaction contexts: how policies pick actions inside a block of code, and whether
recurrent modules read whole sequences (:class:`set_recurrent_mode`).

``ExplorationType`` *is* tensordict's ``InteractionType``, and ``set_exploration_type`` sets
tensordict's interaction type, so tensordict's probabilistic modules and this stack's
exploration modules obey the same switch:

- ``RANDOM``: sample from the action distribution; exploration noise is on.
- ``DETERMINISTIC``: the distribution's ``deterministic_sample``; no exploration noise.
- ``MODE`` / ``MEAN``: the distribution's mode / mean; no exploration noise.

Outside any block, :func:`exploration_type` returns ``None``: each probabilistic module uses
its own default, and exploration modules explore.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any, ClassVar, Literal

import torch
from tensordict.nn import InteractionType, interaction_type, set_interaction_type

ExplorationType = InteractionType


def exploration_type() -> InteractionType | None:
    """Returns the exploration type set by the innermost :class:`set_exploration_type`.

    Returns:
        The active :class:`ExplorationType`, or ``None`` outside any block.

    Examples:
        >>> from rl_core.exploration import ExplorationType, exploration_type, set_exploration_type
        >>> print(exploration_type())
        None
        >>> with set_exploration_type(ExplorationType.MODE):
        ...     print(exploration_type())
        mode
    """
    return interaction_type()


def _coerce(type: InteractionType | str | None) -> InteractionType | None:
    if type is None or isinstance(type, InteractionType):
        return type
    if isinstance(type, str):
        try:
            return InteractionType(type.lower())
        except ValueError:
            pass
        choices = ", ".join(t.name for t in InteractionType)
        raise ValueError(
            f"set_exploration_type: expected one of {choices} (or their lower-case values), "
            f"got {type!r}."
        )
    raise TypeError(
        f"set_exploration_type: expected an ExplorationType, a string or None, "
        f"got {type.__class__.__name__}."
    )


class set_exploration_type(set_interaction_type):
    """Sets the exploration type inside a block of code or a decorated function.

    The previous type comes back when the block ends, also on error.

    Args:
        type: an :class:`ExplorationType`, its name in any case (``"random"``), or ``None``
            to let each module use its default. Defaults to ``ExplorationType.DETERMINISTIC``.

    Keyword Args:
        thread_local: if ``True``, the type applies to the calling thread only (collector
            threads set their own). Defaults to ``False``: the whole process.

    Raises:
        ValueError: the string names no exploration type.
        TypeError: ``type`` is neither an ExplorationType, a string nor None.

    Examples:
        >>> from rl_core.exploration import ExplorationType, exploration_type, set_exploration_type
        >>> @set_exploration_type("random")
        ... def act():
        ...     return exploration_type()
        >>> act()
        <InteractionType.RANDOM: 'random'>
        >>> print(exploration_type())
        None
    """

    def __init__(
        self,
        type: InteractionType | str | None = InteractionType.DETERMINISTIC,
        *,
        thread_local: bool = False,
    ) -> None:
        super().__init__(_coerce(type), thread_local=thread_local)


class _BlockSwitch(contextlib.ContextDecorator):
    """A value set inside a block (a context manager or a decorator); a nested block restores
    the outer value. Each subclass owns its ``_var``; inside code ``torch.compile`` traces the
    value lives in the class attribute ``_compiled`` instead (it cannot trace a ContextVar)."""

    _var: ClassVar[ContextVar[Any]]
    _compiled: ClassVar[Any] = None

    def __init__(self, mode: Any) -> None:
        self.mode = mode
        self._tokens: list[Any] = []

    @classmethod
    def current(cls) -> Any:
        """The innermost block's value, or ``None`` outside every block."""
        return cls._compiled if torch.compiler.is_compiling() else cls._var.get()

    def _recreate_cm(self) -> _BlockSwitch:  # a decorator's calls each get their own
        return type(self)(self.mode)

    def __enter__(self) -> _BlockSwitch:
        cls = type(self)
        if torch.compiler.is_compiling():
            self._tokens.append(cls._compiled)
            cls._compiled = self.mode
        else:
            self._tokens.append(cls._var.set(self.mode))
        return self

    def __exit__(self, *exc: object) -> None:
        cls = type(self)
        if torch.compiler.is_compiling():
            cls._compiled = self._tokens.pop()
        else:
            cls._var.reset(self._tokens.pop())


def recurrent_mode() -> bool | None:
    """The mode :class:`set_recurrent_mode` imposes on every recurrent module, or ``None``."""
    return set_recurrent_mode.current()


class set_recurrent_mode(_BlockSwitch):
    """Runs every :class:`LSTMModule`/:class:`GRUModule` in one mode inside a block.

    A context manager or a decorator, as in TorchRL: ``with set_recurrent_mode(True):``
    makes each module read ``[*B, T]`` sequences whatever its own default; ``False`` makes
    it step; ``None`` leaves each module its default. Nested blocks restore the outer mode.

    Args:
        mode: ``True`` or ``"recurrent"``, ``False`` or ``"sequential"``, or ``None``.
            Defaults to ``True``.

    Raises:
        ValueError: ``mode`` is another string or value.
    """

    _var = ContextVar("rl_core_recurrent_mode", default=None)

    def __init__(self, mode: bool | Literal["recurrent", "sequential"] | None = True) -> None:
        named = {"recurrent": True, "sequential": False}
        if isinstance(mode, str) and mode.lower() in named:
            mode = named[mode.lower()]
        if mode not in (True, False, None):
            raise ValueError(
                f"set_recurrent_mode: expected True/'recurrent', False/'sequential' or None, "
                f"got {mode!r}."
            )
        super().__init__(None if mode is None else bool(mode))


__all__ = ["ExplorationType", "exploration_type", "set_exploration_type"]
