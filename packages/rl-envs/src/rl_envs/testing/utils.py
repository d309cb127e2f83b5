"""Helpers for users' tests: device lists, seed lists, retries and temporary globals.

The names and behaviour follow TorchRL's ``torchrl.testing`` helpers, so a test suite that
imports them moves by changing its imports.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch
from tensordict import TensorDictBase, tensorclass

_F = TypeVar("_F", bound=Callable[..., Any])

IS_WIN: bool = sys.platform == "win32"
"""Whether the tests run on Windows."""

mp_ctx: str = "spawn" if IS_WIN else "fork"
"""The multiprocessing start method the tests use on this platform."""

PYTHON_3_9: bool = sys.version_info[:2] <= (3, 9)
"""Whether the interpreter is Python 3.9 or older (always False here: 3.11 is the floor)."""

_log = logging.getLogger(__name__)


def get_available_devices() -> list[torch.device]:
    """Every device tests can run on: the CPU, then each CUDA device.

    Returns:
        ``[cpu, cuda:0, cuda:1, ...]``.

    Examples:
        >>> from rl_envs.testing import get_available_devices
        >>> get_available_devices()[0]
        device(type='cpu')
    """
    return [torch.device("cpu")] + [
        torch.device("cuda", i) for i in range(torch.cuda.device_count())
    ]


def get_default_devices() -> list[torch.device]:
    """The devices a test runs on by default: the CPU without a GPU, ``cuda:0`` with one
    GPU, every device with several.

    Returns:
        A non-empty list of devices.

    Examples:
        >>> import torch
        >>> from rl_envs.testing import get_default_devices
        >>> get_default_devices() == [torch.device("cpu")] or torch.cuda.is_available()
        True
    """
    n_gpus = torch.cuda.device_count()
    if n_gpus == 0:
        return [torch.device("cpu")]
    if n_gpus == 1:
        return [torch.device("cuda", 0)]
    return get_available_devices()


def _next_seed(seed: int) -> int:
    """A new seed drawn from ``seed`` (a generator seeded with it draws the next one)."""
    generator = torch.Generator().manual_seed(seed)
    return int(torch.randint(0, 2**31 - 1, (), generator=generator))


def generate_seeds(seed: int, repeat: int) -> list[int]:
    """``repeat`` seeds: ``seed`` first, each next one drawn from the one before.

    Args:
        seed: the first seed.
        repeat: how many seeds (at least 1).

    Returns:
        A list of ``repeat`` ints; the same arguments give the same list.

    Raises:
        ValueError: when ``repeat`` is below 1.

    Examples:
        >>> from rl_envs.testing import generate_seeds
        >>> seeds = generate_seeds(0, 3)
        >>> len(seeds), seeds[0], seeds == generate_seeds(0, 3)
        (3, 0, True)
    """
    if repeat < 1:
        raise ValueError(f"generate_seeds: expected repeat >= 1, got {repeat}.")
    seeds = [seed]
    while len(seeds) < repeat:
        seeds.append(_next_seed(seeds[-1]))
    return seeds


def retry(
    ExceptionToCheck: type[BaseException] | tuple[type[BaseException], ...],
    tries: int = 3,
    delay: float = 3,
    skip_after_retries: bool = False,
) -> Callable[[_F], _F]:
    """A decorator that calls the function again when it raises ``ExceptionToCheck``.

    Args:
        ExceptionToCheck: the exception type (or tuple of types) that triggers a new try.
        tries: how many calls in all (at least 1).
        delay: seconds to wait between two calls.
        skip_after_retries: when the last try raises too, skip the running pytest test
            instead of raising (needs pytest).

    Returns:
        The decorator.

    Raises:
        ValueError: when ``tries`` is below 1.

    Examples:
        >>> from rl_envs.testing import retry
        >>> calls = []
        >>> @retry(KeyError, tries=3, delay=0)
        ... def flaky():
        ...     calls.append(1)
        ...     if len(calls) < 3:
        ...         raise KeyError("not yet")
        ...     return len(calls)
        >>> flaky()
        3
    """
    if tries < 1:
        raise ValueError(f"retry: expected tries >= 1, got {tries}.")

    def decorate(fn: _F) -> _F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for attempt in range(1, tries + 1):
                try:
                    return fn(*args, **kwargs)
                except ExceptionToCheck as err:
                    if attempt == tries:
                        if skip_after_retries:
                            import pytest

                            pytest.skip(f"{fn.__name__} failed {tries} times in a row: {err}")
                        raise
                    _log.info("%s: %s; trying again in %s s", fn.__name__, err, delay)
                    time.sleep(delay)
            raise AssertionError("unreachable")  # the loop returns or raises

        return wrapper  # type: ignore[return-value]

    return decorate


@contextlib.contextmanager
def set_global_var(module: Any, var_name: str, value: Any) -> Iterator[None]:
    """Sets ``module.var_name`` to ``value`` inside the block and restores it on exit.

    Args:
        module: the module (or any object) holding the variable.
        var_name: the variable's name; it must exist.
        value: the value inside the block.

    Raises:
        AttributeError: when ``module`` has no ``var_name``.

    Examples:
        >>> import types
        >>> from rl_envs.testing import set_global_var
        >>> mod = types.SimpleNamespace(FLAG=False)
        >>> with set_global_var(mod, "FLAG", True):
        ...     inside = mod.FLAG
        >>> inside, mod.FLAG
        (True, False)
    """
    if not hasattr(module, var_name):
        raise AttributeError(
            f"set_global_var: {getattr(module, '__name__', module)!r} has no variable "
            f"{var_name!r} to set."
        )
    old = getattr(module, var_name)
    setattr(module, var_name, value)
    try:
        yield
    finally:
        setattr(module, var_name, old)


class _RecordingHandler(logging.Handler):
    def __init__(self, records: list[logging.LogRecord], record_name: str) -> None:
        super().__init__(logging.NOTSET)
        self._records = records
        self._record_name = record_name

    def emit(self, record: logging.LogRecord) -> None:
        if self._record_name in record.name:
            self._records.append(record)


def capture_log_records(
    records: list[logging.LogRecord], logger_qname: str, record_name: str
) -> logging.Handler:
    """From now on, appends to ``records`` each record of the logger ``logger_qname`` (and
    its children) whose logger name contains ``record_name``.

    Args:
        records: the list the records are appended to.
        logger_qname: the logger's qualified name (``"torch._dynamo"``).
        record_name: a part of the emitting logger's name to keep.

    Returns:
        The handler added to the logger: ``logging.getLogger(logger_qname).removeHandler(h)``
        stops the capture.

    Raises:
        TypeError: when ``records`` is not a list.

    Examples:
        >>> import logging
        >>> from rl_envs.testing import capture_log_records
        >>> records = []
        >>> handler = capture_log_records(records, "my.lib", "lib")
        >>> logging.getLogger("my.lib").warning("hello")
        >>> [r.getMessage() for r in records]
        ['hello']
        >>> logging.getLogger("my.lib").removeHandler(handler)
    """
    if not isinstance(records, list):
        raise TypeError(
            f"capture_log_records: expected records as a list, got {type(records).__name__}."
        )
    handler = _RecordingHandler(records, record_name)
    logging.getLogger(logger_qname).addHandler(handler)
    return handler


def make_tc(td: TensorDictBase) -> type:
    """A tensorclass type with one tensor field per key of ``td`` (its first level).

    Args:
        td: the TensorDict whose keys become fields.

    Returns:
        The new tensorclass type; ``make_tc(td)(**td, batch_size=td.batch_size)`` builds one.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_envs.testing import make_tc
        >>> td = TensorDict(a=torch.zeros(2, 3), b=torch.ones(2), batch_size=[2])
        >>> tc = make_tc(td)(**td, batch_size=[2])
        >>> tc.a.shape, tc.b.shape
        (torch.Size([2, 3]), torch.Size([2]))
    """
    fields = {key: torch.Tensor for key in td.keys()}
    cls = type("MyClass", (), {"__annotations__": fields, "__module__": __name__})
    return tensorclass(cls)


__all__ = [
    "IS_WIN",
    "PYTHON_3_9",
    "capture_log_records",
    "generate_seeds",
    "get_available_devices",
    "get_default_devices",
    "make_tc",
    "mp_ctx",
    "retry",
    "set_global_var",
]
