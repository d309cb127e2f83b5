"""Per-step spec checks: the switch (off by default; specs are checked when an env is built)
and the checks ``EnvBase.step``/``reset`` run while it is on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

import torch
from tensordict import TensorDictBase

from rl_core.keys import NestedKey
from rl_core.specs import Composite, TensorSpec

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


class _EnvSpecs(Protocol):
    """What the per-step checks read of an env: its output specs."""

    @property
    def full_observation_spec(self) -> Composite: ...

    @property
    def full_reward_spec(self) -> Composite: ...

    @property
    def full_done_spec(self) -> Composite: ...


def _describe(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"shape {tuple(value.shape)}, dtype {value.dtype}, device {value.device}"
    return type(value).__name__


def _same_device(actual: torch.device, expected: torch.device) -> bool:
    """``cuda`` and ``cuda:0`` name the same device when one of them has no index."""
    if actual.type != expected.type:
        return False
    return actual.index is None or expected.index is None or actual.index == expected.index


def _unmasked(spec: TensorSpec) -> TensorSpec:
    """The spec without its action mask: a mask describes the current state only, so values
    recorded at earlier steps are checked against the whole space."""
    if getattr(spec, "mask", None) is None:
        return spec
    spec = spec.clone()
    spec.update_mask(None)
    return spec


def _check_leaf(
    where: str, key: NestedKey, spec: TensorSpec, value: object, *, check_dtype: bool
) -> None:
    spec = _unmasked(spec)
    if not isinstance(value, torch.Tensor):
        # Non-tensor payloads: the spec decides (NonTensor specs accept them).
        if not spec.is_in(value):
            raise ValueError(f"{where}: entry {key!r} ({_describe(value)}) is not in {spec!r}.")
        return
    expected_shape = tuple(spec.shape)
    if tuple(value.shape) != expected_shape:
        raise ValueError(
            f"{where}: entry {key!r} has shape {tuple(value.shape)}, expected {expected_shape} "
            f"(spec {type(spec).__name__}, dtype {spec.dtype}, device {spec.device})."
        )
    if check_dtype and value.dtype != spec.dtype:
        raise ValueError(
            f"{where}: entry {key!r} has dtype {value.dtype}, expected {spec.dtype} "
            f"(shape {expected_shape})."
        )
    if spec.device is not None and not _same_device(value.device, spec.device):
        raise ValueError(
            f"{where}: entry {key!r} is on device {value.device}, expected {spec.device}."
        )
    if check_dtype and not spec.is_in(value):
        try:
            spec.assert_is_in(value)
        except ValueError as err:
            raise ValueError(f"{where}: entry {key!r}: {err}") from None
        raise ValueError(f"{where}: entry {key!r} is not in {spec!r}.")


def _check_against(
    where: str,
    spec: Composite,
    td: TensorDictBase,
    *,
    prefix: tuple[str, ...] = (),
    check_dtype: bool = True,
) -> None:
    for key in spec.keys(include_nested=True, leaves_only=True):
        path = (*prefix, *((key,) if isinstance(key, str) else key))
        leaf = spec[key]
        if leaf is None:
            continue
        value = td.get(path, None)
        if value is None:
            raise ValueError(
                f"{where}: the specs name {path}, which the env did not write "
                f"(got keys {sorted(map(str, td.keys(True, True)))})."
            )
        _check_leaf(where, path, leaf, value, check_dtype=check_dtype)


def check_step_output(env: _EnvSpecs, tensordict: TensorDictBase, next_td: TensorDictBase) -> None:
    """Checks one ``_step`` output against the observation, reward and done specs."""
    where = f"{type(env).__name__}.step"
    _check_against(where, env.full_observation_spec, next_td)
    _check_against(where, env.full_reward_spec, next_td)
    _check_against(where, env.full_done_spec, next_td)


def check_reset_output(env: _EnvSpecs, fresh: TensorDictBase) -> None:
    """Checks one ``_reset`` output against the observation and done specs."""
    where = f"{type(env).__name__}.reset"
    _check_against(where, env.full_observation_spec, fresh)
    _check_against(where, env.full_done_spec, fresh)
